/** The egress gate: the per-run proxy socket beside the broker's, the address classifier, the ClientHello reader. */
export { EgressGate, deniedHostDigest, type EgressGateDeps, type EgressResolver, type EgressRunArgs, type EgressRunHandle } from './gate.js';
export { classifyAddress, embeddedIPv4, DIALLABLE, type ClassifyOptions } from './classify.js';
export { readFirstBytes, type FirstBytes } from './client-hello.js';
export { systemClassifier, makeResolver } from './setup.js';
export { egressCredentials, placeholderFor, bindingCovers, NeedleScan, CLIENT_CREDENTIAL_HEADERS, type EgressCredential } from './credentials.js';

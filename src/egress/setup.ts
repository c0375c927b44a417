/**
 * The gate's real resolver and classifier: the operator's DNS servers (egress.resolvers,
 * default the system's), and the classifier over this host's interface addresses (refreshed)
 * and the operator's ranges.
 */
import { Resolver } from 'node:dns/promises';
import os from 'node:os';
import type { EgressAddressClass } from '../protocol/index.js';
import { parseCidr, type Cidr } from '../lease/index.js';
import { classifyAddress } from './classify.js';
import type { EgressResolver } from './gate.js';

/** `servers`: `host:port` or `host` entries (`127.0.0.53:5300`); empty: the system's resolvers. */
export function makeResolver(servers: readonly string[] = []): EgressResolver {
  const r = new Resolver({ timeout: 2000, tries: 1 });
  if (servers.length > 0) r.setServers([...servers]);
  return { resolve4: (n) => r.resolve4(n), resolve6: (n) => r.resolve6(n) };
}

function hostAddresses(): string[] {
  return Object.values(os.networkInterfaces()).flatMap((l) => (l ?? []).map((i) => i.address.replace(/%.*$/, '')));
}

const cidrs = (xs: readonly string[]): Cidr[] => xs.map((x) => parseCidr(x)).filter((c): c is Cidr => c !== null);

export function systemClassifier(o: { denyCidrs?: readonly string[]; allowPrivateCidrs?: readonly string[]; testPublicCidrs?: readonly string[] } = {}): (addr: string) => EgressAddressClass {
  let cached: { at: number; list: string[] } = { at: 0, list: [] };
  const opts = { denyCidrs: cidrs(o.denyCidrs ?? []), allowPrivateCidrs: cidrs(o.allowPrivateCidrs ?? []), testPublicCidrs: cidrs(o.testPublicCidrs ?? []) };
  return (addr) => {
    if (Date.now() - cached.at > 10_000) cached = { at: Date.now(), list: hostAddresses() };
    return classifyAddress(addr, { ...opts, hostAddresses: cached.list });
  };
}

/**
 * The child part's surface for the host: the pod relay's wire (relay-frames.ts), the one piece
 * of child/ both ends run — in the pod as /opt/brig/child/relay-frames.js, on the host through
 * here (jail/k8s/host-relay.ts). The rest of child/ runs only in the jail, loaded there by path.
 */
export { FRAME, HEADER_BYTES, MAX_DATA, WINDOW, OUTPUT_CAP, RelayFrameError, RelayMux, FrameParser, encodeFrame } from './relay-frames.js';
export type { Frame, FrameKind, RelayFault, RelaySocket, RelayInput, RelayOutput, RelayMuxOptions } from './relay-frames.js';

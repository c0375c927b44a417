/** Where the supervisor puts things in a jail, as the in-jail runtimes see them. */
export const PATHS = {
  socket: '/run/brig/broker.sock',
  packet: '/workspace/.brig/packet.json',
  token: '/workspace/.brig/token',
  script: '/workspace/.brig/script.mjs',
  /** A pre-started agent runtime's run environment (child/agent/prestart.ts), removed once read. */
  env: '/workspace/.brig/env.json',
} as const;

/** The agent runtime's own files, inside the workspace's `.brig/` (never collected as output). */
export const AGENT_PATHS = {
  spill: '/workspace/.brig/spill',
  log: '/workspace/.brig/agent-log.jsonl',
} as const;

/** Egress (a lease with egress rules only): the gate's socket beside the broker's, and the relay's address on the jail's own loopback (protocol's EGRESS_JAIL). */
export const EGRESS_PATHS = {
  socket: '/run/brig/egress.sock',
  host: '127.0.0.1',
  port: 3128,
  /** The run's CA (present when the gate inspects TLS) with the host's roots. */
  caBundle: '/run/brig/egress-ca.pem',
} as const;

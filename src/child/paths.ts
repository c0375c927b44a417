/** Where the supervisor puts things in a jail, as the in-jail runtimes see them. */
export const PATHS = {
  socket: '/run/brig/broker.sock',
  packet: '/workspace/.brig/packet.json',
  token: '/workspace/.brig/token',
  script: '/workspace/.brig/script.mjs',
} as const;

/** The agent runtime's own files, inside the workspace's `.brig/` (never collected as output). */
export const AGENT_PATHS = {
  spill: '/workspace/.brig/spill',
  log: '/workspace/.brig/agent-log.jsonl',
} as const;

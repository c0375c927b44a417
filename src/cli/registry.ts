import type { Command } from './command.js';

/**
 * Every command, loaded lazily so `brig --help` does not load dockerode or DuckDB.
 * Add a line per command; the key is what the user types (`lease list`).
 */
export const COMMANDS: Record<string, () => Promise<Command>> = {
  'policy check': async () => (await import('./commands/policy-check.js')).default,
  'lease list': async () => (await import('./commands/lease-list.js')).default,
  'lease show': async () => (await import('./commands/lease-show.js')).default,
  'lease revoke': async () => (await import('./commands/lease-revoke.js')).default,
  'audit verify': async () => (await import('./commands/audit-verify.js')).default,
  'audit query': async () => (await import('./commands/audit-query.js')).default,
  doctor: async () => (await import('./commands/doctor.js')).default,
  spawn: async () => (await import('./commands/spawn.js')).default,
  'image build': async () => (await import('./commands/image-build.js')).default,
  'ref list': async () => (await import('./commands/ref-list.js')).default,
  'ref read': async () => (await import('./commands/ref-read.js')).default,
  'ref grep': async () => (await import('./commands/ref-grep.js')).default,
  'ref jq': async () => (await import('./commands/ref-jq.js')).default,
  'ref sql': async () => (await import('./commands/ref-sql.js')).default,
  'ref jsonpath': async () => (await import('./commands/ref-jsonpath.js')).default,
  result: async () => (await import('./commands/result.js')).default,
  explain: async () => (await import('./commands/result-explain.js')).default,
  list: async () => (await import('./commands/list.js')).default,
  wait: async () => (await import('./commands/wait.js')).default,
  kill: async () => (await import('./commands/kill.js')).default,
  steer: async () => (await import('./commands/steer.js')).default,
  resume: async () => (await import('./commands/resume.js')).default,
  events: async () => (await import('./commands/events.js')).default,
  serve: async () => (await import('./commands/serve.js')).default,
};

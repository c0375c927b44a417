import { daemonBrig, openBrig as open, type Brig } from '../light.js';
import { mark } from '../util/timing.js';
import type { CliIO } from './command.js';

/**
 * The brig a CLI command talks to (openBrig): the daemon on $BRIG_HOME/brig.sock when one
 * answers (runs, refs and the operator's view over its socket, nothing heavy loaded); else,
 * for a command that runs children (`spawn`, `resume`), a supervisor in this process for this
 * one command that holds only the runs it spawns itself (`local`, no reconcile); else the
 * home's files, read-only (`read`). The caller closes it. When the entry already probed the
 * daemon (`io.daemon`, brig.cjs's thin path) it is that daemon, with no second probe: one
 * exchange with the daemon fewer on every thin command (docs/performance.md).
 */
export function openBrig(io: CliIO, o: { needsJail?: boolean; driver?: string } = {}): Promise<Brig> {
  // A driver named by the command (`brig doctor --driver`): this process over the home's files,
  // whatever a daemon runs.
  if (o.driver) return open({ env: { ...io.env, BRIG_DRIVER: o.driver }, mode: 'read', caller: 'cli' });
  if (io.daemon) {
    mark('open: daemon answers');
    return Promise.resolve(daemonBrig(io.daemon));
  }
  return open({ env: io.env, mode: 'auto', fallback: o.needsJail === true ? 'local' : 'read', reconcile: false, caller: 'cli' });
}

/** Runs `fn` with this home's brig (openBrig) and closes it after (its DuckDB helper included). */
export async function withBrig<T>(io: CliIO, fn: (brig: Brig) => Promise<T>, o: { driver?: string } = {}): Promise<T> {
  const brig = await openBrig(io, o);
  try {
    return await fn(brig);
  } finally {
    await brig.close();
  }
}

import { createBrig, type Brig } from '../index.js';
import type { CliIO } from './command.js';

/**
 * The brig a CLI command talks to, from the library (createBrig): the daemon on
 * $BRIG_HOME/brig.sock when one answers; else, for a command that runs children (`spawn`,
 * `resume`), an in-process supervisor for this one command that holds only the runs it
 * spawns itself (`local`, no reconcile); else the run records on disk, read-only (`read`).
 * The caller closes it.
 */
export function openBrig(io: CliIO, o: { needsJail?: boolean } = {}): Promise<Brig> {
  return o.needsJail === true
    ? createBrig({ env: io.env, mode: 'auto', fallback: 'local', reconcile: false })
    : createBrig({ env: io.env, mode: 'auto', fallback: 'read' });
}

import { ApiClient, daemonBrig, homeFrom, readBrig, socketPathFor, type Brig } from '../light.js';
import type { CliIO } from './command.js';

/**
 * The brig a CLI command talks to: the daemon on $BRIG_HOME/brig.sock when one answers (runs
 * and refs over its socket, nothing heavy loaded); else, for a command that runs children
 * (`spawn`, `resume`), an in-process supervisor for this one command that holds only the runs
 * it spawns itself (`local`, no reconcile); else the run records on disk, read-only (`read`).
 * Only the in-process supervisor loads the library entry (and the read-only view, to slice).
 * The caller closes it.
 */
export async function openBrig(io: CliIO, o: { needsJail?: boolean } = {}): Promise<Brig> {
  const api = new ApiClient(socketPathFor(homeFrom(io.env)));
  if (await api.probe()) return daemonBrig(api);
  await api.close();
  if (o.needsJail !== true) return readBrig(io.env);
  const { createBrig } = await import('../index.js');
  return createBrig({ env: io.env, mode: 'local', reconcile: false });
}

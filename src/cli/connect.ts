import { ApiClient } from '../api/index.js';
import { brigPaths, loadConfig } from '../config/index.js';
import { composeSupervisor } from '../daemon/index.js';
import { ReadOnlyRuns, type Supervisor } from '../runs/index.js';
import type { CliIO } from './command.js';

/**
 * The supervisor a CLI command talks to: the daemon on $BRIG_HOME/brig.sock when one
 * answers, else an in-process supervisor for this one command (it holds only the runs it
 * spawns itself; other runs are read from disk).
 */
export interface Connected {
  sup: Supervisor;
  mode: 'daemon' | 'local';
  close(): Promise<void>;
}

export async function connectSupervisor(io: CliIO, o: { needsJail?: boolean } = {}): Promise<Connected> {
  const cfg = loadConfig(io.env);
  const socket = brigPaths(cfg.home).socket;
  if (await ApiClient.probe(socket)) {
    const c = new ApiClient(socket);
    return { sup: c, mode: 'daemon', close: () => c.close() };
  }
  // Reading and waiting need no supervisor: the records on disk are enough.
  if (o.needsJail !== true) return { sup: new ReadOnlyRuns(brigPaths(cfg.home).runs), mode: 'local', close: async () => {} };
  const composed = await composeSupervisor(cfg, { reconcile: false });
  await composed.supervisor.start();
  return { sup: composed.supervisor, mode: 'local', close: () => composed.close() };
}

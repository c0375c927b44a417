import { ApiClient, listenApi } from '../api/index.js';
import { BrigError } from '../util/errors.js';
import { brigPaths, type BrigConfig } from '../config/index.js';
import type { ReconcileReport } from '../runs/index.js';
import { composeSupervisor, type ComposeOptions, type Composed } from './compose.js';

/**
 * `brig serve`: the composed supervisor, reconciled, behind the HTTP API on
 * $BRIG_HOME/brig.sock (0600). close() stops accepting, stops the supervisor's timers and
 * broker sockets; running children keep running and are reattached by the next start.
 */
export interface Daemon {
  socketPath: string;
  composed: Composed;
  report: ReconcileReport;
  close(): Promise<void>;
}

export async function startDaemon(cfg: BrigConfig, o: ComposeOptions = {}): Promise<Daemon> {
  // Two supervisors on one home would each reconcile (and sweep) the other's runs.
  if (await ApiClient.probe(brigPaths(cfg.home).socket)) {
    throw new BrigError('daemon_running', `a daemon already answers on ${brigPaths(cfg.home).socket}`);
  }
  const composed = await composeSupervisor(cfg, { ...o, reconcile: true });
  const report = await composed.supervisor.start();
  const socketPath = brigPaths(cfg.home).socket;
  const api = await listenApi(composed.supervisor, socketPath, composed.refs);
  return {
    socketPath,
    composed,
    report,
    async close() {
      await api.close();
      await composed.close();
    },
  };
}

import { ApiClient } from '../client/index.js';
import { brigPaths, parseHooksConfig, type BrigConfig } from '../config/index.js';
import { silentLog } from '../util/log.js';
import { operatorHooks } from './operator-hooks.js';
import type { ReconcileReport, ShutdownOptions, ShutdownReport } from '../runs/index.js';
import { BrigError } from '../util/errors.js';
import { compose, type ComposeOptions, type Composed } from './compose.js';
import { meterRequests } from './metrics-feed.js';

/**
 * `brig serve`: the composed supervisor behind the HTTP API on $BRIG_HOME/brig.sock (0600).
 * It serves as soon as the runs on disk are loaded and every live child's broker is open
 * again; the slow rest of the start (a dead supervisor's releases, ghost sweeps, the engine
 * sweep, the requeue of runs caught starting, then the warm pool's fill) goes on while it
 * serves (`reconciled`). shutdown() (SIGTERM, SIGINT) drains and leaves nothing behind but the
 * kept queue; close() stops accepting, stops the supervisor's timers and broker sockets, and
 * leaves running children running for the next start to reattach (a crash does the same).
 */
export interface Daemon {
  socketPath: string;
  composed: Composed;
  /** What the start reconciled, once all of it is done (the daemon serves before). */
  reconciled: Promise<ReconcileReport>;
  /** The web console's URL with its access token (only with `ui`). */
  consoleUrl?: string;
  /** Leaves running children running (the next start reattaches them): for restarts and tests. */
  close(): Promise<void>;
  /** Drains (supervisor.shutdown), then closes the API, broker, helpers and the ledger segment. */
  shutdown(o?: ShutdownOptions): Promise<ShutdownReport>;
}

export interface DaemonOptions extends ComposeOptions {
  /** Serve the web console on this loopback address (`''`: 127.0.0.1 and a free port). */
  ui?: string;
}

export async function startDaemon(cfg: BrigConfig, o: DaemonOptions = {}): Promise<Daemon> {
  // The faces load here, not with daemon/: a one-shot `brig spawn` (openLocal) serves neither.
  const [{ listenApi }, { consoleAddress, listenConsole }] = await Promise.all([import('../api/index.js'), import('../console/index.js')]);
  // A bad console address is refused before anything starts.
  if (o.ui !== undefined) consoleAddress(o.ui);
  // Two supervisors on one home would each reconcile (and sweep) the other's runs.
  if (await ApiClient.probe(brigPaths(cfg.home).socket)) {
    throw new BrigError('daemon_running', `a daemon already answers on ${brigPaths(cfg.home).socket}`);
  }
  // The operator's hooks (config.yaml `hooks`): a bad section stops the daemon here, with its line.
  const section = cfg.models.fileText === null ? { ok: true as const, value: {} } : parseHooksConfig(cfg.models.fileText, cfg.models.file);
  if (!section.ok) throw section.error;
  let peek: ((runId: string) => ReturnType<Composed['supervisor']['peek']>) | undefined;
  const fromConfig = operatorHooks(section.value, { log: o.log ?? silentLog(), record: (id) => peek?.(id) });
  const composed = await compose(cfg, { ...o, reconcile: true, ...(o.hooks ?? fromConfig ? { hooks: o.hooks ?? fromConfig } : {}) });
  peek = (id) => composed.supervisor.peek(id);
  const { reconciled: tidied } = await composed.supervisor.begin();
  // After the sweep: what a dead supervisor's pool left goes before this one fills.
  const reconciled = tidied.then(async (r) => {
    // Once the runs are reconciled: the graphs a dead supervisor left running resume or end (by their on_restart).
    await composed.graphs.recover().catch(() => {});
    await composed.warm?.start().catch(() => {});
    return r;
  });
  const socketPath = brigPaths(cfg.home).socket;
  // The API serves the composed Brig: the same supervisor, refs and operator (its own lease store).
  const api = await listenApi(composed.brig, socketPath, { metrics: composed.metrics, log: composed.log, onRequest: meterRequests(composed.metrics) });
  // The console serves the same API handler (one event ring, one contract) to a browser.
  const ui = o.ui !== undefined ? await listenConsole(api.handler, o.ui).catch(async (e: unknown) => {
    await api.close();
    await composed.close();
    throw e;
  }) : undefined;
  composed.log.info({ socket: socketPath, console: ui ? new URL(ui.url).host : null }, 'daemon serving');
  void reconciled.then((report) => {
    composed.log.info({ reattached: report.reattached.length, requeued: report.requeued?.length ?? 0, ghostSwept: report.ghostSwept.length, swept: report.swept }, 'daemon reconciled');
    // Records that are not what brig wrote are left alone (ledgered run.corrupt): said, not skipped silently.
    if (report.corrupt?.length) composed.log.warn?.({ corrupt: report.corrupt.slice(0, 20), count: report.corrupt.length }, 'run records not read (state_corrupt): left as they are, see the ledger (run.corrupt)');
  });
  return {
    socketPath,
    composed,
    reconciled,
    ...(ui ? { consoleUrl: ui.url } : {}),
    async close() {
      await ui?.close();
      await api.close();
      await composed.close();
    },
    async shutdown(so: ShutdownOptions = {}) {
      // The API stays up while draining: waits and synchronous spawns get their answers,
      // new spawns are refused `shutting_down`.
      const rep = await composed.supervisor.shutdown(so);
      await ui?.close();
      await api.close();
      await composed.close();
      return rep;
    },
  };
}

import { ApiClient } from '../api/index.js';
import { brigPaths, loadConfig, type BrigConfig } from '../config/index.js';
import type { RefService, Supervisor, SupervisorSettings } from '../runs/index.js';
import { composeSupervisor } from './compose.js';
import { openRefService } from './refs.js';

/**
 * The library entry: `createBrig(options)` gives the Supervisor surface (spawn, wait, list,
 * get, kill, steer, resume, events as an async iterator). It talks to the daemon when one
 * answers on $BRIG_HOME/brig.sock, else it runs the supervisor in this process (reconciling
 * persisted runs, like a daemon without a socket).
 */
export interface BrigOptions {
  /** $BRIG_HOME; default from the environment (config/ reads it). */
  home?: string;
  /** `auto` (default): the daemon if it answers, else in-process. */
  mode?: 'auto' | 'daemon' | 'local';
  /** In-process only: supervisor tunables. */
  settings?: Partial<SupervisorSettings>;
}

export type Brig = Omit<Supervisor, 'start'> & {
  readonly mode: 'daemon' | 'local';
  /** Drill-in: a run's ResultRefs, the five slice verbs, and its envelope (`result`). */
  readonly refs: RefService;
};

export async function createBrig(o: BrigOptions = {}): Promise<Brig> {
  const base = loadConfig();
  const cfg: BrigConfig = o.home ? { ...base, home: o.home } : base;
  const socket = brigPaths(cfg.home).socket;
  const mode = o.mode ?? 'auto';
  if (mode !== 'local' && (await ApiClient.probe(socket))) {
    // Results are on this host's disk under the same home: slicing runs here, with its own pool.
    const api = new ApiClient(socket);
    const refs = openRefService(cfg, (id) => api.get(id));
    return wrap(api, 'daemon', refs.refs, () => refs.close());
  }
  if (mode === 'daemon') {
    const { BrigError } = await import('../util/errors.js');
    throw new BrigError('daemon_unavailable', `no daemon answers on ${socket}`);
  }
  const composed = await composeSupervisor(cfg, { reconcile: true, ...(o.settings ? { settings: o.settings } : {}) });
  await composed.supervisor.start();
  return wrap(composed.supervisor, 'local', composed.refs, () => composed.close());
}

function wrap(s: Supervisor, mode: 'daemon' | 'local', refs: RefService, close: () => Promise<void>): Brig {
  return {
    mode,
    refs,
    spawn: (req, ctx) => s.spawn(req, ctx),
    wait: (id, opts) => s.wait(id, opts),
    list: (f) => s.list(f),
    get: (id) => s.get(id),
    kill: (id, opts) => s.kill(id, opts),
    steer: (id, m) => s.steer(id, m),
    resume: (id) => s.resume(id),
    events: (opts) => s.events(opts),
    close: async () => {
      await s.close();
      await close();
    },
  };
}

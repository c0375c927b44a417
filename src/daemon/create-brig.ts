import { ApiClient, daemonBrig } from '../api/index.js';
import { brigPaths, loadConfig, type BrigConfig } from '../config/index.js';
import { brigOf, ReadOnlyRuns, type Brig, type SupervisorHooks, type SupervisorSettings } from '../runs/index.js';
import { BrigError } from '../util/errors.js';
import { composeSupervisor } from './compose.js';
import { openRefService } from './refs.js';

/**
 * The library entry: `createBrig(options)` gives the Supervisor surface (spawn, wait, list,
 * get, kill, steer, resume, events as an async iterator) and the drill-in surface (`refs`).
 * It talks to the daemon when one answers on $BRIG_HOME/brig.sock; else it runs the
 * supervisor in this process (reconciling persisted runs, like a daemon without a socket) —
 * or, with `reconcile: false`, one that holds only the runs it spawns (what a CLI command
 * without a daemon needs) — or, in `read` mode, only reads the records on disk.
 */
export interface BrigOptions {
  /** $BRIG_HOME; default from the environment (config/ reads it). */
  home?: string;
  /** The environment to read the configuration from (default: this process's). */
  env?: NodeJS.ProcessEnv;
  /**
   * `auto` (default): the daemon if it answers, else `fallback`. `daemon`: only the daemon.
   * `local`: an in-process supervisor. `read`: the run records on disk, read-only.
   */
  mode?: 'auto' | 'daemon' | 'local' | 'read';
  /** What `auto` falls back to when no daemon answers (default `local`). */
  fallback?: 'local' | 'read';
  /** Local only: reconcile the home's persisted runs (default true; false holds only its own runs). */
  reconcile?: boolean;
  /** Local only: supervisor tunables. */
  settings?: Partial<SupervisorSettings>;
  /** Local only: lifecycle hooks (a failing hook is ledgered and never breaks a run). */
  hooks?: SupervisorHooks;
}

export type { Brig } from '../runs/index.js';

export async function createBrig(o: BrigOptions = {}): Promise<Brig> {
  const base = loadConfig(o.env);
  const cfg: BrigConfig = o.home ? { ...base, home: o.home } : base;
  const paths = brigPaths(cfg.home);
  const mode = o.mode ?? 'auto';
  // Runs and refs both through the daemon: its helper pool slices, its model condenses.
  if ((mode === 'auto' || mode === 'daemon') && (await ApiClient.probe(paths.socket))) return daemonBrig(paths.socket);
  if (mode === 'daemon') throw new BrigError('daemon_unavailable', `no daemon answers on ${paths.socket}`);
  if (mode === 'read' || (mode === 'auto' && o.fallback === 'read')) {
    const runs = new ReadOnlyRuns(paths.runs);
    const refs = openRefService(cfg, (id) => runs.get(id));
    return brigOf(runs, 'read', refs.refs, () => refs.close());
  }
  const reconcile = o.reconcile !== false;
  const composed = await composeSupervisor(cfg, { reconcile, ...(o.settings ? { settings: o.settings } : {}), ...(o.hooks ? { hooks: o.hooks } : {}) });
  await composed.supervisor.start();
  return brigOf(composed.supervisor, 'local', composed.refs, () => composed.close());
}

/**
 * A Brig for this process over a home's own parts — what openBrig (src/open-brig.ts) loads
 * when no daemon answers: `local` composes a supervisor here (the daemon's parts without its
 * socket; reconciling the home's runs, or with `reconcile: false` holding only the runs it
 * spawns), `read` gives the drill-in and the operator over the home's files beside the
 * records on disk. openOperator is the operator alone, for what only this machine does
 * (policy check, image build).
 */
import { ReadOnlyRuns } from '../client/index.js';
import { brigPaths, loadConfig, type BrigConfig } from '../config/index.js';
import type { Brig, OperatorSurface, RefSurface } from '../protocol/index.js';
import type { SupervisorHooks, SupervisorSettings } from '../runs/index.js';
import { compose } from './compose.js';
import { Operator } from './operator.js';
import { openRefService } from './refs.js';
import { mark } from '../util/timing.js';

export interface HomeOptions {
  /** $BRIG_HOME; default from the environment (config/ reads it). */
  home?: string;
  /** The environment to read the configuration from (default: this process's). */
  env?: NodeJS.ProcessEnv;
}

export interface LocalOptions extends HomeOptions {
  /** Reconcile the home's persisted runs (default true; false holds only its own runs). */
  reconcile?: boolean;
  /** Supervisor tunables. */
  settings?: Partial<SupervisorSettings>;
  /** Lifecycle hooks (a failing hook is ledgered and never breaks a run). */
  hooks?: SupervisorHooks;
}

/** The configuration once: the environment's, with the home the caller named. */
export function configOf(o: HomeOptions): BrigConfig {
  const base = loadConfig(o.env);
  return o.home ? { ...base, home: o.home } : base;
}

/** A supervisor in this process, composed and started; closing the Brig closes it all. */
export async function openLocal(o: LocalOptions = {}): Promise<Brig> {
  const cfg = configOf(o);
  mark('local: config read');
  const composed = await compose(cfg, {
    reconcile: o.reconcile !== false,
    ...(o.settings ? { settings: o.settings } : {}),
    ...(o.hooks ? { hooks: o.hooks } : {}),
  });
  mark('local: composed');
  await composed.supervisor.start();
  // The owner of the home's runs also takes up the graphs a dead supervisor left running (resumes or ends them, by on_restart).
  if (o.reconcile !== false) await composed.graphs.recover();
  return composed.brig;
}

/** The drill-in and the operator over a home's files, for the read-only view. */
export function openReadParts(o: HomeOptions = {}): { refs: RefSurface; operator: OperatorSurface; close(): Promise<void> } {
  const cfg = configOf(o);
  const runs = new ReadOnlyRuns(brigPaths(cfg.home).runs);
  const r = openRefService(cfg, (id) => runs.get(id));
  return { refs: r.refs, operator: new Operator({ cfg, runs, refs: r.refs }), close: r.close };
}

/** The operator's services over a home's files (no daemon, no supervisor). */
export function openOperator(o: HomeOptions = {}): Operator {
  return openReadParts(o).operator as Operator;
}

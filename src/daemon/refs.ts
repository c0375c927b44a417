import { brigPaths, type BrigConfig } from '../config/index.js';
import { condensationModel } from '../models/index.js';
import { FsResultStore } from '../results/index.js';
import type { RunRecord } from '../protocol/index.js';
import { RefService } from '../refs/index.js';
import { DuckdbHelperPool, Slicer } from '../slice/index.js';

/**
 * Builds the drill-in surface for one brig home: the result store, a slicer over a small warm
 * DuckDB helper pool, and the model for Level 2 condensation when one is configured. The
 * caller says how to read run records (the supervisor, the daemon's API, or the disk). A
 * composed supervisor passes its own store and pool, so one process keeps one pool; close()
 * closes only a pool this function made.
 */
export function openRefService(
  cfg: BrigConfig,
  getRun: (runId: string) => Promise<RunRecord | undefined>,
  o: { store?: FsResultStore; pool?: DuckdbHelperPool } = {},
): { refs: RefService; close(): Promise<void> } {
  const store = o.store ?? new FsResultStore({ dir: brigPaths(cfg.home).results });
  const pool = o.pool ?? new DuckdbHelperPool({ size: 1 });
  const l2 = condensationModel(cfg);
  const model = l2.ok ? l2.value : undefined;
  const refs = new RefService({
    store,
    slicer: new Slicer(store, { pool }),
    getRun,
    // Level 2 condensation through the same catalog as the agents (either wire, config.yaml or env).
    ...(model ? { model } : {}),
  });
  return { refs, close: async () => (o.pool ? undefined : pool.close()) };
}

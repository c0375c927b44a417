import { brigPaths, type BrigConfig } from '../config/index.js';
import type { Ledger } from '../ledger/index.js';
import { condensationModel } from '../models/index.js';
import { FsResultStore } from '../results/index.js';
import type { RunRecord } from '../protocol/index.js';
import { ChildRefs, RefService } from '../refs/index.js';
import { DuckdbHelperPool, SLICE_SCHEDULE, SliceScheduler, Slicer, ToolRunner, type SliceLimits, type SliceObserver } from '../slice/index.js';

/**
 * Builds the drill-in surface for one brig home: the result store, a slicer, and the model for
 * Level 2 condensation when one is configured. The caller says how to read run records (the
 * supervisor, the daemon's API, or the disk). A composed supervisor passes its own store and
 * scheduler (openDrillIn), so one process slices through one scheduler; otherwise this makes a
 * small helper pool and a grep/jq runner of its own, which close() closes.
 */
export function openRefService(
  cfg: BrigConfig,
  getRun: (runId: string) => Promise<RunRecord | undefined>,
  o: { store?: FsResultStore; scheduler?: SliceScheduler; onSlice?: SliceObserver } = {},
): { refs: RefService; close(): Promise<void> } {
  const store = o.store ?? new FsResultStore({ dir: brigPaths(cfg.home).results });
  // Without a supervisor's scheduler: one of our own, the operator's lane only in use.
  const pool = o.scheduler ? undefined : new DuckdbHelperPool({ size: 1 });
  const tools = o.scheduler ? undefined : new ToolRunner();
  const scheduler = o.scheduler ?? new SliceScheduler({ operator: { pool: pool! }, child: { pool: pool! }, tools: tools! });
  const l2 = condensationModel(cfg);
  const model = l2.ok ? l2.value : undefined;
  const refs = new RefService({
    store,
    slicer: new Slicer(store, { scheduler, ...(o.onSlice ? { onSlice: o.onSlice } : {}) }),
    getRun,
    // Level 2 condensation through the same catalog as the agents (either wire, config.yaml or env).
    ...(model ? { model } : {}),
  });
  return { refs, close: async () => void (await Promise.all([pool?.close(), tools?.close()])) };
}

/** The daemon's drill-in: the operator's (RefService) and the children's (ChildRefs, through their brokers). */
export interface DrillIn {
  refs: RefService;
  childRefs: ChildRefs;
  /** The DuckDB helper pools behind them, the operator's and the children's (for metrics). */
  pools: DuckdbHelperPool[];
  scheduler: SliceScheduler;
  close(): Promise<void>;
}

/**
 * The slicing of one supervisor: one SliceScheduler over two lanes, each with a DuckDB helper
 * pool of its own — the operator's drill-in (RefService) and the children's (ChildRefs) — so
 * a child's flood is capped per run and per tree and never takes the operator's capacity
 * (slice-scheduler.ts says why reserved capacity).
 */
export function openDrillIn(
  cfg: BrigConfig,
  o: { store: FsResultStore; ledger: Ledger; getRun: (runId: string) => Promise<RunRecord | undefined>; childLimits?: Partial<SliceLimits>; onSlice?: SliceObserver },
): DrillIn {
  const operatorPool = new DuckdbHelperPool({ size: SLICE_SCHEDULE.operator.helpers });
  const childPool = new DuckdbHelperPool({ size: SLICE_SCHEDULE.child.helpers, nice: SLICE_SCHEDULE.child.nice });
  // grep/jq of both lanes run isolated as the helpers are (tool-runner.ts).
  const tools = new ToolRunner();
  const scheduler = new SliceScheduler({ operator: { pool: operatorPool }, child: { pool: childPool }, tools });
  const onSlice = o.onSlice ? { onSlice: o.onSlice } : {};
  const childRefs = new ChildRefs({ store: o.store, scheduler, ledger: o.ledger, getRun: o.getRun, ...(o.childLimits ? { limits: o.childLimits } : {}), ...onSlice });
  const { refs } = openRefService(cfg, o.getRun, { store: o.store, scheduler, ...onSlice });
  return {
    refs,
    childRefs,
    pools: [operatorPool, childPool],
    scheduler,
    close: async () => {
      await Promise.all([operatorPool.close(), childPool.close(), tools.close()]);
    },
  };
}

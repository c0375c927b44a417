/**
 * The part of the library a thin face needs, with nothing heavy behind it (no dockerode,
 * DuckDB, zod or undici): the run vocabulary, elapsed time, a Brig on the daemon and one on
 * the records on disk. The CLI loads this, and src/index.ts only to run children itself (no
 * daemon) or to slice without a daemon.
 */
export { RUN_STATUSES } from './runs/vocabulary.js';
export { PREVIEW_BYTES } from './results/preview-bytes.js';
export { CAPABILITIES } from './lease/capabilities.js';
export { elapsedMs } from './runs/state-machine.js';
export { ApiClient } from './api/client.js';
export { daemonBrig } from './api/daemon-brig.js';
export { homeFrom, socketPathFor } from './config/paths.js';
export { readBrig } from './daemon/read-brig.js';
export type { Brig, Capability, RunRecord, RunStatus, ResultRef, SliceOutput, SpawnRequestInput } from './index.js';

/**
 * The part of the library a thin face needs, with nothing heavy behind it (no dockerode,
 * DuckDB, zod or undici): the vocabulary, the API client, and openBrig, which loads the
 * in-process parts only when it picks them. The CLI loads this, and src/index.ts only to run
 * children itself (no daemon) or for what only the home's files answer.
 */
export { RUN_STATUSES, CAPABILITIES, LIMIT_KEYS, PREVIEW_BYTES, REF_ID_RE, byCodeUnits, elapsedMs, replaySummary, resumeHint } from './protocol/index.js';
// From util/, not repo/index.js: that would load the repository code (zlib, crypto, the spawner) into every thin command.
export { parseRepoSpec } from './util/repo-spec.js';
export type { Brig, Capability, FleetReport, LeaseView, OperatorSurface, RunRecord, RunStatus, ResultRef, SliceOutput, SpawnRequestInput } from './protocol/index.js';
export { ApiClient, daemonBrig } from './client/index.js';
export { homeFrom, socketPathFor } from './config/paths.js';
export { openBrig, type OpenBrigOptions } from './open-brig.js';

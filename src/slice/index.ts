/**
 * slice/: read, grep, jq, sql, jsonpath over one ResultRef, and the locked DuckDB helper.
 */
export { lockedQuery, QUERY_DEFAULTS } from './locked-query.js';
export type { LockedQueryOptions, LockedQueryResult } from './locked-query.js';
export { DuckdbHelperPool, HELPER_CAPS } from './duckdb-pool.js';
export type { HelperPoolOptions } from './duckdb-pool.js';
export { guardSerializedSelect, READER_ALLOWLIST } from './sql-guard.js';
export type { GuardPolicy, GuardVerdict } from './sql-guard.js';
export { Slicer, SLICE_DEFAULTS, jqRefusal } from './slicer.js';
export type { RefReader, SliceLimits, SliceObserver, SliceOutput, SliceVerb, SlicerOptions } from './slicer.js';
export { SliceScheduler, SLICE_SCHEDULE, OPERATOR_CALLER } from './slice-scheduler.js';
export type { SliceCaller, SliceLane, SliceResource, SliceSchedulerOptions, SliceLaneOptions, SliceSlot } from './slice-scheduler.js';
export type { GrepOptions, ReadRange } from '../protocol/index.js';
export { parseJsonPath } from './jsonpath.js';
export type { CompiledJsonPath, JsonPathSegment } from './jsonpath.js';
export { reportHelper, reportTools } from './helper-report.js';
export { ToolRunner, type ToolRunnerOptions, type ToolProbe } from './tool-runner.js';

/**
 * The drill-in surface as a type, apart from its implementation (ref-service.ts) so the
 * Supervisor's types can name it without importing the service.
 */
import type { CondenseStrategy, ResultRef, RunEnvelope, RunManifest, Savings } from '../results/index.js';
import type { rollUpSavings } from '../results/savings.js';
import type { GrepOptions, ReadRange, SliceOutput } from '../slice/index.js';
import type { Result } from '../util/errors.js';

export interface RunResult extends RunEnvelope {
  runId: string;
  refs: ResultRef[];
}

export interface ResultOptions {
  /**
   * Cast afresh with this condensation strategy and do not keep it: a look (`brig result
   * --strategy`), never the envelope the coordinator got. Absent: that envelope (kept).
   */
  strategy?: CondenseStrategy;
}

/**
 * The drill-in surface a face holds: a RefService in this process, or the daemon's over its
 * API (api/refs-client.ts). Both answer the same way, refusals as Result values.
 */
export interface RefSurface {
  list(runId: string): Promise<Result<ResultRef[]>>;
  manifest(runId: string): Promise<Result<RunManifest>>;
  read(ref: string, range: ReadRange): Promise<Result<SliceOutput>>;
  grep(ref: string, pattern: string, opts?: GrepOptions): Promise<Result<SliceOutput>>;
  jq(ref: string, expr: string): Promise<Result<SliceOutput>>;
  sql(ref: string, query: string, opts?: { maxRows?: number }): Promise<Result<SliceOutput>>;
  jsonpath(ref: string, expr: string, opts?: { maxRows?: number }): Promise<Result<SliceOutput>>;
  result(runId: string, o?: ResultOptions): Promise<Result<RunResult>>;
  peek(runId: string): Promise<Result<RunResult>>;
  rollUp(list: Savings[]): ReturnType<typeof rollUpSavings>;
}


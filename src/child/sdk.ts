import type { BrokerClient } from './broker-client.js';
import { RESULT_INLINE_BYTES, RESULT_SPOOL, sendResult } from './result-spool.js';

/**
 * What a script sees: `export default async function (brig) { ... }`. Every call goes
 * through the broker, so the supervisor stays the one place that counts steps, keeps
 * checkpoints and enforces the lease. `resume()` hands back an earlier checkpoint wrapped as
 * untrusted data: it came from a child and must be inspected, never executed.
 */

export interface UntrustedCheckpoint {
  untrusted: true;
  state: unknown;
}

/** One slice of a ref, bounded by the broker (`note` says "N more …" when cut). */
export interface RefSlice {
  ref: string;
  verb: 'read' | 'grep' | 'jq' | 'sql' | 'jsonpath';
  text?: string;
  encoding?: 'utf8' | 'base64';
  columns?: string[];
  rows?: unknown[][];
  returned: number;
  unit: string;
  more: number;
  moreExact: boolean;
  note?: string;
}

export type ReadRange = { offset?: number; length?: number } | { line: number; lines?: number };
export interface GrepOptions {
  maxMatches?: number;
  context?: number;
  ignoreCase?: boolean;
  fixed?: boolean;
}

/**
 * A descendant's ResultRef. The data fields are plain (they survive JSON); the verbs go
 * through the broker, which allows them only for this run's own descendants' refs.
 */
export interface RefHandle {
  readonly ref: string;
  readonly path: string;
  readonly kind: string;
  readonly bytes: number;
  readonly rows?: number;
  read(range?: ReadRange): Promise<RefSlice>;
  grep(pattern: string, opts?: GrepOptions): Promise<RefSlice>;
  jq(filter: string): Promise<RefSlice>;
  sql(query: string, opts?: { maxRows?: number }): Promise<RefSlice>;
  jsonpath(expr: string): Promise<RefSlice>;
}

export interface ChildRunSummary {
  runId: string;
  status: string;
  endReason: string | null;
  /** The child's result when it is small (≤ 16,000 chars of JSON); else null and resultCut. */
  result: unknown;
  /** Set when the result was too big to cross back: it is the child's result.json ref. */
  resultCut?: { chars: number; hint: string };
  error: { code: string; message: string } | null;
  missingOutputs: string[];
  /** The child's ResultRefs (empty for an async spawn: use `brig.refs(runId)` once it ended). */
  refs: RefHandle[];
  /** Handles left out of `refs` past the broker's cap. */
  refsMore?: number;
}

export interface BrigSdk {
  readonly task: string;
  readonly packet: Readonly<Record<string, unknown>>;
  /** One step boundary: counts a step, returns steer messages that arrived since the last one. */
  progress(line?: string): Promise<string[]>;
  checkpoint(state: unknown): Promise<void>;
  resume(): Promise<UntrustedCheckpoint | null>;
  result(value: unknown): Promise<void>;
  spawn(request: Record<string, unknown>): Promise<ChildRunSummary>;
  /**
   * Waits until each of these children (spawned with `async: true`) has ended, or until
   * `timeoutMs` (default and most 10 minutes); returns each one's summary as it stands then.
   * A run blocked here does not hold a slot its children need (needs `spawn`).
   */
  wait(childRunIds: string | string[], opts?: { timeoutMs?: number }): Promise<ChildRunSummary[]>;
  /** Steer messages received and not yet taken. */
  steers(): string[];
  /** Kill one of this run's own children (needs `kill` in the lease). */
  kill(childRunId: string): Promise<{ runId: string; endReason: string | null }>;
  /** Steer one of this run's own children (needs `steer` in the lease). */
  steer(childRunId: string, message: string): Promise<{ mode: string; runId: string; newRunId: string | null }>;
  /** The ResultRefs of one of this run's descendants (needs `refs.read`). */
  refs(runId: string): Promise<RefHandle[]>;
  /** A handle for a descendant's ref id (e.g. one a child returned); the broker still checks it. */
  ref(id: string): RefHandle;
}

/**
 * A result whose JSON is over RESULT_INLINE_BYTES does not fit one broker line: it is written
 * to RESULT_SPOOL in the workspace and the supervisor collects it (bounded by the lease's
 * resultBytes) as the run's `result.json` ResultRef (see result-spool.ts).
 */
export { RESULT_INLINE_BYTES, RESULT_SPOOL };

export const METHODS = {
  wait: 'wait',
  progress: 'progress',
  checkpoint: 'checkpoint',
  resume: 'resume',
  result: 'result',
  spawn: 'spawn',
  kill: 'child.kill',
  steer: 'child.steer',
  refsList: 'refs.list',
  read: 'refs.read',
  grep: 'refs.grep',
  jq: 'refs.jq',
  sql: 'refs.sql',
  jsonpath: 'refs.jsonpath',
} as const;

type Info = { ref: string; path?: string; kind?: string; bytes?: number; rows?: number };

function refHandle(client: BrokerClient, info: Info): RefHandle {
  const ref = String(info.ref);
  const call = async (method: string, params: Record<string, unknown>) => (await client.call(method, { ref, ...params })) as RefSlice;
  const data = {
    ref,
    path: String(info.path ?? ''),
    kind: String(info.kind ?? 'unknown'),
    bytes: Number(info.bytes ?? 0),
    ...(typeof info.rows === 'number' ? { rows: info.rows } : {}),
  };
  // Verbs are non-enumerable: a script that returns a handle returns its data only.
  const verbs: Omit<RefHandle, keyof typeof data> = {
    read: (range: ReadRange = { offset: 0 }) => call(METHODS.read, { ...range }),
    grep: (pattern: string, opts: GrepOptions = {}) => call(METHODS.grep, { pattern, ...opts }),
    jq: (filter: string) => call(METHODS.jq, { filter }),
    sql: (query: string, opts: { maxRows?: number } = {}) => call(METHODS.sql, { sql: query, ...opts }),
    jsonpath: (expr: string) => call(METHODS.jsonpath, { path: expr }),
  };
  const h = { ...data };
  for (const [k, fn] of Object.entries(verbs)) Object.defineProperty(h, k, { value: fn, enumerable: false });
  return Object.freeze(h) as RefHandle;
}

function handles(client: BrokerClient, list: unknown): RefHandle[] {
  return Array.isArray(list) ? list.filter((x): x is Info => !!x && typeof x === 'object' && typeof (x as Info).ref === 'string').map((x) => refHandle(client, x)) : [];
}

export function createSdk(client: BrokerClient, packet: Record<string, unknown>, state: { resultSet: boolean }): BrigSdk {
  const inbox: string[] = [];
  const take = (): string[] => inbox.splice(0, inbox.length);
  return Object.freeze({
    task: String(packet.task ?? ''),
    packet: Object.freeze({ ...packet }),
    async progress(line?: string) {
      const r = (await client.call(METHODS.progress, { line: line === undefined ? null : String(line).slice(0, 200) })) as { steers?: unknown };
      if (Array.isArray(r?.steers)) for (const m of r.steers) if (typeof m === 'string') inbox.push(m);
      return take();
    },
    async checkpoint(s: unknown) {
      await client.call(METHODS.checkpoint, { state: s });
    },
    async resume() {
      const r = (await client.call(METHODS.resume, {})) as { checkpoint?: unknown } | null;
      return r && r.checkpoint !== undefined && r.checkpoint !== null ? { untrusted: true as const, state: r.checkpoint } : null;
    },
    async result(value: unknown) {
      await sendResult((m, p) => client.call(m, p), value);
      state.resultSet = true;
    },
    async spawn(request: Record<string, unknown>) {
      const s = (await client.call(METHODS.spawn, { request })) as ChildRunSummary & { refs?: unknown };
      return { ...s, refs: handles(client, s.refs) };
    },
    async wait(ids: string | string[], opts: { timeoutMs?: number } = {}) {
      const runs = Array.isArray(ids) ? ids : [ids];
      const r = (await client.call(METHODS.wait, { runs, ...(opts.timeoutMs !== undefined ? { timeoutMs: opts.timeoutMs } : {}) })) as { runs?: (ChildRunSummary & { refs?: unknown })[] };
      return (r?.runs ?? []).map((s) => ({ ...s, refs: handles(client, s.refs) }));
    },
    steers: take,
    async kill(child: string) {
      return (await client.call(METHODS.kill, { child })) as { runId: string; endReason: string | null };
    },
    async steer(child: string, message: string) {
      return (await client.call(METHODS.steer, { child, message })) as { mode: string; runId: string; newRunId: string | null };
    },
    async refs(run: string) {
      const r = (await client.call(METHODS.refsList, { run })) as { refs?: unknown };
      return handles(client, r?.refs);
    },
    ref(id: string) {
      return refHandle(client, { ref: id });
    },
  });
}

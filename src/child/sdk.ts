import type { ChildRefHandle, ChildSummary, ChildSummaryWithRefs, GraphCallReply, GrepOptions, ReplyOf, SliceOutput, SteerOutcome } from '../protocol/index.js';
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
export type RefSlice = SliceOutput;
export type { GrepOptions } from '../protocol/index.js';
/** By bytes (offset defaults to 0) or by lines. */
export type ReadRange = { offset?: number; length?: number } | { line: number; lines?: number };

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

/** What a spawn or a wait returns of one child (protocol/broker.ts), its refs as handles. */
export interface ChildRunSummary extends ChildSummary {
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
  steer(childRunId: string, message: string): Promise<SteerOutcome>;
  /** The ResultRefs of one of this run's descendants (needs `refs.read`). */
  refs(runId: string): Promise<RefHandle[]>;
  /** A handle for a descendant's ref id (e.g. one a child returned); the broker still checks it. */
  ref(id: string): RefHandle;
  /**
   * Runs a graph (a `graph: brig/v1` spec, YAML or JSON text) as one child of this run (needs
   * `graph`); waits for its end at most `timeoutMs` (default 50 s, 0: not at all). Once it
   * ended: its envelope and manifest ref (`brig.ref(manifestRef)` slices it with `refs.read`).
   */
  graphRun(spec: string, opts?: { timeoutMs?: number }): Promise<ReplyOf<'graph.run'>>;
  /** A graph this run started: now (`timeoutMs` 0) or once it ends, waiting at most `timeoutMs` (default 50 s). */
  graphWait(graphId: string, opts?: { timeoutMs?: number }): Promise<GraphCallReply>;
  /** Cancels a graph this run started: its running nodes killed, the rest skipped; answers it as graphWait does. */
  graphCancel(graphId: string): Promise<GraphCallReply>;
}

/**
 * A result whose JSON is over RESULT_INLINE_BYTES does not fit one broker line: it is written
 * to RESULT_SPOOL in the workspace and the supervisor collects it (bounded by the lease's
 * resultBytes) as the run's `result.json` ResultRef (see result-spool.ts).
 */
export { RESULT_INLINE_BYTES, RESULT_SPOOL };

type Info = Pick<ChildRefHandle, 'ref'> & Partial<ChildRefHandle>;

function refHandle(client: BrokerClient, info: Info): RefHandle {
  const ref = String(info.ref);
  const data = {
    ref,
    path: String(info.path ?? ''),
    kind: String(info.kind ?? 'unknown'),
    bytes: Number(info.bytes ?? 0),
    ...(typeof info.rows === 'number' ? { rows: info.rows } : {}),
  };
  // Verbs are non-enumerable: a script that returns a handle returns its data only.
  const verbs: Omit<RefHandle, keyof typeof data> = {
    read: (range: ReadRange = {}) => client.call('refs.read', { ref, ...range }),
    grep: (pattern: string, opts: GrepOptions = {}) => client.call('refs.grep', { ref, pattern, ...opts }),
    jq: (filter: string) => client.call('refs.jq', { ref, filter }),
    sql: (query: string, opts: { maxRows?: number } = {}) => client.call('refs.sql', { ref, sql: query, ...opts }),
    jsonpath: (expr: string) => client.call('refs.jsonpath', { ref, path: expr }),
  };
  const h = { ...data };
  for (const [k, fn] of Object.entries(verbs)) Object.defineProperty(h, k, { value: fn, enumerable: false });
  return Object.freeze(h) as RefHandle;
}

function handles(client: BrokerClient, list: readonly ChildRefHandle[] | undefined): RefHandle[] {
  return (list ?? []).filter((x) => typeof x?.ref === 'string').map((x) => refHandle(client, x));
}

const withHandles = (client: BrokerClient, s: ChildSummaryWithRefs): ChildRunSummary => ({ ...s, refs: handles(client, s.refs) });

export function createSdk(client: BrokerClient, packet: Record<string, unknown>, state: { resultSet: boolean }): BrigSdk {
  const inbox: string[] = [];
  const take = (): string[] => inbox.splice(0, inbox.length);
  return Object.freeze({
    task: String(packet.task ?? ''),
    packet: Object.freeze({ ...packet }),
    async progress(line?: string) {
      const r = await client.call('progress', { line: line === undefined ? null : String(line).slice(0, 200) });
      for (const m of r.steers ?? []) if (typeof m === 'string') inbox.push(m);
      return take();
    },
    async checkpoint(s: unknown) {
      await client.call('checkpoint', { state: s });
    },
    async resume() {
      const r = await client.call('resume', {});
      return r.checkpoint !== undefined && r.checkpoint !== null ? { untrusted: true as const, state: r.checkpoint } : null;
    },
    async result(value: unknown) {
      await sendResult((m, p) => client.call(m, p), value);
      state.resultSet = true;
    },
    async spawn(request: Record<string, unknown>) {
      return withHandles(client, await client.call('spawn', { request }));
    },
    async wait(ids: string | string[], opts: { timeoutMs?: number } = {}) {
      const runs = Array.isArray(ids) ? ids : [ids];
      const r = await client.call('wait', { runs, ...(opts.timeoutMs !== undefined ? { timeoutMs: opts.timeoutMs } : {}) });
      return r.runs.map((s) => withHandles(client, s));
    },
    steers: take,
    async kill(child: string) {
      return client.call('child.kill', { child });
    },
    async steer(child: string, message: string) {
      return client.call('child.steer', { child, message });
    },
    async refs(run: string) {
      const r = await client.call('refs.list', { run });
      return handles(client, r.refs);
    },
    ref(id: string) {
      return refHandle(client, { ref: id });
    },
    async graphRun(spec: string, opts: { timeoutMs?: number } = {}) {
      return client.call('graph.run', { spec, ...(opts.timeoutMs !== undefined ? { timeoutMs: opts.timeoutMs } : {}) });
    },
    async graphWait(graphId: string, opts: { timeoutMs?: number } = {}) {
      return client.call('graph.wait', { graphId, ...(opts.timeoutMs !== undefined ? { timeoutMs: opts.timeoutMs } : {}) });
    },
    async graphCancel(graphId: string) {
      return client.call('graph.cancel', { graphId });
    },
  });
}

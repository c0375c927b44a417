/**
 * A child's drill-in over the broker: `refs.list|read|grep|jq|sql|jsonpath` for a run whose
 * lease grants `refs.read` (the broker has already checked the capability and verified who
 * the caller is).
 *
 * Guarantees: a caller slices only refs of its own DESCENDANTS — runs whose path (root →
 * run) passes through the caller, in the caller's tree. Not its own refs, not a sibling's,
 * not another tree's. Anything else is answered exactly like a ref or run that does not
 * exist (`ref_not_found` / `run_not_found`), so a child cannot probe for the existence of
 * another run's refs; the real reason (`not_descendant`) goes to the ledger only. Every
 * reply is bounded well under the broker's 64 KiB line (CHILD_REPLY_BYTES).
 * Every slice runs as the calling run, in its tree (SliceScheduler's children's lane): a
 * run's and a tree's calls in flight are capped and never take the operator's capacity.
 * Threat: a hostile child naming a ref it was told about (by a task, a sibling's result) to
 * read outside its subtree, asking for a reply big enough to flood its parent, or flooding
 * slow slices to stall the others.
 * Trusts: the broker's verified run id, the supervisor's run records (path), the result
 * store's manifest (a ref's runId). Fails closed: an unknown caller or run record → refused.
 */
import { alreadyLedgered } from '../broker/index.js';
import type { Ledger } from '../ledger/index.js';
import type { ResultRef } from '../results/index.js';
import type { FsResultStore } from '../results/index.js';
import { Slicer, type SliceLimits, type SliceObserver, type SliceOutput } from '../slice/index.js';
import type { DuckdbHelperPool, SliceScheduler } from '../slice/index.js';
import { BrigError, type Result } from '../util/errors.js';
import { RefService } from './ref-service.js';
import { isDescendant, type ChildRefHandle, type ParamsOf, type ReplyOf, type RunRecord } from '../protocol/index.js';

export const CHILD_REF_METHODS = ['refs.list', 'refs.read', 'refs.grep', 'refs.jq', 'refs.sql', 'refs.jsonpath'] as const;
export type ChildRefMethod = (typeof CHILD_REF_METHODS)[number];

/** Largest reply a child gets from a refs.* call (the JSON of the result). */
export const CHILD_REPLY_BYTES = 48 * 1024;
/** At most this many handles in one list (a spawn summary or refs.list). */
export const MAX_LISTED_REFS = 100;
/** The slicer's own caps for a child: smaller than the operator's, so a reply starts small. */
export const CHILD_SLICE_LIMITS: Partial<SliceLimits> = Object.freeze({
  maxBytes: 32 * 1024,
  maxLines: 500,
  maxMatches: 100,
  maxRows: 200,
  timeoutMs: 15_000,
});


export interface ChildRefsDeps {
  store: FsResultStore;
  /** The supervisor's one slicing scheduler; a child's calls go to its children's lane. */
  scheduler?: SliceScheduler;
  /** Only without a scheduler: the pool the slicer's own scheduler uses. */
  pool?: DuckdbHelperPool;
  getRun: (runId: string) => Promise<RunRecord | undefined>;
  ledger: Ledger;
  limits?: Partial<SliceLimits>;
  /** Told of each slice call (metrics). */
  onSlice?: SliceObserver;
}

/** A refs.* call as the broker hands it: the verified caller, its lease, the parsed params. */
export interface ChildRefCall<M extends ChildRefMethod = ChildRefMethod> {
  runId: string;
  leaseId: string;
  method: M;
  params: ParamsOf<M>;
}

/** Pure: may `callerRunId` slice the refs of `target`? Only a strict descendant in its tree (protocol/runs.ts; the hand-off of refs uses it too). */
export { isDescendant } from '../protocol/index.js';

export function handleOf(r: ResultRef): ChildRefHandle {
  return { ref: r.ref, path: r.path, kind: r.kind, bytes: r.bytes, ...(r.rows !== undefined ? { rows: r.rows } : {}) };
}

/** Cuts a slice until its JSON is at most `max` bytes: rows from the end, text at a UTF-8 boundary. */
export function fitReply(o: SliceOutput, max: number = CHILD_REPLY_BYTES): SliceOutput {
  const size = (x: unknown) => Buffer.byteLength(JSON.stringify(x));
  const total = size(o);
  if (total <= max) return o;
  const note = `${o.note ? `${o.note}; ` : ''}cut to fit a ${max}-byte broker reply`;
  if (o.rows) {
    const rows = [...o.rows];
    let bytes = total;
    while (rows.length > 0 && bytes > max - 200) bytes -= size(rows.pop()) + 1;
    const dropped = o.rows.length - rows.length;
    return { ...o, rows, returned: rows.length, more: o.more + dropped, note };
  }
  if (o.text !== undefined) {
    const overhead = total - size(o.text) + 200;
    let text = o.text;
    // JSON escaping can grow a string; shrink until the encoded form fits.
    while (text.length > 0 && size(text) + overhead > max) text = text.slice(0, Math.floor(text.length * 0.8));
    if (o.encoding === 'base64') text = text.slice(0, text.length - (text.length % 4));
    else text = text.replace(/[\uD800-\uDBFF]$/, '');
    return { ...o, text, more: Math.max(o.more, 1), moreExact: false, note };
  }
  return o;
}

export class ChildRefs {
  private readonly service: RefService;
  /** Unbound: every slice goes through `slicerFor(caller)`, in the children's lane. */
  private readonly slicer: Slicer;

  /** Owners that are not runs but count as the caller's descendants: the graphs it started (their manifests). */
  #graphManifests: ((owner: string, callerRunId: string) => Promise<boolean>) | undefined;

  /** Set once the graphs exist (they are made after the supervisor these refs serve). */
  allowGraphManifests(reader: (owner: string, callerRunId: string) => Promise<boolean>): void {
    this.#graphManifests = reader;
  }

  constructor(private readonly d: ChildRefsDeps) {
    this.slicer = new Slicer(d.store, { ...(d.scheduler ? { scheduler: d.scheduler } : {}), ...(d.pool ? { pool: d.pool } : {}), limits: { ...CHILD_SLICE_LIMITS, ...d.limits }, ...(d.onSlice ? { onSlice: d.onSlice } : {}) });
    this.service = new RefService({ store: d.store, slicer: this.slicer, getRun: d.getRun });
  }

  /** The handles of a run's refs (bounded), for a spawn summary: the caller already owns the run. */
  async handlesOf(runId: string): Promise<{ refs: ChildRefHandle[]; more: number }> {
    const l = await this.service.list(runId);
    const all = l.ok ? l.value : [];
    return { refs: all.slice(0, MAX_LISTED_REFS).map(handleOf), more: Math.max(0, all.length - MAX_LISTED_REFS) };
  }

  /**
   * The broker's handlers for refs.*, one per method, its params already parsed by the
   * method's schema. Each throws a BrigError (the broker turns it into an error reply).
   */
  readonly handlers: { [M in ChildRefMethod]: (call: ChildRefCall<M>) => Promise<ReplyOf<M>> } = {
    'refs.list': async (call) => {
      const caller = await this.caller(call);
      const target = call.params.run;
      if (!isDescendant(caller.id, caller.rootRunId, await this.d.getRun(target))) {
        this.denied(call, 'run_not_found');
        throw alreadyLedgered(new BrigError('run_not_found', `run ${target.slice(0, 80)} is not a descendant of this run`));
      }
      return this.handlesOf(target);
    },
    'refs.read': async (call) => {
      const { ref, line, lines, offset, length } = call.params;
      const caller = await this.caller(call);
      await this.authorizeRef(call, caller, ref);
      const range = line !== undefined ? { line, ...(lines !== undefined ? { lines } : {}) } : { offset: offset ?? 0, ...(length !== undefined ? { length } : {}) };
      return fitReply(unwrap(await this.slicerFor(caller).read(ref, range)));
    },
    'refs.grep': async (call) => {
      const { ref, pattern, ...opts } = call.params;
      const caller = await this.caller(call);
      await this.authorizeRef(call, caller, ref);
      return fitReply(unwrap(await this.slicerFor(caller).grep(ref, pattern, opts)));
    },
    'refs.jq': async (call) => {
      const caller = await this.caller(call);
      await this.authorizeRef(call, caller, call.params.ref);
      return fitReply(unwrap(await this.slicerFor(caller).jq(call.params.ref, call.params.filter)));
    },
    'refs.sql': async (call) => {
      const { ref, sql, maxRows } = call.params;
      const caller = await this.caller(call);
      await this.authorizeRef(call, caller, ref);
      return fitReply(unwrap(await this.slicerFor(caller).sql(ref, sql, maxRows !== undefined ? { maxRows } : {})));
    },
    'refs.jsonpath': async (call) => {
      const caller = await this.caller(call);
      await this.authorizeRef(call, caller, call.params.ref);
      return fitReply(unwrap(await this.slicerFor(caller).jsonpath(call.params.ref, call.params.path)));
    },
  };

  /** The slicer as this run, in its tree: the scheduler's per-run and per-tree caps apply. */
  private slicerFor(caller: RunRecord): Slicer {
    return this.slicer.as({ lane: 'child', runId: caller.id, treeId: caller.rootRunId });
  }

  private async caller(call: ChildRefCall): Promise<RunRecord> {
    const caller = await this.d.getRun(call.runId);
    if (!caller) throw new BrigError('not_running', `run ${call.runId} is not known to this supervisor`);
    return caller;
  }

  private async authorizeRef(call: ChildRefCall, caller: RunRecord, ref: string): Promise<void> {
    let owner: RunRecord | undefined;
    let ownerId: string | undefined;
    try {
      ownerId = (await this.d.store.get(ref)).runId;
      owner = await this.d.getRun(ownerId);
    } catch (e) {
      if (!(e instanceof BrigError && e.code === 'ref_not_found')) throw e;
    }
    if (isDescendant(caller.id, caller.rootRunId, owner)) return;
    // A graph's manifest is kept under the graph's id: the run that started the graph reads it as its child's.
    if (!owner && ownerId !== undefined && this.#graphManifests && (await this.#graphManifests(ownerId, caller.id))) return;
    // The same words as a missing ref: existence outside the subtree is not disclosed. A
    // missing ref is ledgered by the broker (as every handler refusal); this one here, with
    // the reason only this code knows, and marked so the broker writes no second line.
    const e = new BrigError('ref_not_found', `no ref ${ref.slice(0, 80)} among this run's descendants`);
    if (!owner) throw e;
    this.denied(call, 'ref_not_found');
    throw alreadyLedgered(e);
  }

  /** Content-free (INV-7): ids and enums only; the ref id itself is not logged. */
  private denied(call: ChildRefCall, code: 'ref_not_found' | 'run_not_found'): void {
    try {
      this.d.ledger.append({ type: 'broker.denied', runId: call.runId, leaseId: call.leaseId, method: call.method, code, reason: 'not_descendant' });
    } catch {
      // A failing ledger must not turn a refusal into a crash; its owner reports the error.
    }
  }
}

function unwrap(r: Result<SliceOutput>): SliceOutput {
  if (!r.ok) throw r.error;
  return r.value;
}

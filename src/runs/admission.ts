import { BrigError } from '../util/errors.js';
import { mib } from '../util/disk-space.js';
import { byCodeUnits, isGraphAttemptKey } from '../protocol/index.js';
import { isActive } from './state-machine.js';
import type { RunRecord, SupervisorSettings } from './types.js';

/**
 * Admission, pure: given the live runs and a new request, decide admit | queue | duplicate |
 * refuse. Guarantees a spawn loop cannot escape its limits: depth is counted from the root,
 * the tree ceiling is keyed on the root run (not on the caller, which a loop could vary),
 * and the per-parent queue is bounded. Fails closed: a refusal is a structured error with
 * the limit, the current value and a hint.
 */

export interface AdmissionRequest {
  /** Depth the new run would have (an operator spawn is depth 1). */
  depth: number;
  /** The parent run, or null for an operator spawn. */
  parentRunId: string | null;
  /** The tree the new run joins, or null when it starts a new tree. */
  rootRunId: string | null;
  callerId: string;
  agent: string;
  /** The whole request's hash (record.ts requestHash): a duplicate is the same work, not the same words. */
  requestHash: string;
}

export type AdmissionDecision =
  | { kind: 'admit' }
  | { kind: 'queue'; position: number }
  | { kind: 'duplicate'; runId: string }
  | { kind: 'refuse'; error: BrigError };

type Settings = Pick<SupervisorSettings, 'maxSpawnDepth' | 'maxChildrenPerAgent' | 'maxQueued' | 'maxRunsPerTree' | 'maxConcurrent'>;

/** The key a parent's children share; operator spawns share one. */
export const parentKey = (parentRunId: string | null): string => parentRunId ?? 'operator';

/**
 * The slot group a run counts in: a graph node's is its graph (`graph:<id>`, from its attempt
 * key), any other run's its parent's. A graph is one child of its caller (it holds one of the
 * caller's slots while it runs: `held`), so its nodes never take the caller's other slots one
 * by one; they are bounded by the caller's cap as a group (the scheduler's parallel is ≤ it).
 */
export function slotKey(r: Pick<RunRecord, 'parentRunId' | 'callerId'>): string {
  if (r.parentRunId !== null && isGraphAttemptKey(r.callerId)) return `graph:${r.callerId.split(':')[1]}`;
  return parentKey(r.parentRunId);
}

/** Slots held beside the active runs, per slot key: a graph's one of its caller's, an ended run's until its release is done. */
export type HeldSlots = ReadonlyMap<string, number>;

/**
 * How many children may be active at once under one parent: the supervisor's setting, and,
 * for a run parent, also the `maxChildren` of its lease (INV-1: limits only shrink). The
 * operator is not a run: its spawns are bounded by `maxConcurrent` alone, so raising the
 * global cap raises what an operator can run at once (the per-parent cap bounds an agent's
 * fan-out, which the operator's is not).
 */
export function childLimit(live: readonly RunRecord[], parentRunId: string | null, s: Settings): number {
  if (parentRunId === null) return Infinity;
  const cap = live.find((r) => r.id === parentRunId)?.childCap;
  return cap === undefined ? s.maxChildrenPerAgent : Math.min(s.maxChildrenPerAgent, cap);
}

function limitError(code: 'depth_exceeded' | 'tree_exceeded' | 'queue_full' | 'children_exceeded', message: string, limit: number, current: number): BrigError {
  return new BrigError(code, message, { data: { limit, current } });
}

/**
 * Runs that count against the global `maxConcurrent`: active ones, less those blocked on
 * their own children (a synchronous spawn or a wait). A parent waiting for a child computes
 * nothing; counting it would let parents at the cap starve their children into
 * `queue_timeout` (a deadlock). Their containers stay bounded by the tree and queue caps.
 */
function countsGlobally(r: RunRecord, blocked: ReadonlySet<string>): boolean {
  return isActive(r.status) && !blocked.has(r.id);
}

/**
 * `paused` (admission-pause.ts): an operator paused admission. Every limit is judged as
 * always, but nothing is admitted: a new run waits in the queue, and a full queue refuses it
 * `admission_paused` (not `queue_full`: the wait is the operator's, not the load's).
 */
export function decideAdmission(
  live: readonly RunRecord[],
  req: AdmissionRequest,
  s: Settings,
  blocked: ReadonlySet<string> = new Set(),
  paused: { since: string | null } | null = null,
  held: HeldSlots = new Map(),
  heldGlobally = 0,
): AdmissionDecision {
  const dup = live.find(
    (r) => r.status !== 'ended' && r.callerId === req.callerId && r.agent === req.agent && r.requestHash === req.requestHash,
  );
  if (dup) return { kind: 'duplicate', runId: dup.id };

  if (req.depth > s.maxSpawnDepth) {
    return {
      kind: 'refuse',
      error: limitError('depth_exceeded', `spawn depth ${req.depth} is over maxSpawnDepth ${s.maxSpawnDepth}`, s.maxSpawnDepth, req.depth),
    };
  }
  if (req.rootRunId !== null) {
    const inTree = live.filter((r) => r.status !== 'ended' && r.rootRunId === req.rootRunId).length;
    if (inTree >= s.maxRunsPerTree) {
      return {
        kind: 'refuse',
        error: limitError('tree_exceeded', `run tree ${req.rootRunId} has ${inTree} live runs (ceiling ${s.maxRunsPerTree})`, s.maxRunsPerTree, inTree),
      };
    }
  }
  const perParent = childLimit(live, req.parentRunId, s);
  if (perParent === 0) {
    // Queueing behind a limit of zero would only ever time out.
    return {
      kind: 'refuse',
      error: limitError('children_exceeded', `the lease of run ${req.parentRunId} allows no children (maxChildren 0)`, 0, 0),
    };
  }
  const key = slotKey(req);
  const siblings = live.filter((r) => slotKey(r) === key);
  const active = siblings.filter((r) => isActive(r.status)).length + (held.get(key) ?? 0);
  const queued = siblings.filter((r) => r.status === 'queued').length;
  const allActive = live.filter((r) => countsGlobally(r, blocked)).length + heldGlobally;
  // FIFO: while anyone of this parent waits, a newcomer waits behind them.
  if (!paused && active < perParent && allActive < s.maxConcurrent && queued === 0) return { kind: 'admit' };
  if (paused && queued >= s.maxQueued) {
    return {
      kind: 'refuse',
      error: new BrigError('admission_paused', `admission is paused${paused.since ? ` since ${paused.since}` : ''} and ${queued} spawns already wait (maxQueued ${s.maxQueued})`, {
        data: { limit: s.maxQueued, current: queued, pausedSince: paused.since },
      }),
    };
  }
  if (queued >= s.maxQueued) {
    return {
      kind: 'refuse',
      error: limitError('queue_full', `${queued} children already wait for a slot (maxQueued ${s.maxQueued})`, s.maxQueued, queued),
    };
  }
  return { kind: 'queue', position: queued + 1 };
}

/**
 * Which queued runs may start now, oldest first, respecting the per-parent and global caps.
 */
export function nextToStart(live: readonly RunRecord[], s: Settings, blocked: ReadonlySet<string> = new Set(), held: HeldSlots = new Map(), heldGlobally = 0): string[] {
  const activeBy = new Map<string, number>(held);
  let allActive = heldGlobally;
  for (const r of live) {
    if (!isActive(r.status)) continue;
    if (countsGlobally(r, blocked)) allActive++;
    const k = slotKey(r);
    activeBy.set(k, (activeBy.get(k) ?? 0) + 1);
  }
  const queued = live
    .filter((r) => r.status === 'queued')
    // Stable: runs queued in one millisecond keep the order they were admitted in (the table's),
    // not their random ids' — a burst queued while paused starts in the order it came.
    .sort((a, b) => byCodeUnits(a.createdAt, b.createdAt));
  const out: string[] = [];
  for (const r of queued) {
    if (allActive >= s.maxConcurrent) break;
    const k = slotKey(r);
    const n = activeBy.get(k) ?? 0;
    if (n >= childLimit(live, r.parentRunId, s)) continue;
    activeBy.set(k, n + 1);
    allActive++;
    out.push(r.id);
  }
  return out;
}

/** What admission knows of the home's storage (ports.ts StoragePort, plus the run store's own holds). */
export interface StorageState {
  /** Free bytes of the home's file system; undefined when unknown. */
  freeBytes?: number;
  /** Writers holding what the disk refused, by what they hold. */
  held: readonly { what: string; count: number }[];
}

/**
 * Whether a new run must be refused for the home's storage: a writer is holding what the
 * disk refused (the home is full now), or the free space is below the reserve. A full home
 * refuses new work and keeps the live runs going; it never admits a run it could not record.
 */
export function storageRefusal(s: StorageState, minFreeBytes: number): BrigError | undefined {
  const held = s.held.filter((h) => h.count > 0);
  const data = { freeBytes: s.freeBytes ?? null, minFreeBytes };
  if (held.length > 0) {
    return new BrigError('storage_full', `brig's home is full: ${held.map((h) => `${h.count} ${h.what}`).join(' and ')} wait in memory for space`, { data: { ...data, held: held.map((h) => `${h.what}:${h.count}`) } });
  }
  if (s.freeBytes !== undefined && s.freeBytes < minFreeBytes) {
    return new BrigError('storage_full', `brig's home has ${mib(s.freeBytes)} free, below its reserve of ${mib(minFreeBytes)}`, { data });
  }
  return undefined;
}

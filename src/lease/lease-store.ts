/**
 * Lease records: issue (root and child), verify a bearer, revoke a subtree. The lineage walk
 * is lease-lineage.ts; announcing revokes (also another process's) is lease-revocations.ts.
 *
 * Guarantees: a child lease is attenuate(parent, request, profile) and is never issued under
 * a revoked or expired parent, past maxDepth, by a parent without `spawn`, or with a looser
 * posture (INV-1). Bearer tokens are 32 random bytes; only their sha256 is stored and the
 * comparison is constant-time. A token verifies only for its own run, while neither it nor
 * (by cascade) an ancestor is revoked, and before it expires (issue + run timeout, never
 * past the parent's expiry). Revoking revokes the whole subtree. Records are files, so they
 * survive a restart and another process's revoke is seen on the next verify. Threat: a child
 * replaying, guessing or borrowing a token, or widening itself through a request. Trusts:
 * the policy and the leases directory (0700). Fails closed: an unreadable record is no lease.
 */
import { randomBytes, timingSafeEqual } from 'node:crypto';
import { BrigError, err, ok, type Result } from '../util/errors.js';
import { attenuate, grantAllows, hasPostureDowngrade, type Attenuation } from './attenuate.js';
import { LEASE_ID_RE, LeaseFiles, newLeaseId } from './lease-files.js';
import { chainLive, lineageOf } from './lease-lineage.js';
import { Revocations, type RevokedListener, type ScanTimers } from './lease-revocations.js';
import { hashToken } from './lease-state.js';

export { hashToken, leaseLive, leaseState } from './lease-state.js';
import { OPERATOR_PROFILE } from './default-profile.js';
import { profileOf, type Policy } from './policy.js';
import { LeaseRequestSchema, type Grant, type LeaseRecord, type LeaseRequest, type Limits } from './types.js';

/** Where lease events go: structurally a ledger (lease/ does not import ledger/). */
export interface LeaseEventSink {
  append(event: { type: string; [field: string]: string | number | boolean | null | readonly string[] | undefined }): void;
}

export interface LeaseStoreOptions {
  /** $BRIG_HOME/leases */
  dir: string;
  /** Needed to issue; a store that only reads, verifies and revokes may go without. */
  policy?: Policy;
  ledger: LeaseEventSink;
  now?: () => number;
}

export interface IssuedLease {
  record: LeaseRecord;
  /** The bearer: handed to the child once, never stored. */
  token: string;
}

export interface IssueRootArgs {
  profile: string;
  runId: string;
  rootRunId: string;
  timeoutMs: number;
  /** The lease outlives the run's time limit by this much (the run's watchdog must fire first). */
  graceMs?: number;
  /** Narrowing asked by the operator (`brig spawn --cap`); absent = the whole profile. */
  request?: LeaseRequest;
}

export interface IssueChildArgs {
  parentLeaseId: string;
  /** The capability the parent makes this child with: `spawn` (default), or `graph` for a node of a graph it runs (graph_run). */
  via?: 'spawn' | 'graph';
  request: LeaseRequest | undefined;
  profile: string;
  runId: string;
  rootRunId: string;
  timeoutMs: number;
  graceMs?: number;
}

export type { RevokedListener } from './lease-revocations.js';

const MAX_TOKEN = 128;

const RUN_END_REASON = /^run_[a-z_]{1,40}$/;

/** Appends `v` to the list under `k` (made when absent). */
function push(m: Map<string, string[]>, k: string, v: string): void {
  const list = m.get(k);
  if (list) list.push(v);
  else m.set(k, [v]);
}

export class LeaseStore {
  private readonly files: LeaseFiles;
  private readonly policy: Policy | undefined;
  private readonly ledger: LeaseEventSink;
  private readonly now: () => number;
  private readonly revocations: Revocations;
  /**
   * What the store finds leases by, read from every record once, when first needed (a command
   * that issues, verifies or revokes nothing reads none), then kept by this store's own issues:
   * runId → leaseId (a run holds one live lease; a new one is issued for a run only once its
   * last is revoked — a run a crash caught `starting` launches again with a fresh lease, the
   * dead launch's token gone with it — and the index names the latest), and parent → children
   * in the order issued (a revoke's cascade). Read again when the directory changed under it
   * (another store wrote a lease: its mtime) or a run is not found. Only pointers: every use
   * reads and checks the record itself. Before, every revoke read every lease file (~40 ms per
   * run end in a home of 3,000, the daemon's event loop held), and every start did once more.
   */
  #index: { byRun: Map<string, string>; children: Map<string, string[]>; dirMtime: string } | undefined;

  constructor(opts: LeaseStoreOptions) {
    this.files = new LeaseFiles(opts.dir);
    this.policy = opts.policy;
    this.ledger = opts.ledger;
    this.now = opts.now ?? Date.now;
    this.revocations = new Revocations(this.files);
  }

  /** The index, read from the records when absent or when another writer changed the directory. */
  private index(): { byRun: Map<string, string>; children: Map<string, string[]>; dirMtime: string } {
    const mtime = this.files.dirMtime();
    if (this.#index && this.#index.dirMtime === mtime) return this.#index;
    // The records' facts from the leases' index (lease-files.ts), in issue order: children lists are too.
    const byRunAll = new Map<string, string[]>();
    const children = new Map<string, string[]>();
    for (const f of this.files.facts()) {
      push(byRunAll, f.runId, f.id);
      if (f.parentLeaseId !== null) push(children, f.parentLeaseId, f.id);
    }
    const byRun = new Map<string, string>();
    for (const [runId, ids] of byRunAll) {
      if (ids.length === 1) {
        byRun.set(runId, ids[0]!);
        continue;
      }
      // A run launched again holds several: a live lease over a revoked one; else the later issued.
      let latest: LeaseRecord | undefined;
      for (const r of ids.map((id) => this.files.read(id))) {
        if (!r) continue;
        if (!latest || (latest.revoked && !r.revoked) || (!latest.revoked === !r.revoked && r.issuedAt > latest.issuedAt)) latest = r;
      }
      if (latest) byRun.set(runId, latest.id);
    }
    this.#index = { byRun, children, dirMtime: mtime };
    return this.#index;
  }

  /** This store wrote a record: the index takes it, and the directory's new mtime as its own. */
  private indexed(rec: LeaseRecord): void {
    const idx = this.#index;
    if (!idx) return;
    idx.byRun.set(rec.runId, rec.id);
    if (rec.parentLeaseId !== null) {
      // A new record: its id is in no list yet (a fan-out of thousands appends, never copies).
      push(idx.children, rec.parentLeaseId, rec.id);
    }
    idx.dirMtime = this.files.dirMtime();
  }

  /**
   * The limits a run the operator spawns under `profile` with no narrowing would hold (what
   * issueRoot would grant), without issuing anything: the warm pool's default shape.
   */
  previewRootLimits(profile: string = OPERATOR_PROFILE): Limits | null {
    const root = this.policy?.profiles.root;
    const prof = this.policy ? profileOf(this.policy, profile) : undefined;
    if (!root || !prof?.ok) return null;
    return attenuate(root.grant, {}, prof.value.grant, this.policy!.denylist.caps).grant.limits;
  }

  issueRoot(a: IssueRootArgs): Result<IssuedLease> {
    const root = this.policy?.profiles.root;
    if (!root) return err(new BrigError('invalid_policy', 'no policy with a root profile was given to the lease store'));
    // The operator is depth 0; a run it spawns holds a depth-1 lease (the supervisor counts
    // run depth the same way, so `brig lease show` and `brig list` agree).
    return this.issue({ parent: null, parentGrant: root.grant, depth: 1, ...a });
  }

  /**
   * A profile name as the ledger may record it: a child chooses the name in its spawn request,
   * so anything not a profile of the policy is recorded as `(unknown)` — never the child's
   * text (INV-7).
   */
  private ledgerProfile(name: string): string {
    return this.policy && Object.hasOwn(this.policy.profiles, name) ? name : '(unknown)';
  }

  issueChild(a: IssueChildArgs): Result<IssuedLease> {
    const parent = this.files.read(a.parentLeaseId);
    const refuse = (e: BrigError): Result<never> => {
      this.ledger.append({ type: 'lease.refused', runId: a.runId, rootRunId: a.rootRunId, parentLeaseId: a.parentLeaseId, profile: this.ledgerProfile(a.profile), code: e.code });
      return err(e);
    };
    if (!parent) return refuse(new BrigError('lease_not_found', `no lease ${a.parentLeaseId}`));
    const live = this.chainLive(parent);
    if (!live.ok) return refuse(live.error);
    const via = a.via ?? 'spawn';
    if (!grantAllows(parent, via)) return refuse(new BrigError('capability_denied', `lease ${parent.id} does not hold ${via}`, { data: { capability: via } }));
    const depth = parent.depth + 1;
    if (depth > parent.limits.maxDepth) {
      return refuse(new BrigError('depth_exceeded', `depth ${depth} is past maxDepth ${parent.limits.maxDepth}`, { data: { depth, maxDepth: parent.limits.maxDepth } }));
    }
    return this.issue({ parent, parentGrant: parent, depth, ...a, request: a.request });
  }

  private issue(a: {
    parent: LeaseRecord | null;
    parentGrant: Grant;
    depth: number;
    profile: string;
    runId: string;
    rootRunId: string;
    timeoutMs: number;
    graceMs?: number | undefined;
    request?: LeaseRequest | undefined;
  }): Result<IssuedLease> {
    const base = { runId: a.runId, rootRunId: a.rootRunId, parentLeaseId: a.parent?.id ?? null, profile: this.ledgerProfile(a.profile) };
    const refuse = (e: BrigError, what?: string[]): Result<never> => {
      this.ledger.append({ type: 'lease.refused', ...base, code: e.code, ...(what ? { what } : {}) });
      return err(e);
    };
    const req = LeaseRequestSchema.safeParse(a.request ?? {});
    if (!req.success) return refuse(new BrigError('invalid_input', `invalid lease request: ${req.error.issues[0]?.message ?? 'bad shape'}`));
    if (!this.policy) return refuse(new BrigError('invalid_policy', 'no policy was given to the lease store'));
    const prof = profileOf(this.policy, a.profile);
    if (!prof.ok) return refuse(prof.error);
    if (!Number.isFinite(a.timeoutMs) || a.timeoutMs <= 0) return refuse(new BrigError('invalid_input', 'timeoutMs must be a positive number'));
    // The index is read from disk once and kept by every issue in this process.
    const held = this.index().byRun.get(a.runId);
    const heldRec = held === undefined ? undefined : this.files.read(held);
    if (heldRec && heldRec.runId === a.runId && !heldRec.revoked) {
      return refuse(new BrigError('invalid_input', `run ${a.runId} already holds a lease`));
    }
    const att: Attenuation = attenuate(a.parentGrant, req.data, prof.value.grant, this.policy.denylist.caps, this.policy.egress.multiTenantSuffixes);
    if (hasPostureDowngrade(att)) {
      const what = att.refused.filter((r) => r.code === 'posture_downgrade').map((r) => r.what);
      return refuse(new BrigError('posture_downgrade', `a child cannot loosen its posture (${what.join(', ')})`, { data: { refused: what } }), what);
    }
    const nowMs = this.now();
    const limits = { ...att.grant.limits, timeoutMs: Math.min(att.grant.limits.timeoutMs, a.timeoutMs) };
    if (a.depth > limits.maxDepth) {
      return refuse(new BrigError('depth_exceeded', `depth ${a.depth} is past maxDepth ${limits.maxDepth}`, { data: { depth: a.depth, maxDepth: limits.maxDepth } }));
    }
    // limits.timeoutMs is the run's time limit; the bearer stays valid a grace past it, so
    // a busy run ends by its watchdog (resumable), not by a refused call. Never past the parent's.
    const graceMs = Math.max(0, a.graceMs ?? 0);
    const expiresMs = Math.min(nowMs + limits.timeoutMs + graceMs, a.parent ? Date.parse(a.parent.expiresAt) : Infinity);
    const token = randomBytes(32).toString('base64url');
    const record: LeaseRecord = {
      id: newLeaseId(),
      parentLeaseId: a.parent?.id ?? null,
      runId: a.runId,
      rootRunId: a.rootRunId,
      depth: a.depth,
      profile: a.profile,
      caps: att.grant.caps,
      limits,
      posture: att.grant.posture,
      ...(att.grant.egress ? { egress: att.grant.egress } : {}),
      requested: req.data,
      refused: att.refused,
      tokenHash: hashToken(token),
      issuedAt: new Date(nowMs).toISOString(),
      expiresAt: new Date(expiresMs).toISOString(),
      revoked: null,
    };
    this.files.add(record);
    this.indexed(record);
    this.ledger.append({
      type: 'lease.issued',
      ...base,
      leaseId: record.id,
      depth: record.depth,
      caps: record.caps,
      // Rule ids are the operator's (a child's narrowed copy takes its policy rule's id).
      ...(record.egress ? { egress: [...new Set(record.egress.rules.map((r) => r.id))] } : {}),
      refused: record.refused.map((r) => `${r.what}:${r.code}`),
      timeoutMs: limits.timeoutMs,
    });
    return ok({ record, token });
  }

  /** The lease a bearer proves for this run. Bad, other-run, revoked and expired tokens are refused. */
  verify(token: unknown, runId: string): Result<LeaseRecord> {
    const denied = new BrigError('unauthenticated', 'bad bearer token for this run');
    if (typeof token !== 'string' || token.length === 0 || token.length > MAX_TOKEN) return err(denied);
    const id = this.leaseIdOf(runId);
    const rec = id === undefined ? undefined : this.files.read(id);
    // Compare even when the run is unknown so timing does not say which runs exist.
    const want = Buffer.from(rec?.tokenHash ?? '0'.repeat(64), 'hex');
    const got = Buffer.from(hashToken(token), 'hex');
    if (!rec || want.length !== got.length || !timingSafeEqual(want, got) || rec.runId !== runId) return err(denied);
    return this.chainLive(rec);
  }

  private chainLive(rec: LeaseRecord): Result<LeaseRecord> {
    return chainLive(this.files, rec, this.now());
  }

  get(id: string): LeaseRecord | undefined {
    return this.files.read(id);
  }

  byRunId(runId: string): LeaseRecord | undefined {
    const id = this.leaseIdOf(runId);
    return id === undefined ? undefined : this.files.read(id);
  }

  /**
   * A run's latest lease id, from the index as this store holds it — every broker call asks,
   * and a run's pointer moves only by an issue of its own supervisor, this store — read again
   * (the index file, not every record) when the run is not in it.
   */
  private leaseIdOf(runId: string): string | undefined {
    const id = (this.#index ?? this.index()).byRun.get(runId);
    if (id !== undefined) return id;
    this.#index = undefined;
    return this.index().byRun.get(runId);
  }

  list(): LeaseRecord[] {
    return this.files.all();
  }

  /** Lease files that are not valid records: treated as no lease (fail closed), listed for the operator. */
  unreadable(): string[] {
    return this.files.unreadable();
  }

  /** The lease and its ancestors, up to the root lease (self first). */
  lineage(id: string): LeaseRecord[] {
    return lineageOf(this.files, id);
  }

  /** Every lease under `id` (not including it), breadth-first. */
  descendants(id: string): LeaseRecord[] {
    // Breadth-first through the index's children, each record read and checked.
    const kids = this.index().children;
    const out: LeaseRecord[] = [];
    const seen = new Set([id]);
    for (let frontier = [id]; frontier.length > 0; ) {
      const next: string[] = [];
      for (const p of frontier) {
        for (const c of kids.get(p) ?? []) {
          if (seen.has(c)) continue;
          seen.add(c);
          const rec = this.files.read(c);
          if (rec && rec.parentLeaseId === p) (out.push(rec), next.push(c));
        }
      }
      frontier = next;
    }
    return out;
  }

  /** Revokes a lease and its whole subtree; returns the records this call revoked. */
  revoke(id: string, by: string, reason?: string): Result<LeaseRecord[]> {
    if (!LEASE_ID_RE.test(id)) return err(new BrigError('lease_not_found', `no lease ${JSON.stringify(id)}`));
    const target = this.files.read(id);
    if (!target) return err(new BrigError('lease_not_found', `no lease ${id}`));
    const at = new Date(this.now()).toISOString();
    // brig's own reasons for a run's end (`run_completed`, `run_requeued`): the lease is released,
    // not taken away; the ledger says which (an operator's free-text reason never enters it).
    const released = by === 'system' && reason !== undefined && RUN_END_REASON.test(reason) ? reason : undefined;
    const revoked: LeaseRecord[] = [];
    for (const rec of [target, ...this.descendants(id)]) {
      if (rec.revoked) continue;
      const next: LeaseRecord = { ...rec, revoked: { by, at, ...(reason ? { reason } : {}) } };
      this.files.write(next);
      revoked.push(next);
      this.ledger.append({ type: 'lease.revoked', leaseId: rec.id, runId: rec.runId, rootRunId: rec.rootRunId, by, cascadeFrom: id, ...(released ? { released } : {}) });
    }
    // Revoked records move no pointer of the index: only the directory's mtime is this store's.
    if (revoked.length > 0 && this.#index) this.#index.dirMtime = this.files.dirMtime();
    this.revocations.announce(revoked, by);
    return ok(revoked);
  }

  /**
   * Announces revokes written by another process (`brig lease revoke` while a daemon runs)
   * to this store's onRevoked listeners. Returns a stop function.
   */
  watchRevocations(intervalMs = 5000, timers?: ScanTimers): () => void {
    return this.revocations.watch(intervalMs, timers);
  }

  /** Called after every revoke with the records it revoked (the supervisor ends those runs). */
  onRevoked(cb: RevokedListener): () => void {
    return this.revocations.onRevoked(cb);
  }
}

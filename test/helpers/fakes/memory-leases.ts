import { randomBytes } from 'node:crypto';
import type { Capability, Limits } from '../../../src/lease/types.js';
import { BrigError, err, ok, type Result } from '../../../src/util/errors.js';
import type { BrokerHandle, BrokerPort, LeaseGrant, LeaseIssue, LeasePort } from '../../../src/runs/ports.js';

export const ROOT_LIMITS: Limits = {
  cpu: 1, memoryMb: 256, pids: 128, diskMb: 1024, timeoutMs: 600_000, maxSteps: 100, tokens: 0, costUsd: 0, resultBytes: 64 << 20, maxChildren: 5, maxDepth: 3,
};

/** An in-memory LeasePort: child caps ⊆ parent caps, limits min(parent, requested); one live lease per run, as the store. */
export class MemoryLeases implements LeasePort {
  readonly leases = new Map<string, LeaseGrant & { parent: string | null; revoked: boolean; runId: string }>();
  readonly #subs = new Set<(id: string, by: string) => void>();
  rootCaps: Capability[] = ['spawn', 'exec', 'steer', 'kill'];
  rootLimits: Limits = ROOT_LIMITS;
  /** The clock a grant's expiry is counted on (a test with a manual clock sets it too). */
  now: () => number = Date.now;

  async issue(req: LeaseIssue): Promise<Result<LeaseGrant, BrigError>> {
    const parent = req.parentLeaseId ? this.leases.get(req.parentLeaseId) : undefined;
    if (req.parentLeaseId && (!parent || parent.revoked)) return err(new BrigError('lease_expired', 'parent lease revoked'));
    if ([...this.leases.values()].some((l) => l.runId === req.runId && !l.revoked)) return err(new BrigError('invalid_input', `run ${req.runId} already holds a lease`));
    const base = parent ? parent.caps : this.rootCaps;
    const caps = req.caps ? req.caps.filter((c) => base.includes(c)) : [...base];
    const limits = { ...(parent?.limits ?? this.rootLimits), ...(req.limits ?? {}) };
    const g: LeaseGrant = { leaseId: `l-${randomBytes(6).toString('hex')}`, token: randomBytes(24).toString('hex'), caps, limits, expiresAt: new Date(this.now() + 3600_000).toISOString() };
    this.leases.set(g.leaseId, { ...g, parent: req.parentLeaseId, revoked: false, runId: req.runId });
    return ok(g);
  }
  async revoke(leaseId: string, by = 'system'): Promise<void> {
    const l = this.leases.get(leaseId);
    if (!l || l.revoked) return;
    l.revoked = true;
    for (const s of this.#subs) s(leaseId, by);
    for (const c of this.leases.values()) if (c.parent === leaseId) await this.revoke(c.leaseId, by);
  }
  async revokeRun(runId: string, by = 'system'): Promise<void> {
    for (const l of [...this.leases.values()]) if (l.runId === runId && !l.revoked) await this.revoke(l.leaseId, by);
  }
  onRevoked(cb: (id: string, by: string) => void): () => void {
    this.#subs.add(cb);
    return () => this.#subs.delete(cb);
  }
  byToken(token: string): (LeaseGrant & { revoked: boolean }) | undefined {
    return [...this.leases.values()].find((l) => l.token === token);
  }
}

/** A broker twin with no socket: tests call the supervisor's childCalls table directly (helpers/child-call.ts). */
export class NullBroker implements BrokerPort {
  readonly open = new Set<string>();
  async openRun(o: { runId: string; dir: string }): Promise<BrokerHandle> {
    this.open.add(o.runId);
    return { socketPath: `${o.dir}/broker.sock`, close: async () => void this.open.delete(o.runId) };
  }
}

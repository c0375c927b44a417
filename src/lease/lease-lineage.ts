import { BrigError, err, ok, type Result } from '../util/errors.js';
import type { LeaseFiles } from './lease-files.js';
import { leaseLive } from './lease-state.js';
import type { LeaseRecord } from './types.js';

/**
 * A lease's family, read from the records on disk: its ancestors up to the root (its
 * descendants are the store's index), and whether the whole chain is live. A lease is live
 * only while it and every ancestor are: the revoke cascade marks descendants, but a revoke
 * racing an issue in another process must still end the child. An ancestor that is missing or unreadable
 * cannot be shown unrevoked, so the lease is not live (fail closed).
 */

/** The lease and its ancestors, up to the root lease (self first). */
export function lineageOf(files: LeaseFiles, id: string): LeaseRecord[] {
  const out: LeaseRecord[] = [];
  const seen = new Set<string>();
  let cur = files.read(id);
  while (cur && !seen.has(cur.id)) {
    seen.add(cur.id);
    out.push(cur);
    cur = cur.parentLeaseId ? files.read(cur.parentLeaseId) : undefined;
  }
  return out;
}

export function chainLive(files: LeaseFiles, rec: LeaseRecord, nowMs: number): Result<LeaseRecord> {
  const chain = lineageOf(files, rec.id);
  for (const anc of chain) {
    const live = leaseLive(anc, nowMs);
    if (!live.ok) return live;
  }
  const top = chain[chain.length - 1] ?? rec;
  if (top.parentLeaseId !== null) {
    return err(new BrigError('lease_expired', `lease ${rec.id} has a missing or unreadable ancestor ${top.parentLeaseId}`, { data: { leaseId: rec.id } }));
  }
  return ok(rec);
}

import { createHash } from 'node:crypto';
import { BrigError, err, ok, type Result } from '../util/errors.js';
import type { LeaseRecord } from './types.js';

export function hashToken(token: string): string {
  return createHash('sha256').update(token).digest('hex');
}

/** Valid = not revoked and not past its expiry. */
export function leaseLive(rec: LeaseRecord, nowMs: number): Result<LeaseRecord> {
  if (rec.revoked) return err(new BrigError('lease_expired', `lease ${rec.id} was revoked by ${rec.revoked.by}`, { data: { leaseId: rec.id } }));
  if (nowMs >= Date.parse(rec.expiresAt)) return err(new BrigError('lease_expired', `lease ${rec.id} expired at ${rec.expiresAt}`, { data: { leaseId: rec.id } }));
  return ok(rec);
}

/** `live`, `revoked` or `expired`: what the operator sees. */
export function leaseState(rec: LeaseRecord, nowMs: number): 'live' | 'revoked' | 'expired' {
  if (rec.revoked) return 'revoked';
  return nowMs >= Date.parse(rec.expiresAt) ? 'expired' : 'live';
}

import type { SupervisorSettings } from './types.js';

/**
 * Timeout arithmetic, pure. Run timeout = min(max_steps × perStepTimeout, maxRunTimeout),
 * further narrowed by what the request and the lease allow: a limit only ever shrinks.
 */
export function runTimeoutMs(
  s: Pick<SupervisorSettings, 'perStepTimeoutMs' | 'maxRunTimeoutMs'>,
  maxSteps: number,
  requested?: number,
  leaseTimeoutMs?: number,
): number {
  const candidates = [maxSteps * s.perStepTimeoutMs, s.maxRunTimeoutMs];
  if (requested !== undefined) candidates.push(requested);
  if (leaseTimeoutMs !== undefined) candidates.push(leaseTimeoutMs);
  return Math.max(1, Math.min(...candidates));
}

export function effectiveMaxSteps(s: Pick<SupervisorSettings, 'defaultMaxSteps'>, requested?: number, leaseMaxSteps?: number): number {
  const c = [requested ?? s.defaultMaxSteps];
  if (leaseMaxSteps !== undefined && leaseMaxSteps > 0) c.push(leaseMaxSteps);
  return Math.max(1, Math.min(...c));
}

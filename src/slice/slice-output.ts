/** What every slice verb returns, and the small helpers that shape it. */
import type { SliceOutput, SliceVerb } from '../protocol/index.js';
import { BrigError } from '../util/errors.js';

export type { SliceOutput, SliceVerb } from '../protocol/index.js';

export function out(ref: string, verb: SliceVerb, o: Omit<SliceOutput, 'ref' | 'verb' | 'note'> & { cutByBytes?: boolean }): SliceOutput {
  const { cutByBytes, ...rest } = o;
  const note =
    o.more > 0 || cutByBytes
      ? `${o.moreExact ? '' : 'at least '}${o.more.toLocaleString('en-US')} more ${o.unit}${cutByBytes ? ' (cut at the byte cap)' : ''}`
      : undefined;
  return { ref, verb, ...rest, ...(note ? { note } : {}) };
}

export function clamp(n: number, lo: number, hi: number): number {
  return Math.max(lo, Math.min(hi, Math.floor(n)));
}

export function intArg(v: number, name: string, min: number): number {
  if (!Number.isSafeInteger(v) || v < min) throw new BrigError('invalid_input', `${name} must be an integer ≥ ${min}`);
  return v;
}

/** What every slice verb returns, and the small helpers that shape it. */
import { BrigError } from '../util/errors.js';

export type SliceVerb = 'read' | 'grep' | 'jq' | 'sql' | 'jsonpath';

export interface SliceOutput {
  ref: string;
  verb: SliceVerb;
  /** read/grep/jq: the slice as text (base64 for a binary read). */
  text?: string;
  encoding?: 'utf8' | 'base64';
  /** sql/jsonpath */
  columns?: string[];
  rows?: unknown[][];
  returned: number;
  unit: 'bytes' | 'lines' | 'matches' | 'rows' | 'values';
  /** How many more units there were past the slice; a lower bound when moreExact is false. */
  more: number;
  moreExact: boolean;
  /** "1,234 more lines" when cut, absent otherwise. */
  note?: string;
}

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

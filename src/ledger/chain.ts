import { createHash } from 'node:crypto';

/** The ledger line format version; pino writes it first on every line. */
export const LEDGER_FORMAT = 1;

/** JSON with keys sorted at every level: the bytes a line's hash covers. */
export function canonicalJson(value: unknown): string {
  if (Array.isArray(value)) return `[${value.map(canonicalJson).join(',')}]`;
  if (value && typeof value === 'object') {
    const o = value as Record<string, unknown>;
    return `{${Object.keys(o)
      .filter((k) => o[k] !== undefined)
      .sort()
      .map((k) => `${JSON.stringify(k)}:${canonicalJson(o[k])}`)
      .join(',')}}`;
  }
  return JSON.stringify(value);
}

export function sha256Hex(s: string): string {
  return createHash('sha256').update(s).digest('hex');
}

/** The `prev` of a segment's first line: binds the chain to the segment's file name. */
export function genesisHash(segmentName: string): string {
  return sha256Hex(`brig-ledger-v${LEDGER_FORMAT}\n${segmentName}`);
}

/** The hash of a line: over its canonical form without the `hash` field. */
export function lineHash(line: Record<string, unknown>): string {
  const { hash: _drop, ...rest } = line;
  return sha256Hex(canonicalJson(rest));
}

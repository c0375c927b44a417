import { mkdirSync, writeFileSync } from 'node:fs';
import type { ParamsOf } from '../protocol/index.js';

/**
 * How a child sends its result: a value whose JSON fits a broker line travels inline
 * (`result {value}`); a bigger one is written to the workspace and announced as
 * `result {spooled: {bytes}}`, and the supervisor collects the file (bounded by the lease's
 * resultBytes) as the run's `result.json` ResultRef. Shared by the script SDK and the agent.
 */

/** A result whose JSON is over this many bytes does not fit one broker line. */
export const RESULT_INLINE_BYTES = 48 * 1024;
export const RESULT_SPOOL = { dir: '/workspace/.brig/result', file: '/workspace/.brig/result/value.json' } as const;

export type ResultSpool = { dir: string; file: string };

export async function sendResult(call: (method: 'result', params: ParamsOf<'result'>) => Promise<unknown>, value: unknown, spool: ResultSpool = RESULT_SPOOL): Promise<void> {
  const json = JSON.stringify(value ?? null);
  const bytes = Buffer.byteLength(json);
  if (bytes <= RESULT_INLINE_BYTES) {
    await call('result', { value: value ?? null });
    return;
  }
  mkdirSync(spool.dir, { recursive: true, mode: 0o755 });
  writeFileSync(spool.file, json, { mode: 0o644 });
  await call('result', { spooled: { bytes } });
}

/**
 * Error helpers over the one error type (protocol/errors.ts): turning anything thrown into a
 * BrigError, scrubbing host paths from messages, and each face's mapping of a code's kind
 * (CLI exit code, HTTP status).
 */
import { ERROR_CODES, isErrorCode, type ErrorCode, type ErrorKind } from '../protocol/index.js';
import { BrigError } from '../protocol/index.js';
import { isNoSpace } from './disk-space.js';

export type { ErrorCode, ErrorKind } from '../protocol/index.js';
export { ERROR_CODES, isErrorCode } from '../protocol/index.js';
export { BrigError, isBrigError, ok, err, type Result, type WireError } from '../protocol/index.js';

/**
 * Turns anything thrown into a BrigError; unknown errors become `internal`. A file system with
 * no space left (ENOSPC, EDQUOT) is `storage_full`: the operator's to fix, never a brig bug.
 */
export function toBrigError(e: unknown): BrigError {
  if (e instanceof BrigError) return e;
  if (isNoSpace(e)) return new BrigError('storage_full', `no space left on the file system of brig's home (${(e as { syscall?: string }).syscall ?? 'write'})`, { cause: e });
  if (e && typeof e === 'object' && 'code' in e && isErrorCode((e as { code: unknown }).code)) {
    const o = e as { code: ErrorCode; message?: string; hint?: string };
    return new BrigError(o.code, o.message ?? o.code, o.hint ? { hint: o.hint } : {});
  }
  const msg = e instanceof Error ? e.message : String(e);
  return new BrigError('internal', msg, { cause: e });
}

/** An absolute host path (two or more components): what a message must not carry past the host. */
const HOST_PATH = /(?:\/[A-Za-z0-9._@+-]+){2,}\/?/g;

/**
 * A message with host paths replaced by their last component (`…/run.json`): unknown errors
 * (a Node fs error, an engine reply) name paths under $BRIG_HOME that a child, a parent or a
 * record must not see. The original error stays the `cause`, for the host's own logs.
 */
export function scrubHostPaths(text: string): string {
  return text.replace(HOST_PATH, (p) => `…/${p.replace(/\/$/, '').split('/').pop()}`);
}

/**
 * How an error is kept on a run record and handed to a parent: a code of the catalog and a
 * message. brig's own errors keep their words; anything else is `internal` (or the code it
 * carries) with its host paths scrubbed.
 */
export function publicError(e: unknown): { code: ErrorCode; message: string } {
  const be = toBrigError(e);
  return { code: be.code, message: e instanceof BrigError ? be.message : scrubHostPaths(be.message) };
}

/**
 * CLI exit code per kind. With the run outcomes the commands return (src/cli/exit-codes.ts)
 * this is the one table docs/cli.md shows; a test pins the two together. 1 is left to "the
 * run failed" and a brig bug is 70 (sysexits' EX_SOFTWARE), so a script can tell the work
 * failing from brig breaking.
 */
export function exitCodeFor(kind: ErrorKind): number {
  switch (kind) {
    case 'invalid': return 2;
    case 'denied': return 3;
    case 'not_found': return 4;
    case 'conflict': return 5;
    case 'limit': return 6;
    case 'unavailable': return 7;
    case 'corrupt': return 10;
    case 'internal': return 70;
  }
}

/** HTTP status per kind. */
/** The HTTP status of an error code: its own when the catalog names one (405, 413), else its kind's. */
export function httpStatusOf(code: ErrorCode): number {
  const entry: { kind: ErrorKind; http?: number } = ERROR_CODES[code];
  return entry.http ?? httpStatusFor(entry.kind);
}

export function httpStatusFor(kind: ErrorKind): number {
  switch (kind) {
    case 'invalid': return 400;
    case 'denied': return 403;
    case 'not_found': return 404;
    case 'conflict': return 409;
    case 'limit': return 429;
    case 'unavailable': return 503;
    case 'corrupt': return 500;
    case 'internal': return 500;
  }
}

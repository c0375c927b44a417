import { ERROR_CODES, type ErrorCode, type ErrorKind, isErrorCode } from './error-codes.js';

export type { ErrorCode, ErrorKind } from './error-codes.js';
export { ERROR_CODES, isErrorCode } from './error-codes.js';

/** The one error class: a stable code, typed data, a hint saying what to do next. */
export class BrigError extends Error {
  override readonly name = 'BrigError';
  readonly code: ErrorCode;
  readonly data: Readonly<Record<string, unknown>>;
  readonly hint: string;

  constructor(
    code: ErrorCode,
    message: string,
    opts: { data?: Record<string, unknown>; hint?: string; cause?: unknown } = {},
  ) {
    super(message, opts.cause === undefined ? undefined : { cause: opts.cause });
    this.code = code;
    this.data = Object.freeze({ ...(opts.data ?? {}) });
    this.hint = opts.hint ?? ERROR_CODES[code].hint;
  }

  get kind(): ErrorKind {
    return ERROR_CODES[this.code].kind;
  }

  /** The wire form: what every face shows. Never carries a stack or a cause chain. */
  toJSON(): { code: ErrorCode; message: string; hint: string; data?: Record<string, unknown> } {
    const out: { code: ErrorCode; message: string; hint: string; data?: Record<string, unknown> } = {
      code: this.code,
      message: this.message,
      hint: this.hint,
    };
    if (Object.keys(this.data).length > 0) out.data = { ...this.data };
    return out;
  }
}

export function isBrigError(e: unknown, code?: ErrorCode): e is BrigError {
  return e instanceof BrigError && (code === undefined || e.code === code);
}

/** Turns anything thrown into a BrigError; unknown errors become `internal`. */
export function toBrigError(e: unknown): BrigError {
  if (e instanceof BrigError) return e;
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

/** Expected refusals are values, not throws. */
export type Result<T, E = BrigError> = { ok: true; value: T } | { ok: false; error: E };
export const ok = <T>(value: T): Result<T, never> => ({ ok: true, value });
export const err = <E>(error: E): Result<never, E> => ({ ok: false, error });

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

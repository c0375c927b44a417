/**
 * The one error type every face, the core and the child's clients share: a stable code of
 * the catalog (error-codes.ts), typed data, a hint saying what to do next. Expected refusals
 * are `Result` values, not throws. No imports: the API client and the in-jail runtime can
 * name it without loading anything of the core.
 */
import { ERROR_CODES, type ErrorCode, type ErrorKind } from './error-codes.js';

/** The wire form of an error: what every face shows (never a stack or a cause chain). */
export interface WireError {
  code: ErrorCode;
  message: string;
  hint: string;
  data?: Record<string, unknown>;
}

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

  toJSON(): WireError {
    const out: WireError = { code: this.code, message: this.message, hint: this.hint };
    if (Object.keys(this.data).length > 0) out.data = { ...this.data };
    return out;
  }
}

export function isBrigError(e: unknown, code?: ErrorCode): e is BrigError {
  return e instanceof BrigError && (code === undefined || e.code === code);
}

/** Expected refusals are values, not throws. */
export type Result<T, E = BrigError> = { ok: true; value: T } | { ok: false; error: E };
export const ok = <T>(value: T): Result<T, never> => ({ ok: true, value });
export const err = <E>(error: E): Result<never, E> => ({ ok: false, error });

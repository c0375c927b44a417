/** Engine failures in brig's codes: a socket that does not answer is `engine_unavailable`. */
import { BrigError, type ErrorCode } from '../../util/errors.js';

const UNREACHABLE = new Set(['ECONNREFUSED', 'ENOENT', 'EACCES', 'ECONNRESET', 'EPIPE', 'ETIMEDOUT', 'EHOSTUNREACH']);

export function isUnreachable(e: unknown): boolean {
  const code = (e as { code?: unknown } | null)?.code;
  return typeof code === 'string' && UNREACHABLE.has(code);
}

export function statusOf(e: unknown): number | undefined {
  const s = (e as { statusCode?: unknown } | null)?.statusCode;
  return typeof s === 'number' ? s : undefined;
}

export function engineError(e: unknown, code: ErrorCode, message: string): BrigError {
  if (e instanceof BrigError) return e;
  if (isUnreachable(e)) return new BrigError('engine_unavailable', `the Docker engine does not answer: ${(e as Error).message}`, { cause: e });
  const detail = (e as { json?: { message?: string } } | null)?.json?.message ?? (e as Error | null)?.message ?? String(e);
  return new BrigError(code, `${message}: ${detail}`, { cause: e, data: { status: statusOf(e) } });
}

/** A catch handler that swallows the given HTTP statuses (already gone, already stopping). */
export function ignoreStatus(...statuses: number[]): (e: unknown) => void {
  return (e) => {
    if (!statuses.includes(statusOf(e) ?? -1)) throw engineError(e, 'jail_failed', 'the engine refused a cleanup step');
  };
}

/**
 * When to retry a model call and how long to wait: Stainless's numbers (the OpenAI and
 * Anthropic SDKs'), so brig behaves towards a provider as its own SDK would. Pure.
 */

/** Retried statuses: timeout, conflict, rate limit, any server error. */
export const RETRY_STATUS = (s: number): boolean => s === 408 || s === 409 || s === 429 || s >= 500;
const RETRY_AFTER_MAX_MS = 60_000;

/** Stainless's backoff: initial × 2^retry, capped, minus up to 25 % jitter. */
export function backoffMs(retry: number, b: { initialMs: number; maxMs: number }, random: () => number = Math.random): number {
  return Math.min(b.initialMs * 2 ** retry, b.maxMs) * (1 - random() * 0.25);
}

/** The server's wait from `retry-after-ms` or `retry-after` (seconds or an HTTP date), when sane (0–60 s). */
export function retryAfterMs(headers: Record<string, string | string[] | undefined>, now = Date.now()): number | undefined {
  const one = (k: string) => {
    const v = headers[k];
    return Array.isArray(v) ? v[0] : v;
  };
  const ms = one('retry-after-ms');
  let wait: number | undefined;
  if (ms !== undefined && ms.trim() !== '' && Number.isFinite(Number(ms))) wait = Number(ms);
  else {
    const ra = one('retry-after');
    if (ra !== undefined && ra.trim() !== '') {
      if (Number.isFinite(Number(ra))) wait = Number(ra) * 1000;
      else {
        const at = Date.parse(ra);
        if (Number.isFinite(at)) wait = at - now;
      }
    }
  }
  return wait !== undefined && wait >= 0 && wait <= RETRY_AFTER_MAX_MS ? wait : undefined;
}

/**
 * How a model call fails: always `model_unavailable`, with a content-free `data.reason`, and
 * with every secret (the API key) scrubbed from the message and from the cause — which is a
 * scrubbed copy (name, code, message), never the raw undici error with its sockets and fields.
 */
import { BrigError } from '../util/errors.js';

export type FailReason =
  | 'connect' // no answer: refused, reset, DNS, TLS
  | 'status' // a non-2xx status
  | 'idle_timeout' // no byte within idleTimeoutMs
  | 'timeout' // the whole call ran past timeoutMs
  | 'aborted' // the caller's signal
  | 'too_large' // the reply passed maxReplyBytes
  | 'disconnected' // the stream broke after content began
  | 'malformed' // the reply is not the wire format
  | 'stream_error'; // the provider sent an error event mid-stream

/** Every secret replaced by `[redacted]`. */
export function scrubSecrets(text: string, secrets: readonly string[]): string {
  let out = text;
  for (const s of secrets) if (s.length > 0) out = out.split(s).join('[redacted]');
  return out;
}

/** A provider's own error words from a JSON error body (OpenAI and Anthropic shapes), short. */
export function providerErrorText(body: string): string | undefined {
  try {
    const j = JSON.parse(body) as { error?: { message?: unknown; type?: unknown } | string; message?: unknown };
    const e = j.error;
    const msg = typeof e === 'string' ? e : typeof e?.message === 'string' ? e.message : typeof j.message === 'string' ? j.message : undefined;
    return msg === undefined ? undefined : msg.replace(/\s+/g, ' ').slice(0, 300);
  } catch {
    return undefined;
  }
}

/** A model_unavailable error whose message and cause carry no secret (the cause is a scrubbed copy). */
export function failure(reason: FailReason, message: string, secrets: readonly string[], extra: Record<string, unknown> = {}, cause?: unknown): BrigError {
  const opts: { data: Record<string, unknown>; cause?: unknown } = { data: { reason, ...extra } };
  if (cause !== undefined) {
    const c = cause as { name?: unknown; message?: unknown; code?: unknown } | null;
    const copy = new Error(scrubSecrets(typeof c?.message === 'string' ? c.message : String(cause), secrets));
    copy.name = typeof c?.name === 'string' ? c.name : 'Error';
    if (typeof c?.code === 'string') (copy as Error & { code?: string }).code = c.code;
    opts.cause = copy;
  }
  return new BrigError('model_unavailable', scrubSecrets(message, secrets), opts);
}

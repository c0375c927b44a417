/**
 * An OpenAI-compatible chat-completions client over undici.
 * Guarantees: the API key is sent only as a bearer header to the configured base URL, never
 * logged and never put in an error; replies are validated (zod) before use; a timeout aborts
 * the request. Fails as `model_unavailable` (network, status, timeout, malformed reply).
 */
import { request } from 'undici';
import { z } from 'zod';
import { BrigError } from '../util/errors.js';
import type { ChatRequest, ChatResponse, ModelProvider } from './types.js';

const ReplySchema = z.object({
  model: z.string().optional(),
  choices: z
    .array(z.object({ message: z.object({ content: z.string().nullable() }) }))
    .min(1),
  usage: z.object({ prompt_tokens: z.number().int().nonnegative(), completion_tokens: z.number().int().nonnegative() }).optional(),
});

export interface OpenAICompatibleOptions {
  /** e.g. `https://api.openai.com/v1` or `http://127.0.0.1:8080/v1`. */
  baseUrl: string;
  apiKey: string;
  model: string;
  timeoutMs?: number;
  /** Cap on the reply body we are willing to read (default 2 MiB). */
  maxReplyBytes?: number;
}

export class OpenAICompatibleProvider implements ModelProvider {
  readonly name: string;
  private readonly url: string;

  constructor(private readonly opts: OpenAICompatibleOptions) {
    this.name = `openai-compatible:${opts.model}`;
    this.url = `${opts.baseUrl.replace(/\/+$/, '')}/chat/completions`;
  }

  async chat(req: ChatRequest): Promise<ChatResponse> {
    const timeoutMs = req.timeoutMs ?? this.opts.timeoutMs ?? 60_000;
    const signal = req.signal ? AbortSignal.any([req.signal, AbortSignal.timeout(timeoutMs)]) : AbortSignal.timeout(timeoutMs);
    const body = {
      model: this.opts.model,
      messages: req.messages,
      ...(req.maxTokens !== undefined ? { max_tokens: req.maxTokens } : {}),
      ...(req.temperature !== undefined ? { temperature: req.temperature } : {}),
      ...(req.json ? { response_format: { type: 'json_object' } } : {}),
    };
    let status: number;
    let text: string;
    try {
      const res = await request(this.url, {
        method: 'POST',
        headers: { 'content-type': 'application/json', authorization: `Bearer ${this.opts.apiKey}` },
        body: JSON.stringify(body),
        signal,
        headersTimeout: timeoutMs,
        bodyTimeout: timeoutMs,
      });
      status = res.statusCode;
      text = await readCapped(res.body, this.opts.maxReplyBytes ?? 2 * 1024 * 1024);
    } catch (e) {
      throw new BrigError('model_unavailable', `the model endpoint did not answer (${e instanceof Error ? e.name : 'error'})`, { cause: e });
    }
    if (status < 200 || status >= 300) throw new BrigError('model_unavailable', `the model endpoint answered HTTP ${status}`, { data: { status } });
    let parsed: z.infer<typeof ReplySchema>;
    try {
      parsed = ReplySchema.parse(JSON.parse(text));
    } catch {
      throw new BrigError('model_unavailable', 'the model endpoint sent a malformed reply');
    }
    return {
      content: parsed.choices[0]!.message.content ?? '',
      model: parsed.model ?? this.opts.model,
      usage: { promptTokens: parsed.usage?.prompt_tokens ?? 0, completionTokens: parsed.usage?.completion_tokens ?? 0 },
    };
  }
}

async function readCapped(body: AsyncIterable<Buffer | Uint8Array> & { destroy?: () => void }, max: number): Promise<string> {
  const parts: Buffer[] = [];
  let n = 0;
  for await (const chunk of body) {
    n += chunk.length;
    if (n > max) {
      body.destroy?.();
      throw new Error('reply too large');
    }
    parts.push(Buffer.from(chunk));
  }
  return Buffer.concat(parts).toString('utf8');
}

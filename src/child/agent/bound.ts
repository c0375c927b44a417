/**
 * Keeping what reaches the model, and each broker line, bounded. A tool result over the
 * agent's toolResultMaxChars is spilled whole to a workspace file and replaced by a notice
 * with the path, the head (60%) and the tail (40%) — errors tend to sit at the end. Every
 * message is also held under a JSON byte size, because the line limit counts encoded bytes
 * (a control character is six of them) and `llm.append` takes at most 48 KiB a content.
 */
import fs from 'node:fs';
import path from 'node:path';
import type { LlmMessage } from './types.js';

/** Largest JSON-encoded message the loop sends; leaves room for the envelope in a 64 KiB line. */
export const MAX_MESSAGE_JSON_BYTES = 44 * 1024;
/** Largest sum of JSON-encoded messages in one `llm.append` / `llm.reset` line. */
export const MAX_BATCH_JSON_BYTES = 48 * 1024;
/** The contract's cap on messages a call. */
export const MAX_BATCH_MESSAGES = 64;

const jsonBytes = (v: unknown): number => Buffer.byteLength(JSON.stringify(v));

/** The first 60% and the last 40% of `max` chars, with how much was left out in between. */
export function headTail(text: string, max: number): string {
  if (text.length <= max) return text;
  const marker = (n: number) => `\n[… ${n} chars elided …]\n`;
  const room = Math.max(0, max - marker(text.length).length);
  const head = Math.floor(room * 0.6);
  const tail = room - head;
  return text.slice(0, head) + marker(text.length - head - tail) + (tail > 0 ? text.slice(text.length - tail) : '');
}

/** Writes spill files `<dir>/<n>.txt`, numbered for the run; never overwrites one. */
export class Spiller {
  #n = 0;
  constructor(readonly dir: string) {}

  write(text: string): string {
    fs.mkdirSync(this.dir, { recursive: true, mode: 0o755 });
    for (;;) {
      const file = path.join(this.dir, `${++this.#n}.txt`);
      try {
        fs.writeFileSync(file, text, { flag: 'wx', mode: 0o644 });
        return file;
      } catch (e) {
        if ((e as NodeJS.ErrnoException).code !== 'EEXIST') throw e;
      }
    }
  }
}

/** Shrinks `text` (head+tail) until its JSON encoding fits `maxBytes`. */
export function fitJson(text: string, maxBytes: number): string {
  let out = text;
  let max = text.length;
  while (jsonBytes(out) > maxBytes && max > 64) {
    max = Math.floor(max * 0.75);
    out = headTail(text, max);
  }
  return out;
}

/** A tool's output as the model gets it: whole when small, else spilled with head and tail. */
export function boundResult(text: string, maxChars: number, spiller: Spiller): string {
  if (text.length <= maxChars && jsonBytes(text) <= MAX_MESSAGE_JSON_BYTES) return text;
  let where: string;
  try {
    where = `the whole output is in ${spiller.write(text)} (read it with read_file offset/limit, or grep_files)`;
  } catch (e) {
    where = `it could not be spilled to a file (${(e as Error).message})`;
  }
  const notice = `[output is ${text.length} chars, over the ${maxChars}-char limit; ${where}; showing the head and the tail]\n`;
  const body = headTail(text, Math.max(200, maxChars - notice.length));
  return fitJson(notice + body, MAX_MESSAGE_JSON_BYTES);
}

/** Messages cut into lines the broker takes: ≤ 48 KiB of JSON and ≤ 64 messages each. */
export function batches(messages: LlmMessage[]): LlmMessage[][] {
  const out: LlmMessage[][] = [];
  let cur: LlmMessage[] = [];
  let bytes = 0;
  for (const m of messages) {
    const b = jsonBytes(m);
    if (cur.length > 0 && (bytes + b > MAX_BATCH_JSON_BYTES || cur.length >= MAX_BATCH_MESSAGES)) {
      out.push(cur);
      cur = [];
      bytes = 0;
    }
    cur.push(m);
    bytes += b;
  }
  if (cur.length) out.push(cur);
  return out;
}

/** A message held under the per-message JSON size (content cut head+tail when needed). */
export function fitMessage<M extends LlmMessage>(m: M): M {
  if (jsonBytes(m) <= MAX_MESSAGE_JSON_BYTES) return m;
  const overhead = jsonBytes({ ...m, content: '' });
  return { ...m, content: fitJson(m.content, MAX_MESSAGE_JSON_BYTES - overhead) };
}

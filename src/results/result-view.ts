/**
 * A bounded view of a result of any size: its head, its tail and its error lines, read from
 * the stored file in one streaming pass whose memory does not grow with the file. This is what
 * condensation works from when a result is too big to hold (a spooled value of 100 KB or
 * 10 GB alike): Level 3 cuts it 60/40, Level 2 feeds the model a bounded head + tail + the
 * error lines of the middle. Never a placeholder sentence in place of the result.
 *
 * A value that is one JSON string is viewed as that string, decoded. An agent's spooled value
 * is `{"answer": "…", …}` (result-spool.ts writes `answer` first):
 * its answer string is decoded as it streams (JSON escapes included, split across chunks or
 * not), so the view is of the text the agent wrote, not of its JSON encoding; the few bytes
 * after the answer (`files`, `partial`, `endReason`) are parsed on their own.
 */
import fs from 'node:fs';
import { StringDecoder } from 'node:string_decoder';

/** One line of the text that looks like an error, with where it starts (in chars). */
export interface ViewErrorLine {
  at: number;
  line: string;
}

/**
 * Part of a text: `head` is its first chars, `tail` its last, `chars` its whole length;
 * `errors` are error-looking lines anywhere in it (bounded). When head and tail together are
 * the whole text, the view is the text.
 */
export interface TextView {
  chars: number;
  head: string;
  tail: string;
  errors: ViewErrorLine[];
}

/**
 * Whether a line reads as an error report, not prose that names one ("error correction",
 * "error rates" are not errors): an upper-case log level, a line that starts with an error
 * word, a `…Error:` / `…Exception:` or `error:` / `failed:` label, or a system's error phrase.
 */
const ERROR_LEVEL = /\b(ERROR|FATAL|PANIC|CRITICAL)\b/;
const ERROR_SHAPE =
  /^\s*(error|fatal|panic|exception|traceback|failed|failure)\b|\b\w*(Error|Exception)\s*:|\b(error|failed|failure|refused|denied)\s*:|\b(permission denied|connection refused|no such file or directory|segmentation fault|out of memory)\b|\bexit(ed)? (with )?(code|status) [1-9]/i;
/** A word every error line holds: lines without one (most of a large result) skip the two tests above. */
const ERROR_WORD = /error|fatal|panic|critical|exception|traceback|fail|refused|denied|no such file|segmentation|out of memory|exit/i;
export function isErrorLine(line: string): boolean {
  return ERROR_WORD.test(line) && (ERROR_LEVEL.test(line) || ERROR_SHAPE.test(line));
}
/** Error lines kept per view, and the chars of each. */
export const VIEW_MAX_ERRORS = 200;
export const VIEW_ERROR_LINE_CHARS = 300;
/** How much of a very long line is looked at for an error word. */
const LINE_WINDOW = 4000;

/** The view of a text held whole (head = tail = the text). */
export function viewOf(text: string): TextView {
  const errors: ViewErrorLine[] = [];
  let at = 0;
  for (const line of text.split('\n')) {
    if (errors.length < VIEW_MAX_ERRORS && isErrorLine(line.slice(0, LINE_WINDOW))) errors.push({ at, line: line.trim().slice(0, VIEW_ERROR_LINE_CHARS) });
    at += line.length + 1;
  }
  return { chars: text.length, head: text, tail: text, errors };
}

/** Whether the view holds the whole text. */
export function isWhole(v: TextView): boolean {
  return v.head.length >= v.chars;
}

/** Collects a stream of text into a TextView: bounded head, rolling tail, error lines. */
class ViewSink {
  chars = 0;
  head = '';
  #tail: string[] = [];
  #tailLen = 0;
  #line = '';
  #lineAt = 0;
  #lineFull = false;
  errors: ViewErrorLine[] = [];

  constructor(
    private readonly headChars: number,
    private readonly tailChars: number,
  ) {}

  push(s: string): void {
    if (s.length === 0) return;
    if (this.head.length < this.headChars) this.head += s.slice(0, this.headChars - this.head.length);
    this.#tail.push(s);
    this.#tailLen += s.length;
    if (this.#tailLen > 2 * this.tailChars + 65_536) this.#trimTail();
    let from = 0;
    for (;;) {
      const nl = s.indexOf('\n', from);
      const piece = nl < 0 ? s.slice(from) : s.slice(from, nl);
      if (!this.#lineFull) {
        this.#line += piece.slice(0, LINE_WINDOW - this.#line.length);
        this.#lineFull = this.#line.length >= LINE_WINDOW;
      }
      if (nl < 0) break;
      this.#endLine();
      this.#lineAt = this.chars + nl + 1;
      from = nl + 1;
    }
    this.chars += s.length;
  }

  #endLine(): void {
    if (this.errors.length < VIEW_MAX_ERRORS && isErrorLine(this.#line)) this.errors.push({ at: this.#lineAt, line: this.#line.trim().slice(0, VIEW_ERROR_LINE_CHARS) });
    this.#line = '';
    this.#lineFull = false;
  }

  #trimTail(): void {
    const all = this.#tail.join('');
    const keep = all.slice(Math.max(0, all.length - this.tailChars));
    this.#tail = [keep];
    this.#tailLen = keep.length;
  }

  view(): TextView {
    if (this.#line.length > 0) this.#endLine();
    this.#trimTail();
    return { chars: this.chars, head: this.head, tail: this.#tail[0] ?? '', errors: this.errors };
  }
}

/** Decodes a JSON string's body as it streams; reports the raw text after its closing quote. */
class JsonStringDecoder {
  #esc = '';
  done = false;
  after = '';

  constructor(private readonly out: (s: string) => void) {}

  /** Feeds raw JSON text (inside the string); once the string closed, the rest goes to `after` (bounded). */
  feed(raw: string): void {
    if (this.done) {
      if (this.after.length < 65_536) this.after += raw.slice(0, 65_536 - this.after.length);
      return;
    }
    // Plain runs are sliced whole (the next `\\` or `"` found by one regex scan from where it stands); only escapes go char by char.
    const parts: string[] = [];
    let i = 0;
    while (i < raw.length) {
      if (this.#esc) {
        this.#esc += raw[i++]!;
        const e = this.#esc;
        if (e[1] === 'u') {
          if (e.length < 6) continue;
          parts.push(String.fromCharCode(parseInt(e.slice(2), 16) || 0xfffd));
        } else {
          parts.push(({ n: '\n', t: '\t', r: '\r', b: '\b', f: '\f' } as Record<string, string>)[e[1]!] ?? e[1]!);
        }
        this.#esc = '';
        continue;
      }
      SPECIAL.lastIndex = i;
      const m = SPECIAL.exec(raw);
      const at = m ? m.index : raw.length;
      if (at > i) parts.push(raw.slice(i, at));
      if (!m) break;
      if (m[0] === '"') {
        this.out(parts.join(''));
        this.done = true;
        this.after = raw.slice(at + 1, at + 1 + 65_536);
        return;
      }
      this.#esc = '\\';
      i = at + 1;
    }
    this.out(parts.join(''));
  }
}

/** Where a JSON string's plain run ends: an escape or its closing quote. */
const SPECIAL = /["\\]/g;

const ANSWER_PREFIX = '{"answer":"';

export interface FileView {
  view: TextView;
  /** For an agent's `{answer, …}` value: what followed the answer (files, partial, endReason). */
  answerRest?: Record<string, unknown>;
}

/**
 * Streams a stored result file into a view of at most `headChars` + `tailChars` chars plus
 * its error lines. An agent value (`{"answer":"…`) is viewed as its decoded answer.
 */
export async function viewFile(file: string, o: { headChars: number; tailChars: number }): Promise<FileView> {
  const sink = new ViewSink(o.headChars, o.tailChars);
  const decoder = new StringDecoder('utf8');
  // `answer`: an agent's {"answer": …}; `string`: a value that is one JSON string; else the raw text.
  const st: { mode: 'start' | 'raw' | 'answer' | 'string' } = { mode: 'start' };
  let pending = '';
  const answer = new JsonStringDecoder((s) => sink.push(s));
  const feed = (s: string) => {
    if (st.mode === 'start') {
      pending += s;
      if (pending.length < ANSWER_PREFIX.length && ANSWER_PREFIX.startsWith(pending)) return;
      st.mode = pending.startsWith(ANSWER_PREFIX) ? 'answer' : pending.startsWith('"') ? 'string' : 'raw';
      s = st.mode === 'answer' ? pending.slice(ANSWER_PREFIX.length) : st.mode === 'string' ? pending.slice(1) : pending;
      pending = '';
    }
    if (st.mode === 'answer' || st.mode === 'string') answer.feed(s);
    else sink.push(s);
  };
  for await (const chunk of fs.createReadStream(file, { highWaterMark: 256 * 1024 })) feed(decoder.write(chunk as Buffer));
  feed(decoder.end());
  if (st.mode === 'start') sink.push(pending);
  const view = sink.view();
  if (st.mode !== 'answer') return { view };
  let answerRest: Record<string, unknown> | undefined;
  try {
    const rest = JSON.parse(`{"_":0${answer.after}`) as Record<string, unknown>;
    delete rest._;
    answerRest = rest;
  } catch {
    answerRest = undefined;
  }
  return { view, ...(answerRest ? { answerRest } : {}) };
}

/**
 * An agent's answer as text, streamed out of its stored `{"answer": …}` value (decoded, in
 * bounded memory); nothing when the file is not an agent's value. What `answer.txt` is made of:
 * its lines are the answer's, so grep and read by line drill into it as into any text.
 */
export async function* answerText(file: string): AsyncGenerator<Buffer> {
  const decoder = new StringDecoder('utf8');
  const out: string[] = [];
  const answer = new JsonStringDecoder((s) => out.push(s));
  let pending = '';
  let started = false;
  for await (const chunk of fs.createReadStream(file, { highWaterMark: 256 * 1024 })) {
    let s = decoder.write(chunk as Buffer);
    if (!started) {
      pending += s;
      if (pending.length < ANSWER_PREFIX.length && ANSWER_PREFIX.startsWith(pending)) continue;
      if (!pending.startsWith(ANSWER_PREFIX)) return;
      started = true;
      s = pending.slice(ANSWER_PREFIX.length);
    }
    answer.feed(s);
    if (out.length > 0) yield Buffer.from(out.splice(0).join(''), 'utf8');
    if (answer.done) return;
  }
}

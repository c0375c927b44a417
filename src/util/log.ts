/**
 * The daemon's log: structured JSON lines (pino) with levels, to stderr by default or to a
 * file that rotates by size.
 *
 * Guarantees: what is logged is chosen field by field by its callers (a method, a route
 * template, a status, ids, enums, counts, durations): never a bearer token, a model key or task
 * text — and, as a second line of defence, fields of those names are censored wherever they
 * appear. A rotating file keeps `keep` older files (`brig.log.1` newest) and never grows past
 * `maxBytes` before it rotates. Writes are synchronous: a crash loses no line already logged.
 */
import fs from 'node:fs';
import pino, { type Logger } from 'pino';
import { isNoSpace } from './disk-space.js';

export const LOG_LEVELS = ['fatal', 'error', 'warn', 'info', 'debug', 'trace', 'silent'] as const;
export type LogLevel = (typeof LOG_LEVELS)[number];
export type { Logger } from 'pino';

export interface LogOptions {
  level?: LogLevel;
  /** Log to this file (rotating) instead of stderr. */
  file?: string;
  /** Rotate the file when it would pass this size (default 10 MiB). */
  maxBytes?: number;
  /** Rotated files kept (default 5). */
  keep?: number;
  /** Anything with write(line): tests. */
  stream?: { write(s: string): void };
}

/** Field names that are never logged, whoever passes them, at any depth. */
const CENSORED = new Set(['token', 'bearer', 'apikey', 'api_key', 'authorization', 'task', 'text', 'script', 'steer']);
/** Nesting past this is not walked but replaced: a log line is never a deep structure. */
const MAX_DEPTH = 8;

/**
 * A copy of `v` with every censored field (names compared without case) replaced, in plain
 * objects and arrays at any depth; anything deeper than MAX_DEPTH or seen twice is cut.
 */
function censor(v: unknown, depth: number, seen: Set<object>): unknown {
  if (v === null || typeof v !== 'object') return v;
  if (depth >= MAX_DEPTH || seen.has(v)) return '[cut]';
  const proto = Object.getPrototypeOf(v) as unknown;
  if (!Array.isArray(v) && proto !== Object.prototype && proto !== null) return v; // Error, Date, …: pino's serializers
  seen.add(v);
  const out: unknown = Array.isArray(v)
    ? v.map((x) => censor(x, depth + 1, seen))
    : Object.fromEntries(Object.entries(v).map(([k, x]) => [k, CENSORED.has(k.toLowerCase()) ? '[redacted]' : censor(x, depth + 1, seen)]));
  seen.delete(v);
  return out;
}

/** A file that rotates by size: brig.log → brig.log.1 → … → brig.log.<keep>. */
export class RotatingFile {
  #fd: number;
  #size: number;

  constructor(
    readonly file: string,
    private readonly maxBytes = 10 * 1024 * 1024,
    private readonly keep = 5,
  ) {
    this.#fd = fs.openSync(file, 'a', 0o600);
    this.#size = fs.fstatSync(this.#fd).size;
  }

  /** Lines a full disk refused since the last one written (a log must never stop the daemon). */
  #dropped = 0;

  write(s: string): void {
    try {
      if (this.#dropped > 0) this.#put(`${JSON.stringify({ level: 'warn', time: new Date().toISOString(), name: 'brig', dropped: this.#dropped, msg: 'log lines dropped: no space left on the log file\'s file system' })}\n`);
      this.#dropped = 0;
      this.#put(s);
    } catch (e) {
      if (!isNoSpace(e)) throw e;
      this.#dropped++;
    }
  }

  #put(s: string): void {
    const n = Buffer.byteLength(s);
    if (this.#size > 0 && this.#size + n > this.maxBytes) this.#rotate();
    // A write cut short by a full disk throws on its next call: the line is counted as dropped.
    fs.writeSync(this.#fd, s);
    this.#size += n;
  }

  #rotate(): void {
    fs.closeSync(this.#fd);
    for (let i = this.keep - 1; i >= 1; i--) {
      if (fs.existsSync(`${this.file}.${i}`)) fs.renameSync(`${this.file}.${i}`, `${this.file}.${i + 1}`);
    }
    if (this.keep > 0) fs.renameSync(this.file, `${this.file}.1`);
    else fs.rmSync(this.file, { force: true });
    this.#fd = fs.openSync(this.file, 'a', 0o600);
    this.#size = 0;
  }

  close(): void {
    fs.closeSync(this.#fd);
  }
}

/** stderr, written synchronously; a line it cannot take (stderr sent to a full disk) is dropped, never thrown into the daemon. */
function stderrDestination(): ReturnType<typeof pino.destination> {
  const dest = pino.destination({ fd: 2, sync: true });
  dest.on('error', () => {});
  return dest;
}

export function createLog(o: LogOptions = {}): Logger {
  const stream = o.stream ?? (o.file ? new RotatingFile(o.file, o.maxBytes, o.keep) : stderrDestination());
  return pino(
    {
      level: o.level ?? 'info',
      base: { name: 'brig' },
      timestamp: pino.stdTimeFunctions.isoTime,
      formatters: { level: (label) => ({ level: label }), log: (o) => censor(o, 0, new Set()) as Record<string, unknown> },
    },
    stream,
  );
}

/** A log that writes nothing (library use, tests that do not look). */
export function silentLog(): Logger {
  return pino({ level: 'silent' });
}

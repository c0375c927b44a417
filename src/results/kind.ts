import { PREVIEW_BYTES, type ResultKind } from './types.js';
import { utf8Boundary } from '../util/utf8.js';

export { utf8Boundary };

/**
 * Pure kind detection: the name's extension proposes, the first bytes decide. Anything with a
 * NUL or invalid UTF-8 in its head is binary whatever its name says.
 */
export function sniffKind(name: string, head: Buffer): ResultKind {
  if (looksBinary(head)) return 'binary';
  const ext = (/\.([A-Za-z0-9]+)$/.exec(name)?.[1] ?? '').toLowerCase();
  const text = head.toString('utf8');
  const trimmed = text.trimStart();
  if (ext === 'csv' || ext === 'tsv') return 'csv';
  if (ext === 'jsonl' || ext === 'ndjson') return 'jsonl';
  if (trimmed.startsWith('{') || trimmed.startsWith('[')) {
    if (isJsonLines(trimmed)) return 'jsonl';
    if (ext === 'json' || ext === '' || ext === 'txt' || ext === 'out') return 'json';
  }
  if (ext === 'json') return 'json';
  return 'text';
}

/** Two or more lines that each parse as a JSON object or array → JSON lines. */
function isJsonLines(text: string): boolean {
  const lines = text.split('\n');
  // The last line of a head may be cut: judge only complete ones.
  const complete = lines.slice(0, -1).filter((l) => l.trim().length > 0);
  if (complete.length < 2) return false;
  return complete.slice(0, 8).every((l) => {
    const t = l.trim();
    if (!(t.startsWith('{') || t.startsWith('['))) return false;
    try {
      JSON.parse(t);
      return true;
    } catch {
      return false;
    }
  });
}

export function looksBinary(head: Buffer): boolean {
  if (head.includes(0)) return true;
  const cut = utf8Boundary(head, head.length);
  try {
    new TextDecoder('utf-8', { fatal: true }).decode(head.subarray(0, cut));
    return false;
  } catch {
    return true;
  }
}

/** ≤ 2048 bytes of the head as text, never splitting a character. Binary gets none. */
export function previewOf(head: Buffer, kind: ResultKind, limit = PREVIEW_BYTES): string {
  if (kind === 'binary') return '';
  return head.subarray(0, utf8Boundary(head, limit)).toString('utf8');
}

/** Column names from a CSV header line (quotes honoured, no multi-line headers). */
export function csvColumns(headerLine: string): string[] {
  const sep = headerLine.includes('\t') && !headerLine.includes(',') ? '\t' : ',';
  const out: string[] = [];
  let cur = '';
  let q = false;
  for (let i = 0; i < headerLine.length; i++) {
    const c = headerLine[i]!;
    if (q) {
      if (c === '"' && headerLine[i + 1] === '"') {
        cur += '"';
        i++;
      } else if (c === '"') q = false;
      else cur += c;
    } else if (c === '"') q = true;
    else if (c === sep) {
      out.push(cur.trim());
      cur = '';
    } else cur += c;
  }
  out.push(cur.replace(/\r$/, '').trim());
  return out;
}

/** Keys of the first JSON-lines object, when it is one. */
export function jsonlColumns(firstLine: string): string[] | undefined {
  try {
    const v: unknown = JSON.parse(firstLine);
    return v && typeof v === 'object' && !Array.isArray(v) ? Object.keys(v) : undefined;
  } catch {
    return undefined;
  }
}

/** Column names a ref's metadata keeps (a child chooses them: they are bounded like any of its text). */
export const MAX_COLUMNS = 64;
export const MAX_COLUMN_CHARS = 64;

/** The first MAX_COLUMNS names, each cut to MAX_COLUMN_CHARS; `columnCount` says how many there were. */
function boundColumns(names: string[]): { columns: string[]; columnCount?: number } {
  const columns = names.slice(0, MAX_COLUMNS).map((c) => (c.length > MAX_COLUMN_CHARS ? `${c.slice(0, MAX_COLUMN_CHARS - 1)}…` : c));
  return names.length > MAX_COLUMNS ? { columns, columnCount: names.length } : { columns };
}

/** rows/columns for the kinds that have them, from the head and the line count (columns bounded). */
export function shapeOf(kind: ResultKind, head: Buffer, lines: number): { rows?: number; columns?: string[]; columnCount?: number } {
  const firstNl = head.indexOf(10);
  const firstLine = firstNl === -1 ? head.toString('utf8') : head.subarray(0, firstNl).toString('utf8');
  if (kind === 'jsonl') {
    const columns = jsonlColumns(firstLine);
    return columns ? { rows: lines, ...boundColumns(columns) } : { rows: lines };
  }
  if (kind === 'csv') {
    if (firstNl === -1 && head.length >= 65536) return { rows: Math.max(0, lines - 1) };
    const names = csvColumns(firstLine);
    if (csvHasHeader(head)) return { rows: Math.max(0, lines - 1), ...boundColumns(names) };
    return { rows: lines, ...boundColumns(names.map((_, i) => `column${i}`)) };
  }
  return {};
}

/** Lines of the head the header decision looks at. */
const HEADER_SAMPLE_LINES = 50;
const NUMERIC = /^[+-]?(\d+(\.\d*)?|\.\d+)([eE][+-]?\d+)?$/;

/**
 * Whether a CSV's first line is a header (pure, from the head only). The ref's rows/columns and
 * the sql verb's view both follow this one decision (the view reads the file with `header=` set
 * from it), so what the metadata says is what SQL sees. A column is typed when every non-empty
 * value below the first line is a number; the first line is data when every typed column's
 * first value is a number too (or empty) and there is at least one typed column — DuckDB's
 * sniffer rule, made explicit. With no line below it, the first line is data when it holds a
 * number. Columns of text only: a header (as DuckDB assumes).
 */
export function csvHasHeader(head: Buffer): boolean {
  const text = head.toString('utf8');
  const lines = text.split('\n');
  // A head cut mid-line: its last line is not whole.
  if (head.length >= 65536) lines.pop();
  const rows = lines.map((l) => l.replace(/\r$/, '')).filter((l) => l.length > 0).slice(0, HEADER_SAMPLE_LINES).map(csvColumns);
  const [first, ...rest] = rows;
  if (!first) return true;
  const isNum = (v: string | undefined) => v !== undefined && NUMERIC.test(v);
  if (rest.length === 0) return !first.some((v) => isNum(v));
  let typed = 0;
  for (let c = 0; c < first.length; c++) {
    const below = rest.map((r) => r[c]).filter((v): v is string => v !== undefined && v !== '');
    if (below.length === 0 || !below.every(isNum)) continue;
    typed++;
    if (first[c] !== '' && !isNum(first[c])) return true;
  }
  return typed === 0;
}

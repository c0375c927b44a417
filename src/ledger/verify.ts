import fs from 'node:fs';
import path from 'node:path';
import { LEDGER_FORMAT, checkLink, genesisHash, lineHash } from './chain.js';

export interface LedgerBreak {
  file: string;
  /** 1-based line number in that file. */
  line: number;
  why: string;
}

export interface LedgerReport {
  ok: boolean;
  files: number;
  lines: number;
  /** The first bad line, when not ok. */
  bad?: LedgerBreak;
  /** Segments with no `ledger.closed` line: still being written, a crash, or a cut tail. */
  open: string[];
}

function verifySegment(file: string): { lines: number; bad?: LedgerBreak; closed: boolean } {
  const text = fs.readFileSync(file, 'utf8');
  const rows = text.split('\n');
  if (rows[rows.length - 1] === '') rows.pop();
  let prev = genesisHash(path.basename(file));
  let closed = false;
  for (let i = 0; i < rows.length; i++) {
    const at = (why: string) => ({ lines: i, bad: { file, line: i + 1, why }, closed: false });
    if (closed) return at('a line after ledger.closed (appended to a closed segment)');
    let obj: unknown;
    try {
      obj = JSON.parse(rows[i]!);
    } catch {
      return at('not valid JSON (line edited or cut)');
    }
    if (!obj || typeof obj !== 'object' || Array.isArray(obj)) return at('not a JSON object');
    const line = obj as Record<string, unknown>;
    if (line.v !== LEDGER_FORMAT) return at(`unknown format version ${JSON.stringify(line.v)}`);
    if (line.seq !== i) return at(`seq ${JSON.stringify(line.seq)} where ${i} was expected (a line was deleted, inserted or reordered)`);
    if (line.prev !== prev) return at('prev does not match the previous line\'s hash (a line before it was deleted or changed)');
    if (line.hash !== lineHash(line)) return at('hash does not match the line\'s content (line edited)');
    if (i === 0 && line.link !== undefined) {
      const broken = checkLink(path.dirname(file), line.link);
      if (broken) return at(broken);
    }
    if (i === 0 && line.links !== undefined) {
      if (!Array.isArray(line.links)) return at('links is not a list');
      for (const l of line.links) {
        const broken = checkLink(path.dirname(file), l);
        if (broken) return at(broken);
      }
    }
    prev = line.hash as string;
    if (line.type === 'ledger.closed') closed = true;
  }
  return { lines: rows.length, closed };
}

/** Checks every segment of a ledger directory; reports the first bad line (file + line + why). */
export function verifyLedger(dir: string): LedgerReport {
  const files = fs.existsSync(dir) ? fs.readdirSync(dir).filter((f) => f.endsWith('.jsonl')).sort().map((f) => path.join(dir, f)) : [];
  let lines = 0;
  const open: string[] = [];
  for (const f of files) {
    const r = verifySegment(f);
    lines += r.lines;
    if (r.bad) return { ok: false, files: files.length, lines, bad: r.bad, open };
    if (!r.closed) open.push(f);
  }
  return { ok: true, files: files.length, lines, open };
}

/** The segment files of a ledger directory, for queries. */
export function ledgerFiles(dir: string): string[] {
  return fs.existsSync(dir) ? fs.readdirSync(dir).filter((f) => f.endsWith('.jsonl')).sort().map((f) => path.join(dir, f)) : [];
}

/**
 * Where leases are kept: one JSON file per lease under $BRIG_HOME/leases, the record the broker
 * and the supervisor check every call and every child against.
 *
 * Guarantees: a lease id is `ls_` + 20 random hex digits, checked before it becomes a file
 * name (never a path); a record is written atomically (temp + fsync + rename + directory
 * fsync), 0600 in a 0700 directory; a record is returned only when it parses against the
 * strict schema and its id is the file's. Threat: a lease file changed, cut or planted on disk
 * to widen a run's capabilities or limits, and an id used to reach outside the directory.
 * Trusts: the file system's permissions (the supervisor's user owns the directory). Fails
 * closed: an unreadable or invalid record reads as no lease — the run holding it is refused —
 * and is listed (`unreadable`) for the operator, never repaired or guessed.
 *
 * Beside the records, `index.jsonl` keeps each record's facts that never change — its id, run,
 * parent and issue time — one line per lease, appended when it is issued: what the store finds
 * leases by (its run's latest, a parent's children) without reading every record (~40 ms in a
 * home of 3,000). It is a cache, never an authority: the directory's list of records is; a
 * record with no line (a crash between the two writes, a home from before the index) is read
 * and its line written again, a line with no record is ignored, a line that does not parse is
 * skipped; and every use reads the record itself and checks it (lease-store.ts).
 */
import fs from 'node:fs';
import path from 'node:path';
import { randomBytes } from 'node:crypto';
import { writeFileAtomicSync } from '../util/atomic-file.js';
import { DEFAULT_ROOT_DISK_MB, LeaseRecordSchema, type LeaseRecord } from './types.js';
import { byCodeUnits } from '../protocol/index.js';

/** Lease ids are `ls_` + 20 hex digits: safe as file names, never a path. */
export const LEASE_ID_RE = /^ls_[0-9a-f]{20}$/;

export function newLeaseId(): string {
  return `ls_${randomBytes(10).toString('hex')}`;
}

/** A record's facts that never change, as the index keeps them. */
export interface LeaseFact {
  id: string;
  runId: string;
  parentLeaseId: string | null;
  issuedAt: string;
}

/** The index's file in the leases directory (not a record: records end in `.json`). */
export const LEASE_INDEX = 'index.jsonl';

const factOf = (r: LeaseRecord): LeaseFact => ({ id: r.id, runId: r.runId, parentLeaseId: r.parentLeaseId, issuedAt: r.issuedAt });
const factLine = (f: LeaseFact) => `${JSON.stringify({ id: f.id, run: f.runId, parent: f.parentLeaseId, at: f.issuedAt })}\n`;
const byIssue = (a: LeaseFact, b: LeaseFact) => byCodeUnits(a.issuedAt, b.issuedAt) || byCodeUnits(a.id, b.id);

/** One index line as a fact, or undefined when it is not one (skipped: its record is read instead). */
function parseFact(line: string): LeaseFact | undefined {
  try {
    const o = JSON.parse(line) as { id?: unknown; run?: unknown; parent?: unknown; at?: unknown };
    if (typeof o.id !== 'string' || !LEASE_ID_RE.test(o.id) || typeof o.run !== 'string' || typeof o.at !== 'string') return undefined;
    if (o.parent !== null && (typeof o.parent !== 'string' || !LEASE_ID_RE.test(o.parent))) return undefined;
    return { id: o.id, runId: o.run, parentLeaseId: o.parent, issuedAt: o.at };
  } catch {
    return undefined;
  }
}

/** One JSON file per lease under the leases dir; written atomically (util/atomic-file.ts: temp + fsync + rename + directory fsync), 0600. */
export class LeaseFiles {
  constructor(readonly dir: string) {
    fs.mkdirSync(dir, { recursive: true, mode: 0o700 });
  }

  private file(id: string): string {
    return path.join(this.dir, `${id}.json`);
  }

  write(rec: LeaseRecord): void {
    writeFileAtomicSync(this.file(rec.id), JSON.stringify(rec, null, 2) + '\n', { mode: 0o600 });
  }

  /** A new record: written, then its facts appended to the index (a crash between is healed by facts()). */
  add(rec: LeaseRecord): void {
    this.write(rec);
    try {
      fs.appendFileSync(path.join(this.dir, LEASE_INDEX), factLine(factOf(rec)), { mode: 0o600 });
    } catch {
      // The next facts() reads this record and writes its line again.
    }
  }

  /**
   * Every record's facts, in issue order: the index's lines for the records the directory
   * holds, and the records it has no line for read (then written into a fresh index).
   */
  facts(): LeaseFact[] {
    const ids = new Set(this.ids());
    const known = new Map<string, LeaseFact>();
    let text = '';
    try {
      text = fs.readFileSync(path.join(this.dir, LEASE_INDEX), 'utf8');
    } catch {
      // none yet: every record is read below
    }
    for (const line of text.split('\n')) {
      const f = line ? parseFact(line) : undefined;
      if (f && ids.has(f.id) && !known.has(f.id)) known.set(f.id, f);
    }
    let healed = false;
    for (const id of ids) {
      if (known.has(id)) continue;
      const rec = this.read(id);
      if (rec) (known.set(id, factOf(rec)), (healed = true));
    }
    const out = [...known.values()].sort(byIssue);
    if (healed) {
      try {
        writeFileAtomicSync(path.join(this.dir, LEASE_INDEX), out.map(factLine).join(''), { mode: 0o600 });
      } catch {
        // read again next time
      }
    }
    return out;
  }

  /** The record, or undefined when absent, unreadable or not a valid record (fail closed). */
  read(id: string): LeaseRecord | undefined {
    if (!LEASE_ID_RE.test(id)) return undefined;
    let text: string;
    try {
      text = fs.readFileSync(this.file(id), 'utf8');
    } catch {
      return undefined;
    }
    try {
      const raw = JSON.parse(text) as { limits?: Record<string, unknown> };
      // A record written before diskMb existed: its jail had no disk cap, this is the ceiling it reads as.
      if (raw.limits && raw.limits.diskMb === undefined) raw.limits.diskMb = DEFAULT_ROOT_DISK_MB;
      const parsed = LeaseRecordSchema.safeParse(raw);
      return parsed.success && parsed.data.id === id ? parsed.data : undefined;
    } catch {
      return undefined;
    }
  }

  /** The directory's mtime (ns resolution where the filesystem has it): changes with every record written. */
  dirMtime(): string {
    try {
      return String(fs.statSync(this.dir, { bigint: true }).mtimeNs);
    } catch {
      return '';
    }
  }

  ids(): string[] {
    return fs
      .readdirSync(this.dir)
      .filter((f) => f.endsWith('.json'))
      .map((f) => f.slice(0, -'.json'.length))
      .filter((id) => LEASE_ID_RE.test(id));
  }

  /** Ids whose file exists but is not a valid record (operators must see these, not lose them). */
  unreadable(): string[] {
    return this.ids().filter((id) => this.read(id) === undefined);
  }

  all(): LeaseRecord[] {
    return this.ids()
      .map((id) => this.read(id))
      .filter((r): r is LeaseRecord => r !== undefined)
      .sort((a, b) => byCodeUnits(a.issuedAt, b.issuedAt) || byCodeUnits(a.id, b.id));
  }
}

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

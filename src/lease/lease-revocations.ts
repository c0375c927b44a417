import fs from 'node:fs';
import path from 'node:path';
import type { LeaseFiles } from './lease-files.js';
import type { LeaseRecord } from './types.js';

/**
 * Who hears about a revoke: this process's revokes and, through `watch`, those another
 * process wrote (`brig lease revoke` while a daemon runs). Each revoked lease is announced
 * once; a listener's failure never undoes or hides the revoke (the ledger has it).
 */
export type RevokedListener = (revoked: LeaseRecord[], by: string) => void;

/** The periodic scan's timer, injected so a test runs the scan by hand. */
export interface ScanTimers {
  setInterval(fn: () => void, ms: number): unknown;
  clearInterval(handle: unknown): void;
}

const realScanTimers: ScanTimers = {
  setInterval: (fn, ms) => setInterval(fn, ms).unref(),
  clearInterval: (h) => clearInterval(h as NodeJS.Timeout),
};

export class Revocations {
  private readonly listeners = new Set<RevokedListener>();
  /** Revoked lease ids already announced to listeners (by this process or the watcher). */
  private readonly announced = new Set<string>();

  constructor(private readonly files: LeaseFiles) {}

  announce(revoked: LeaseRecord[], by: string): void {
    const fresh = revoked.filter((r) => !this.announced.has(r.id));
    if (fresh.length === 0) return;
    for (const r of fresh) this.announced.add(r.id);
    for (const cb of this.listeners) {
      try {
        cb(fresh, by);
      } catch {
        // A listener's failure must not undo or hide the revoke; the ledger has it.
      }
    }
  }

  /**
   * Announces revokes written by another process (`brig lease revoke` while a daemon runs)
   * to this store's onRevoked listeners: a change in the leases directory is read at once,
   * and a periodic scan catches anything the watch missed — only when the directory changed
   * since the last (every record is written by a rename into it, which moves its mtime): a
   * scan reads every lease, ~40 ms in a home of 3,000, every 5 s before. Returns a stop function.
   */
  watch(intervalMs = 5000, timers: ScanTimers = realScanTimers): () => void {
    let seen = this.files.dirMtime();
    for (const r of this.files.all()) if (r.revoked) this.announced.add(r.id);
    const check = (rec: LeaseRecord | undefined) => {
      if (rec?.revoked && !this.announced.has(rec.id)) this.announce([rec], rec.revoked.by);
    };
    const scan = () => {
      // Taken before the read: a record written while it reads moves the mtime again for the
      // next scan. An mtime under 2 s old may not have moved for a write in the same clock tick
      // (file times take the kernel's coarse clock): the scan reads then whatever it says.
      const mtime = this.files.dirMtime();
      if (mtime === seen && mtime !== '' && Date.now() - Number(BigInt(mtime) / 1_000_000n) > 2000) return;
      seen = mtime;
      // A timer's throw would end the process: a leases directory that cannot be read (removed
      // under a running daemon) is no revoke to announce now; the next scan tries again.
      let all: LeaseRecord[];
      try {
        all = this.files.all();
      } catch {
        return;
      }
      const recs = all.filter((r) => r.revoked && !this.announced.has(r.id));
      // Group by who revoked, parents first (all() is in issue order).
      for (const by of new Set(recs.map((r) => r.revoked!.by))) this.announce(recs.filter((r) => r.revoked!.by === by), by);
    };
    let watcher: fs.FSWatcher | undefined;
    try {
      watcher = fs.watch(this.files.dir, (_event, name) => {
        const file = typeof name === 'string' ? path.basename(name) : '';
        if (!file.endsWith('.json')) return;
        try {
          check(this.files.read(file.slice(0, -'.json'.length)));
        } catch {
          // unreadable now: the periodic scan sees it when it can
        }
      });
      watcher.on('error', () => {});
      watcher.unref();
    } catch {
      // No inotify: the periodic scan alone still announces every revoke.
    }
    const timer = timers.setInterval(scan, intervalMs);
    return () => {
      timers.clearInterval(timer);
      watcher?.close();
    };
  }

  /** Called after every revoke with the records it revoked (the supervisor ends those runs). */
  onRevoked(cb: RevokedListener): () => void {
    this.listeners.add(cb);
    return () => this.listeners.delete(cb);
  }
}

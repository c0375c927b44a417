/**
 * Gives an isolated DuckDB helper (uid 65534, no capabilities) the files of the request it
 * serves, and takes away those it no longer needs.
 *
 * Guarantees: for each file of a request the pool (root) bind-mounts it read-only, nosuid,
 * nodev, noexec onto an empty root-owned file under the helper's `in/` directory, in the
 * helper's own mount namespace only (`mount -N`), and rewrites the request to those paths
 * (keeping the base name, so DuckDB's detection by extension is unchanged). Before a request
 * is sent, every mount of an earlier request it does not name (the same path and inode) is
 * detached (`umount -l`); after a reply they go within IDLE_MS anyway. So while it serves a
 * request a helper sees that request's files and no other, and between requests at most the
 * last one's, for at most IDLE_MS — files it was already given. Keeping them that long lets
 * the next query on the same ref (a drill-in) skip two execs, which from a large supervisor
 * are not cheap (fork copies its page tables: ≈ 7 ms at 150 MB RSS, ≈ 45 ms at 1 GB).
 * Threat: a helper taken over by a hostile query reading refs it was not asked about — it
 * cannot traverse `$BRIG_HOME` (0700) and sees only these mounts. Trusts: the caller's file
 * list (the slicer's own ref path, the ledger's segments). Fails closed: a file the helper
 * could not read, or a mount that fails, refuses the request; an unmount that fails kills the
 * helper (`onBroken`, or the caller on an `internal` ExposeError).
 */
import { execFile } from 'node:child_process';
import fs from 'node:fs';
import fsp from 'node:fs/promises';
import path from 'node:path';
import { promisify } from 'node:util';
import type { HelperRequest } from './helper-protocol.js';
import { HELPER_GID, HELPER_UID, MOUNT, UMOUNT } from './helper-isolation.js';

const run = promisify(execFile);
const EXEC = { env: {}, timeout: 10_000 };
/** Mounts made at once (a ledger query can name hundreds of segments). */
const PARALLEL = 8;

export type ExposeCode = 'query_failed' | 'internal';

export class ExposeError extends Error {
  constructor(
    readonly code: ExposeCode,
    message: string,
  ) {
    super(message);
  }
}

/** How long an idle helper keeps its last request's mounts. */
const IDLE_MS = 1000;

type Rewritten = Omit<HelperRequest, 'id'>;

interface Held {
  base: string;
  /** Host file → its mount point, with the inode it was when mounted. */
  at: Map<string, { point: string; id: string }>;
  points: string[];
}

/** Why uid/gid 65534 cannot read this file, or undefined. */
function unreadable(st: fs.Stats): string | undefined {
  if (!st.isFile()) return 'is not a regular file';
  const m = st.mode;
  const ok = m & 0o004 || (st.uid === HELPER_UID && m & 0o400) || (st.gid === HELPER_GID && m & 0o040);
  return ok ? undefined : `has mode 0${(m & 0o777).toString(8)}: the DuckDB helper runs as uid ${HELPER_UID} and reads only world-readable files`;
}

async function inBatches<T>(items: T[], fn: (t: T) => Promise<void>): Promise<PromiseSettledResult<void>[]> {
  const out: PromiseSettledResult<void>[] = [];
  for (let i = 0; i < items.length; i += PARALLEL) out.push(...(await Promise.allSettled(items.slice(i, i + PARALLEL).map(fn))));
  return out;
}

function firstLine(e: unknown): string {
  const err = e as { stderr?: string; message?: string };
  return (err.stderr || err.message || String(e)).trim().split('\n')[0] ?? '';
}

export class HelperMounts {
  private next = 0;
  private held: Held | undefined;
  /** A detach started by the idle timer; the next request waits for it. */
  private detaching: Promise<void> = Promise.resolve();
  private idle: NodeJS.Timeout | undefined;

  /**
   * `inDir`: root-owned, on the host and seen (read-only) by the helper; `nsPid`: a process in
   * its mount namespace; `onBroken`: kills the helper when an idle detach fails.
   */
  constructor(
    private readonly inDir: string,
    private readonly nsPid: number,
    private readonly onBroken: () => void,
  ) {}

  /** The request as the helper must see it; its files mounted, every other detached. */
  async expose(req: Rewritten): Promise<Rewritten> {
    clearTimeout(this.idle);
    await this.detaching;
    const files = [...new Set(req.views.flatMap((v) => v.files))];
    const ids: string[] = [];
    for (const [i, f] of files.entries()) {
      const st = await fsp.stat(f).catch(() => undefined);
      const why = st ? unreadable(st) : 'cannot be opened';
      if (why) throw new ExposeError('query_failed', `file ${i + 1} of this query ${why}`);
      ids.push(`${st!.dev}:${st!.ino}`);
    }
    const h = this.held;
    const same = h !== undefined && h.at.size === files.length && files.every((f, i) => h.at.get(f)?.id === ids[i]);
    if (!same) {
      try {
        await this.detach();
      } catch (e) {
        throw new ExposeError('internal', `could not take an earlier query's files from the helper: ${firstLine(e)}`);
      }
      this.held = await this.mountAll(files, ids);
    }
    const map = (f: string) => this.held!.at.get(f)?.point ?? f;
    return {
      ...req,
      views: req.views.map((v) => ({ ...v, files: v.files.map(map) })),
      fileArgs: Object.fromEntries(Object.entries(req.fileArgs).map(([k, v]) => [k, map(v)])),
    };
  }

  /** After the reply: the mounts go within IDLE_MS unless the next request needs them. */
  done(): void {
    clearTimeout(this.idle);
    this.idle = setTimeout(() => {
      this.detaching = this.detach().catch(() => this.onBroken());
    }, IDLE_MS).unref();
  }

  private async mountAll(files: string[], ids: string[]): Promise<Held> {
    const [mount] = [MOUNT];
    if (!mount) throw new ExposeError('internal', 'mount is needed to give an isolated helper its files');
    const base = path.join(this.inDir, String(this.next++));
    await fsp.mkdir(base, { mode: 0o711 });
    const held: Held = { base, at: new Map(), points: [] };
    for (const [i, f] of files.entries()) {
      // The file's own name (its extension tells a reader nothing brig relies on, but a reader's
      // error may name it), without glob characters: DuckDB would expand them, and this 0711
      // directory cannot be listed by the helper.
      const point = path.join(base, String(i), path.basename(f).replace(/[*?[\]]/g, '_'));
      await fsp.mkdir(path.dirname(point), { mode: 0o711 });
      await fsp.writeFile(point, '', { mode: 0o400, flag: 'wx' });
      held.at.set(f, { point, id: ids[i]! });
    }
    const results = await inBatches(files, async (f) => {
      const { point } = held.at.get(f)!;
      await run(mount, ['-N', String(this.nsPid), '--bind', '-o', 'ro,nosuid,nodev,noexec', f, point], EXEC);
      held.points.push(point);
    });
    const failed = results.find((r): r is PromiseRejectedResult => r.status === 'rejected');
    if (failed) {
      this.held = held;
      await this.detach().catch(() => undefined);
      throw new ExposeError('internal', `could not give the helper a file of this query: ${firstLine(failed.reason)}`);
    }
    return held;
  }

  /** Detaches the mounts held and removes their mount points; rejects when an unmount failed. */
  private async detach(): Promise<void> {
    const h = this.held;
    if (!h) return;
    const [umount] = [UMOUNT];
    if (!umount) throw new Error('umount is not available');
    try {
      for (let i = 0; i < h.points.length; i += 100) await run(umount, ['-N', String(this.nsPid), '-l', ...h.points.slice(i, i + 100)], EXEC);
      this.held = undefined;
    } finally {
      await fsp.rm(h.base, { recursive: true, force: true });
    }
  }
}

/**
 * Gives an isolated DuckDB helper (uid 65534, no capabilities) the files of ONE request, and
 * takes them away after it.
 *
 * Guarantees: for each file of the request the pool (root) bind-mounts it read-only, nosuid,
 * nodev, noexec onto an empty root-owned file under the helper's `in/` directory, in the
 * helper's own mount namespace only (`mount -N`), and rewrites the request to those paths
 * (keeping the base name, so DuckDB's detection by extension is unchanged). Afterwards the
 * mounts are detached (`umount -l`) before the helper serves anything else, so a helper can
 * never read a previous request's files. Threat: a helper taken over by a hostile query reading
 * refs it was not asked about — it cannot traverse `$BRIG_HOME` (0700) and sees only these
 * mounts. Trusts: the caller's file list (the slicer's own ref path, the ledger's segments).
 * Fails closed: a file the helper could not read, or a mount that fails, refuses the request;
 * an unmount that fails kills the helper (the caller does that).
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

export interface Exposed {
  /** The request as the helper must see it (its files at their bind-mount paths). */
  req: Omit<HelperRequest, 'id'>;
  /** Detaches the mounts and removes their mount points; rejects when an unmount failed. */
  release(): Promise<void>;
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

  /** `inDir`: root-owned, on the host and seen (read-only) by the helper; `nsPid`: a process in its mount namespace. */
  constructor(
    private readonly inDir: string,
    private readonly nsPid: number,
  ) {}

  async expose(req: Omit<HelperRequest, 'id'>): Promise<Exposed> {
    const [mount, umount] = [MOUNT, UMOUNT];
    if (!mount || !umount) throw new ExposeError('internal', 'mount and umount are needed to give an isolated helper its files');
    const files = [...new Set(req.views.flatMap((v) => v.files))];
    for (const [i, f] of files.entries()) {
      const st = await fsp.stat(f).catch(() => undefined);
      const why = st ? unreadable(st) : 'cannot be opened';
      if (why) throw new ExposeError('query_failed', `file ${i + 1} of this query ${why}`);
    }
    const base = path.join(this.inDir, String(this.next++));
    await fsp.mkdir(base, { mode: 0o711 });
    const at = new Map<string, string>();
    for (const [i, f] of files.entries()) {
      const point = path.join(base, String(i), path.basename(f));
      await fsp.mkdir(path.dirname(point), { mode: 0o711 });
      await fsp.writeFile(point, '', { mode: 0o400, flag: 'wx' });
      at.set(f, point);
    }
    const mounted: string[] = [];
    const results = await inBatches(files, async (f) => {
      const point = at.get(f)!;
      await run(mount, ['-N', String(this.nsPid), '--bind', '-o', 'ro,nosuid,nodev,noexec', f, point], EXEC);
      mounted.push(point);
    });
    const release = async () => {
      try {
        for (let i = 0; i < mounted.length; i += 100) await run(umount, ['-N', String(this.nsPid), '-l', ...mounted.slice(i, i + 100)], EXEC);
      } finally {
        await fsp.rm(base, { recursive: true, force: true });
      }
    };
    const failed = results.find((r): r is PromiseRejectedResult => r.status === 'rejected');
    if (failed) {
      await release().catch(() => undefined);
      throw new ExposeError('internal', `could not give the helper a file of this query: ${firstLine(failed.reason)}`);
    }
    const map = (f: string) => at.get(f) ?? f;
    return {
      req: {
        ...req,
        views: req.views.map((v) => ({ ...v, files: v.files.map(map) })),
        fileArgs: Object.fromEntries(Object.entries(req.fileArgs).map(([k, v]) => [k, map(v)])),
      },
      release,
    };
  }
}

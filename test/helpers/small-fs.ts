/**
 * A small real file system the test owns: an ext4 image (no blocks reserved for root, so a
 * root test fills it as any writer would) on a loop device, mounted on a fresh directory, for
 * running brig against a home that fills up. Needs root, mkfs.ext4 and a free loop device;
 * without them the test is skipped with the reason (a failure in CI). Every path cleans up:
 * t.after unmounts (lazily, so a process still holding a file cannot keep the mount) and
 * removes the image and the directory.
 */
import { execFileSync } from 'node:child_process';
import fs from 'node:fs';
import os from 'node:os';
import path from 'node:path';
import type { TestContext } from 'node:test';

export interface SmallFs {
  /** The mount point (0700), empty but for lost+found. */
  dir: string;
  /** Bytes an unprivileged writer may still use (statfs f_bavail). */
  free(): number;
  /**
   * Fills the file system with filler files until at most `leaveBytes` are free (0: until the
   * kernel refuses even one more byte). Returns the bytes free afterwards.
   */
  fill(leaveBytes?: number): number;
  /** Removes every filler file: the space returns. */
  unfill(): void;
}

function missing(): string | null {
  if (process.getuid?.() !== 0) return 'a loop-mounted file system needs root';
  for (const tool of ['mkfs.ext4', 'mount', 'umount']) {
    try {
      execFileSync('sh', ['-c', `command -v ${tool}`], { stdio: 'ignore' });
    } catch {
      return `${tool} is not installed`;
    }
  }
  return null;
}

/** Mounts a fresh `mb` MB ext4 file system; undefined when the test was skipped (return). */
export async function smallFs(t: TestContext, mb: number): Promise<SmallFs | undefined> {
  const why = missing();
  if (why) {
    if (process.env.CI === 'true' || process.env.CI === '1') throw new Error(`${why}; CI requires it`);
    t.skip(why);
    return undefined;
  }
  // Short: the home's API socket path must stay under 107 bytes.
  const base = await fs.promises.mkdtemp(path.join(os.tmpdir(), 'brig-fs-'));
  const image = path.join(base, 'img');
  const dir = path.join(base, 'h');
  await fs.promises.mkdir(dir, { mode: 0o700 });
  let mounted = false;
  t.after(() => {
    if (mounted) execFileSync('umount', ['-l', dir], { stdio: 'ignore' });
    fs.rmSync(base, { recursive: true, force: true });
  });
  fs.writeFileSync(image, '');
  fs.truncateSync(image, mb * 1024 * 1024);
  execFileSync('mkfs.ext4', ['-q', '-F', '-m', '0', '-E', 'lazy_itable_init=0,lazy_journal_init=0', image], { stdio: 'ignore' });
  execFileSync('mount', ['-o', 'loop', image, dir], { stdio: 'ignore' });
  mounted = true;
  fs.chmodSync(dir, 0o700);
  let n = 0;
  const fillers: string[] = [];
  const free = () => {
    const s = fs.statfsSync(dir);
    return s.bavail * s.bsize;
  };
  return {
    dir,
    free,
    fill(leaveBytes = 0) {
      // One big file up to the mark, then ever smaller ones: the last blocks and the last inodes' worth.
      for (const chunk of [1024 * 1024, 64 * 1024, 4096, 512, 1]) {
        const file = path.join(dir, `.filler-${n++}`);
        fillers.push(file);
        const fd = fs.openSync(file, 'w');
        const buf = Buffer.alloc(chunk);
        try {
          while (free() - chunk >= leaveBytes) fs.writeSync(fd, buf);
          if (leaveBytes === 0) for (;;) fs.writeSync(fd, buf);
        } catch (e) {
          if ((e as NodeJS.ErrnoException).code !== 'ENOSPC') throw e;
        } finally {
          fs.closeSync(fd);
        }
        if (leaveBytes > 0 && chunk <= 4096) break;
      }
      if (leaveBytes === 0) {
        // The last inodes too, so no empty file can be made either: a directory entry can still need a block.
        try {
          for (;;) {
            const f = path.join(dir, `.filler-${n++}`);
            fs.writeFileSync(f, '');
            fillers.push(f);
          }
        } catch (e) {
          if ((e as NodeJS.ErrnoException).code !== 'ENOSPC') throw e;
        }
      }
      return free();
    },
    unfill() {
      for (const f of fillers.splice(0)) fs.rmSync(f, { force: true });
    },
  };
}

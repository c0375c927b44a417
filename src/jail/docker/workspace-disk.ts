/**
 * A run's workspace disk: a size-capped filesystem behind its /workspace volume.
 *
 * Guarantees: with the `loop` quota each run's /workspace is its own ext4 filesystem in a
 * sparse image of exactly the lease's diskMb, attached to a loop device and handed to the
 * engine's local volume driver as a device (type ext4, options nosuid,nodev), so a write past
 * the cap fails inside the jail with ENOSPC (blocks or inodes) and the host's disk gives the
 * run at most diskMb. The image is made fresh per run, owned by the jail user at its root,
 * with no journal, no reserved blocks and no lost+found, holding its first content — out/ and
 * the run's inputs, the jail user's — written in by mkfs from a stage of brig's own, so no
 * archive is put through the engine before the start; release detaches every loop device
 * backing it and deletes it, and sweep does the same for any run that is not live, including
 * a loop device whose image was already deleted by a crash between the two.
 * Threat: a child filling the host's disk through its workspace (3 GiB in 7 s was measured
 * on a plain volume, with the host's 78 GB showing free), and disks leaking past their run.
 * Trusts: the host's e2fsprogs (mkfs.ext4, debugfs) and util-linux (losetup), run by path
 * with argv only (no shell, no input path ever in a debugfs request); root, which losetup needs.
 * The stage is made new in the 0700 disks directory before any jail exists, so nothing a
 * child controls is there to follow.
 * Fails: closed. With the quota on and a step failing, the jail is not made (`jail_failed`
 * with the step); the opt-out (`none`, BRIG_WORKSPACE_QUOTA=none) is explicit and reported.
 *
 * Cost per spawn (this machine, bench/spawn.bench.ts): an image, mkfs, debugfs and losetup
 * are four short processes, a few ms each; the image takes on the host only what is written.
 * The processes are started by brig's command helper (util/spawner.ts), not by the caller:
 * a fork from the daemon blocks its event loop until the child has exec'd (bench/api-stall).
 */
import fs from 'node:fs';
import path from 'node:path';
import { BrigError } from '../../util/errors.js';
import { execInHelper } from '../../util/spawner.js';
import type { JailInput } from '../types.js';
import { OUT_DIR, workspaceRelative } from './profile.js';

// Through the helper process (util/spawner.ts): forking from the daemon held its main thread
// ~25 ms per command under load, three commands per disk (issue 29 item 7).
const run = execInHelper;

export type WorkspaceQuota = 'loop' | 'none';

export const DISK_TOOLS = { mkfs: '/usr/sbin/mkfs.ext4', debugfs: '/usr/sbin/debugfs', losetup: '/usr/sbin/losetup' } as const;

/** The volume driver's options for a run's disk: what verify reads back. */
export interface DiskVolumeOptions {
  type: 'ext4';
  device: string;
  o: 'nosuid,nodev';
}

export interface WorkspaceDisk {
  image: string;
  device: string;
  bytes: number;
  volumeOptions: DiskVolumeOptions;
}

/** Where root keeps one owner's disk images (an owner is one brig home). */
export function disksDirFor(owner: string): string {
  return path.join('/var/lib/brig/disks', owner);
}

const IMAGE_RE = /^(.+)\.img$/;

function stepFailed(step: string, e: unknown): BrigError {
  const stderr = (e as { stderr?: string }).stderr?.trim().split('\n').pop() ?? '';
  return new BrigError('jail_failed', `the workspace disk could not be made (${step}${stderr ? `: ${stderr.slice(0, 200)}` : ''})`, {
    data: { step },
    hint: 'The quota needs root, e2fsprogs and util-linux (`make deps`) and a free loop device; BRIG_WORKSPACE_QUOTA=none runs without one (doctor says so).',
  });
}

/**
 * Writes the workspace's first content into `stage` (made new, 0700): out/ and each input with
 * its parent directories (0755), all the owner's, as the archive a plain volume gets would make
 * them (docker-jail.ts inputsArchive). A later input over an earlier path replaces it. Returns
 * the bytes of the inputs.
 */
export async function stageContent(stage: string, owner: { uid: number; gid: number }, content: readonly JailInput[]): Promise<number> {
  await fs.promises.rm(stage, { recursive: true, force: true });
  await fs.promises.mkdir(stage, { mode: 0o700 });
  const dirs = new Set<string>();
  const own = async (p: string, mode: number) => {
    await fs.promises.chown(p, owner.uid, owner.gid);
    await fs.promises.chmod(p, mode);
  };
  const mkdir = async (rel: string) => {
    if (dirs.has(rel)) return;
    await fs.promises.mkdir(path.join(stage, rel)).catch((e: NodeJS.ErrnoException) => {
      throw e.code === 'EEXIST' ? new BrigError('invalid_input', `the input ${rel} is a file where another input needs a directory`, { data: { path: rel } }) : e;
    });
    await own(path.join(stage, rel), 0o755);
    dirs.add(rel);
  };
  await mkdir(OUT_DIR);
  let bytes = 0;
  for (const input of content) {
    const rel = workspaceRelative(input.path);
    if (rel === undefined) throw new BrigError('invalid_input', 'an input path must be relative to /workspace without `..`', { data: { path: input.path } });
    if (dirs.has(rel)) throw new BrigError('invalid_input', `the input ${rel} names a directory another input or out/ needs`, { data: { path: input.path } });
    const parts = rel.split('/');
    for (let i = 1; i < parts.length; i++) await mkdir(parts.slice(0, i).join('/'));
    const data = typeof input.data === 'string' ? Buffer.from(input.data) : input.data;
    const file = path.join(stage, rel);
    await fs.promises.writeFile(file, data, { mode: 0o600 }).catch((e: NodeJS.ErrnoException) => {
      throw e.code === 'EISDIR' || e.code === 'ENOTDIR'
        ? new BrigError('invalid_input', `the input ${rel} collides with another input's directory`, { data: { path: input.path } })
        : e;
    });
    await own(file, (input.mode ?? 0o644) & 0o777);
    bytes += data.length;
  }
  return bytes;
}

export class WorkspaceDisks {
  constructor(readonly dir: string) {}

  imagePath(runId: string): string {
    return path.join(this.dir, `${runId}.img`);
  }

  /** Why this host cannot give quotas, or null when it can (root and the three tools). */
  static unavailable(): string | null {
    if (process.getuid?.() !== 0) return 'brig is not running as root (losetup needs it)';
    for (const [name, p] of Object.entries(DISK_TOOLS)) if (!fs.existsSync(p)) return `${name} is missing (${p})`;
    if (!fs.existsSync('/dev/loop-control')) return 'no /dev/loop-control (no loop devices)';
    return null;
  }

  stagePath(runId: string): string {
    return path.join(this.dir, `${runId}.stage`);
  }

  /**
   * A fresh disk of sizeMb for the run, holding out/ and `content` (the run's inputs: paths under
   * /workspace, each file and parent directory the owner's) before the engine ever sees it.
   * Refuses a path that climbs out, and content that does not fit (`invalid_input`).
   */
  async create(runId: string, sizeMb: number, owner: { uid: number; gid: number }, content: readonly JailInput[] = []): Promise<WorkspaceDisk> {
    const image = this.imagePath(runId);
    const bytes = sizeMb * 1024 * 1024;
    // wx: a run's image is always new, never another run's leftovers. A sweep may remove the
    // empty directory between the mkdir and the open: then once more.
    const open = async () => {
      await fs.promises.mkdir(this.dir, { recursive: true, mode: 0o700 });
      return fs.promises.open(image, 'wx', 0o600);
    };
    const fh = await open()
      .catch((e: unknown) => ((e as NodeJS.ErrnoException).code === 'ENOENT' ? open() : Promise.reject(e)))
      .catch((e: unknown) => {
        throw stepFailed('image', e);
      });
    try {
      await fh.truncate(bytes);
    } finally {
      await fh.close();
    }
    const stage = this.stagePath(runId);
    try {
      // The workspace's first content is written into the filesystem as mkfs makes it (-d): out/
      // and the inputs, so the engine need not mount the volume for an archive before the start
      // (that put cost ~60 ms a run). The stage is a directory of brig's own (0700, in the
      // disks directory), removed once mkfs has copied it.
      const inputBytes = await stageContent(stage, owner, content);
      await run(DISK_TOOLS.mkfs, ['-q', '-F', '-m', '0', '-I', '256', '-O', '^has_journal', '-E', `root_owner=${owner.uid}:${owner.gid},lazy_itable_init=1`, '-L', 'brig-ws', '-d', stage, image]).catch((e: unknown) => {
        if (/could not allocate|no space|not enough space/i.test((e as { stderr?: string }).stderr ?? '')) {
          throw new BrigError('invalid_input', `the inputs (${inputBytes} bytes) do not fit the workspace disk of ${sizeMb} MiB`, {
            data: { inputBytes, diskMb: sizeMb },
            hint: 'Ask for a larger disk (limits.diskMb, within the policy\'s ceiling) or pass smaller inputs.',
          });
        }
        throw stepFailed('mkfs.ext4', e);
      });
      await fs.promises.rm(stage, { recursive: true, force: true });
      // -I 256 on every size: nanosecond timestamps (mke2fs gives a small disk 128-byte inodes,
      // one-second mtimes), which the empty-out/ check of collect (docker-jail.ts) relies on.
      // lost+found is root's: it would sit in every workspace listing, unreadable to the child.
      const shaped = await run(DISK_TOOLS.debugfs, ['-w', '-R', 'rmdir lost+found', image]).catch((e: unknown) => {
        throw stepFailed('debugfs', e);
      });
      // debugfs exits 0 whatever its request did: a refusal is a line on stderr beside its banner.
      const refused = shaped.stderr.split('\n').filter((l) => l.trim() !== '' && !/^debugfs \d/.test(l));
      if (refused.length > 0) throw stepFailed('debugfs', { stderr: refused.join('; ') });
      const { stdout } = await run(DISK_TOOLS.losetup, ['--find', '--show', '--nooverlap', image]).catch((e: unknown) => {
        throw stepFailed('losetup', e);
      });
      const device = stdout.trim();
      if (!/^\/dev\/loop\d+$/.test(device)) throw stepFailed(`losetup answered ${JSON.stringify(device.slice(0, 40))}`, {});
      return { image, device, bytes, volumeOptions: { type: 'ext4', device, o: 'nosuid,nodev' } };
    } catch (e) {
      await this.release(runId).catch(() => {});
      throw e;
    }
  }

  /** Detaches every loop device on a run's image and deletes it. Safe to call twice. */
  async release(runId: string): Promise<boolean> {
    const image = this.imagePath(runId);
    await fs.promises.rm(this.stagePath(runId), { recursive: true, force: true });
    if (!fs.existsSync(image)) return false;
    for (const dev of await this.#devicesOf(image)) await this.#detach(dev);
    await fs.promises.rm(image, { force: true });
    // The owner's last disk takes its directory with it (one per brig home would pile up);
    // create() makes it again, also when this lands between its mkdir and its open.
    await fs.promises.rmdir(this.dir).catch(() => {});
    return true;
  }

  /** Runs whose image is on disk. */
  async runIds(): Promise<string[]> {
    const names = await fs.promises.readdir(this.dir).catch(() => [] as string[]);
    return names.flatMap((n) => IMAGE_RE.exec(n)?.[1] ?? []);
  }

  /** Releases the disks of runs that are not live, and loop devices left on deleted images. */
  async sweep(isLive: (runId: string) => boolean): Promise<number> {
    let n = 0;
    for (const id of await this.runIds()) if (!isLive(id) && (await this.release(id))) n++;
    if (WorkspaceDisks.unavailable() !== null) return n;
    for (const { dev, back } of await this.#loops()) {
      const deleted = back.endsWith(' (deleted)');
      const file = deleted ? back.slice(0, -' (deleted)'.length) : back;
      if (deleted && path.dirname(file) === this.dir) {
        await this.#detach(dev);
        n++;
      }
    }
    await fs.promises.rmdir(this.dir).catch(() => {});
    return n;
  }

  /** Loop devices and their backing files, from sysfs (what losetup reads) without a process; losetup where sysfs is not. */
  async #loops(): Promise<{ dev: string; back: string }[]> {
    // Synchronous on purpose: sysfs answers from memory in microseconds, while ~50 awaited reads
    // (one per loop device, bound or not) queue behind the thread pool for ~8 ms.
    const names = fs.existsSync('/sys/block') ? fs.readdirSync('/sys/block') : null;
    if (names) {
      return names.flatMap((n) => {
        const file = `/sys/block/${n}/loop/backing_file`;
        if (!/^loop\d+$/.test(n) || !fs.existsSync(file)) return [];
        try {
          return [{ dev: `/dev/${n}`, back: fs.readFileSync(file, 'utf8').replace(/\n$/, '') }];
        } catch {
          return []; // detached between the two reads
        }
      });
    }
    const { stdout } = await run(DISK_TOOLS.losetup, ['--list', '--noheadings', '--output', 'NAME,BACK-FILE']).catch(() => ({ stdout: '' }));
    return stdout.split('\n').flatMap((line) => {
      const m = /^(\/dev\/loop\d+)\s+(.+)$/.exec(line.trim());
      return m ? [{ dev: m[1]!, back: m[2]! }] : [];
    });
  }

  async #devicesOf(image: string): Promise<string[]> {
    return (await this.#loops()).filter((l) => l.back === image).map((l) => l.dev);
  }

  async #detach(dev: string): Promise<void> {
    // A device the engine still has mounted (its container not yet gone) refuses: retry briefly.
    for (let attempt = 0; ; attempt++) {
      try {
        await run(DISK_TOOLS.losetup, ['--detach', dev]);
        return;
      } catch (e) {
        if (attempt >= 20) throw stepFailed('losetup --detach', e);
        await new Promise((r) => setTimeout(r, 50));
      }
    }
  }
}

/**
 * Artifacts bound exactly as they were checked.
 *
 * Guarantees: right before the jail is made, each artifact's checked real path is opened
 * without following a final symlink (O_NOFOLLOW, non-blocking: a fifo put there cannot hang
 * it) and the opened object's device and inode must be the ones the spawn's check saw — a
 * path or a parent swapped since (a symlink to /etc, another run's warm slot) is refused
 * `artifact_changed`. As root, that very opened object — not its path — is then bind-mounted
 * (the kernel resolves /proc/<brig>/fd/<n>, `mount --no-canonicalize`), non-recursively and
 * read-only, into a staging directory only root can reach (/var/lib/brig/stage/<owner>/<run>,
 * 0700), the tree there is checked again (no socket, fifo, device or submount), and the
 * engine binds the staged path: no later swap of the operator's path can change what the
 * jail sees. Without root the checked path itself is bound after the same identity check; the
 * window between that check and the engine's mount stays open (docs/threat-model.md says so).
 * Threat: a local user or a hostile coordinator swapping an artifact path between the check
 * and the mount to hand a jail the host's files or another run's directory.
 * Trusts: the kernel's open, fstat and magic-link resolution; util-linux mount and umount.
 * Fails closed: any doubt refuses the run before a container exists; what was staged is
 * unmounted and removed on every error path, and at release, and by the sweep.
 */
import fs from 'node:fs';
import path from 'node:path';
import { BrigError } from '../../util/errors.js';
import { execInHelper } from '../../util/spawner.js';
import { artifactTreeProblem } from '../artifact-tree.js';
import type { JailArtifact } from '../types.js';

/** Through the command helper (util/spawner.ts): a fork from the daemon blocks its event loop. */
const run = execInHelper;
const MOUNT = ['/usr/bin/mount', '/bin/mount'].find((p) => fs.existsSync(p));
const UMOUNT = ['/usr/bin/umount', '/bin/umount'].find((p) => fs.existsSync(p));

/** Where a home's staged artifacts live (beside its workspace disks, root's alone). */
export function stageDirFor(owner: string): string {
  return path.join('/var/lib/brig/stage', owner);
}

function changed(a: JailArtifact, why: string): BrigError {
  return new BrigError('artifact_changed', `artifact ${a.name} changed since the spawn checked it: ${why}`, { data: { name: a.name, why } });
}

/** Opens the checked path as the object it was, or refuses: the caller closes the descriptor. */
function openChecked(a: JailArtifact): number {
  const id = a.identity;
  if (!id) throw changed(a, 'it was never checked');
  const flags = fs.constants.O_RDONLY | fs.constants.O_NOFOLLOW | fs.constants.O_NONBLOCK | (id.kind === 'dir' ? fs.constants.O_DIRECTORY : 0);
  let fd: number;
  try {
    fd = fs.openSync(id.realPath, flags);
  } catch (e) {
    throw changed(a, `it cannot be opened as the ${id.kind} it was (${(e as NodeJS.ErrnoException).code ?? 'error'})`);
  }
  const st = fs.fstatSync(fd, { bigint: true });
  if (String(st.dev) !== id.dev || String(st.ino) !== id.ino || st.isDirectory() !== (id.kind === 'dir')) {
    fs.closeSync(fd);
    throw changed(a, 'its path now names another object');
  }
  return fd;
}

export class ArtifactStages {
  constructor(readonly dir: string) {}

  static available(): boolean {
    return process.getuid?.() === 0 && MOUNT !== undefined && UMOUNT !== undefined;
  }

  /**
   * Checks every artifact of a run and, as root, stages it: the artifacts to bind (the staged
   * paths), or a refusal with nothing left behind.
   */
  async stage(runId: string, artifacts: readonly JailArtifact[]): Promise<JailArtifact[]> {
    if (artifacts.length === 0) return [];
    const staging = ArtifactStages.available();
    const out: JailArtifact[] = [];
    try {
      for (const a of artifacts) {
        const fd = openChecked(a);
        try {
          if (!staging) {
            out.push({ name: a.name, hostPath: a.identity!.realPath });
            continue;
          }
          const target = await this.#target(runId, a);
          await run(MOUNT!, ['--no-canonicalize', '--bind', `/proc/${process.pid}/fd/${fd}`, target], { env: {} });
          await run(MOUNT!, ['--no-canonicalize', '-o', 'remount,bind,ro', target], { env: {} });
          out.push({ name: a.name, hostPath: target });
          // The staged tree is the opened object: checked again where the jail will see it.
          const problem = await artifactTreeProblem(target);
          if (problem) throw new BrigError('artifact_missing', `artifact ${a.name} is refused: ${problem}`, { data: { name: a.name, why: problem } });
        } finally {
          fs.closeSync(fd);
        }
      }
      return out;
    } catch (e) {
      await this.release(runId);
      throw e;
    }
  }

  async #target(runId: string, a: JailArtifact): Promise<string> {
    const dir = path.join(this.dir, runId);
    await fs.promises.mkdir(this.dir, { recursive: true, mode: 0o700 });
    await fs.promises.mkdir(dir, { recursive: true, mode: 0o700 });
    const target = path.join(dir, a.name);
    if (a.identity!.kind === 'dir') await fs.promises.mkdir(target, { mode: 0o700 });
    else await fs.promises.writeFile(target, '', { mode: 0o600, flag: 'wx' });
    return target;
  }

  /**
   * Unmounts and removes a run's staged artifacts; safe to call twice. Never recursive: a
   * target still mounted (an unmount that failed) refuses its removal (EBUSY) instead of
   * reaching into the operator's files through it.
   */
  async release(runId: string): Promise<void> {
    const dir = path.join(this.dir, runId);
    const names = await fs.promises.readdir(dir).catch(() => [] as string[]);
    for (const n of names) {
      const target = path.join(dir, n);
      // Lazy: a container still being removed may hold it a moment longer; it is detached now.
      if (UMOUNT) await run(UMOUNT, ['--no-canonicalize', '-l', target], { env: {} }).catch(() => {});
      const st = await fs.promises.lstat(target).catch(() => null);
      if (st?.isDirectory()) await fs.promises.rmdir(target);
      else if (st) await fs.promises.unlink(target);
    }
    await fs.promises.rmdir(dir).catch((e: NodeJS.ErrnoException) => {
      if (e.code !== 'ENOENT') throw e;
    });
  }

  /** Staged runs on disk (for the sweep and for "nothing left" checks). */
  async runIds(): Promise<string[]> {
    return fs.promises.readdir(this.dir).catch(() => [] as string[]);
  }

  async sweep(isLive: (runId: string) => boolean): Promise<number> {
    let n = 0;
    for (const id of await this.runIds()) {
      if (isLive(id)) continue;
      await this.release(id);
      n++;
    }
    return n;
  }
}

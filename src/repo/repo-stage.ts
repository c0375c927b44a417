/**
 * A host repository handed to a child: resolved at spawn, cloned clean at launch.
 *
 * Guarantees: the operator's repository is only read — `rev-parse` to resolve REF to a commit,
 * and a `git clone --no-local` (objects copied through git's own transport, never hardlinked)
 * into a directory of brig's, with no template (no hooks), checked out at that commit on a
 * branch `work`, its `origin` remote removed (the child never learns the host path) and a
 * committer identity set so a child with git can commit. What is cloned is measured and over
 * the cap (the lease's result bytes and the workspace's size) refuses the run. Nothing of the
 * host is mounted: the clone is copied into the jail's own workspace disk by the driver.
 * Threat: a spawn naming a host path to read or write through the child; a huge repository
 * filling brig's home or the jail's disk.
 * Trusts: the operator's repository (they named it) and the host's git (host-git.ts).
 * Fails closed: not a repository, an unknown ref, a clone that fails or is too large →
 * `repo_invalid` / `ref_too_large`, and what was cloned is removed.
 */
import fs from 'node:fs';
import path from 'node:path';
import { BrigError } from '../util/errors.js';
import { git } from './host-git.js';
import { parseRepoSpec } from '../util/repo-spec.js';

/** What intake resolved: the repository's real top directory, the ref asked for and its commit. */
export interface RepoSource {
  path: string;
  ref: string;
  base: string;
}

/** The branch the child's clone is on (at the base commit). */
export const WORK_BRANCH = 'work';

function invalid(message: string, data: Record<string, unknown>, cause?: unknown): BrigError {
  return new BrigError('repo_invalid', message, { data, ...(cause ? { cause } : {}) });
}

/** Resolves `PATH[@REF]` on the host (read only): the repository's top directory and the commit. */
export async function resolveRepo(spec: string): Promise<RepoSource> {
  const { path: p, ref } = parseRepoSpec(spec);
  if (!path.isAbsolute(p)) throw invalid(`the repository path must be absolute (${p.slice(0, 200)})`, { repo: p });
  if (ref.startsWith('-') || /[\0\s]/.test(ref)) throw invalid(`${JSON.stringify(ref.slice(0, 100))} is not a ref`, { ref: ref.slice(0, 100) });
  const real = await fs.promises.realpath(p).catch(() => null);
  if (!real || !(await fs.promises.stat(real)).isDirectory()) throw invalid(`${p} is not a directory`, { repo: p });
  const top = (await git(['rev-parse', '--show-toplevel'], { cwd: real }).catch((e: unknown) => {
    throw invalid(`${p} is not a git working tree`, { repo: p }, e);
  })).trim();
  const base = (await git(['rev-parse', '--verify', '--quiet', '--end-of-options', `${ref}^{commit}`], { cwd: top }).catch((e: unknown) => {
    throw invalid(`${ref} names no commit in ${p}`, { repo: p, ref }, e);
  })).trim();
  if (!/^[0-9a-f]{40,64}$/.test(base)) throw invalid(`${ref} names no commit in ${p}`, { repo: p, ref });
  return { path: top, ref, base };
}

/** Bytes of a directory tree (regular files, and 4 KiB a directory), stopping once past `limit`. */
export async function treeBytes(dir: string, limit = Infinity): Promise<number> {
  let total = 0;
  const walk = async (d: string): Promise<void> => {
    for (const e of await fs.promises.readdir(d, { withFileTypes: true })) {
      if (total > limit) return;
      const p = path.join(d, e.name);
      if (e.isDirectory()) {
        total += 4096;
        await walk(p);
      } else if (e.isFile()) total += (await fs.promises.lstat(p)).size;
    }
  };
  await walk(dir);
  return total;
}

/**
 * Clones the source at its base into `dest` (a new directory of brig's): the working tree the
 * child gets at /workspace/repo, with its .git. Refuses past `maxBytes`; leaves nothing on error.
 */
export async function cloneClean(src: RepoSource, dest: string, maxBytes: number): Promise<{ bytes: number }> {
  await fs.promises.mkdir(path.dirname(dest), { recursive: true, mode: 0o700 });
  try {
    await git(['clone', '--quiet', '--no-local', '--no-hardlinks', '--no-checkout', '--template=', '--', src.path, dest]).catch((e: unknown) => {
      throw invalid(`cloning ${src.path} failed: ${(e as Error).message}`, { repo: src.path }, e);
    });
    const inClone = { cwd: dest };
    await git(['checkout', '--quiet', '-B', WORK_BRANCH, src.base], inClone).catch((e: unknown) => {
      throw invalid(`${src.ref} (${src.base.slice(0, 12)}) could not be checked out from the clone: ${(e as Error).message}`, { repo: src.path, ref: src.ref }, e);
    });
    await git(['remote', 'remove', 'origin'], inClone);
    await git(['config', 'user.name', 'brig child'], inClone);
    await git(['config', 'user.email', 'child@brig.invalid'], inClone);
    const bytes = await treeBytes(dest, maxBytes);
    if (bytes > maxBytes) {
      throw new BrigError('ref_too_large', `the repository's clone is over ${maxBytes} bytes (the lease's result bytes and the workspace's size bound it)`, {
        data: { maxBytes },
        hint: 'Hand a smaller repository (a shallow one, or a subtree), or raise the result bytes (--profile) and the disk (--disk).',
      });
    }
    return { bytes };
  } catch (e) {
    await fs.promises.rm(dest, { recursive: true, force: true });
    throw e;
  }
}

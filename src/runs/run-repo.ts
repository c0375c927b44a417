/**
 * A run's host repository: resolved at intake, cloned clean at launch, its change computed on
 * the host at the end (docs/results.md, "A repository in, a patch out").
 *
 * Guarantees: an operator's `repo` is resolved once at intake (PATH's top directory, REF's
 * commit) and may not be brig's own state; a jailed spawner may only pass on the repository
 * it was given (`inherit`: same path, same base) — a host path from a child is refused
 * `capability_denied`. At launch the clone lands in the run's own directory and is bounded by
 * the lease's result bytes and the workspace's size. At the end /workspace/repo is collected
 * like out/ (regular files only, caps, symlinks as data) and the patch is made by the host's
 * git from those files (repo/changes.ts); the patch shares the run's result byte cap with
 * out/ — over it, the patch is not kept (the stat is, and the run's error says so). A
 * collection that left a file out (over the per-file cap, no space) keeps no patch: it would
 * show that file as deleted.
 * Threat: a child naming host paths, or making the host run or follow something of its tree.
 * Fails closed: any doubt → no patch, and `changes.error` says why; the run's other outputs stay.
 */
import { promises as fs } from 'node:fs';
import path from 'node:path';
import type { CollectCaps, Jail } from '../jail/index.js';
import { REPO_INHERIT, type RunChanges, type RunRepo } from '../protocol/index.js';
import { childCommits, cloneClean, diffChanges, importTree, resolveRepo, type ChangeStat } from '../repo/index.js';
import { BrigError, err, ok, publicError, type Result } from '../util/errors.js';
import type { RunRecord } from './types.js';

/** What collecting the change needs: the run store's directory of a run, the home's reserve. */
export interface RepoCollectContext {
  runDir(runId: string): string;
  minFreeBytes: number;
}

/** The run-directory names of the clone (kept until the change is indexed) and the scratch of the end. */
export const REPO_STAGE = 'repo-stage';
const REPO_COLLECTED = 'repo-collected';
const REPO_SCRATCH = 'repo-scratch';

/** Intake: the repository a spawn names, resolved; a child may only inherit its own. */
export async function repoForSpawn(spec: string | undefined, parent: RunRecord | null, own: readonly string[]): Promise<Result<RunRepo | undefined, BrigError>> {
  if (spec === undefined) return ok(undefined);
  if (parent) {
    if (spec !== REPO_INHERIT) {
      return err(new BrigError('capability_denied', 'a child cannot hand a host repository to a grandchild', {
        data: { what: 'repo' },
        hint: `Give repo "${REPO_INHERIT}": the grandchild gets the repository you were given, at its base.`,
      }));
    }
    if (!parent.repo) return err(new BrigError('invalid_input', `repo "${REPO_INHERIT}" passes on your own repository, and you were given none`, { data: { field: 'repo' } }));
    return ok(parent.repo);
  }
  if (spec === REPO_INHERIT) return err(new BrigError('repo_invalid', `repo "${REPO_INHERIT}" is for a jailed spawner; an operator names PATH[@REF]`, { data: { field: 'repo' } }));
  try {
    const r = await resolveRepo(spec);
    const ownReal = await Promise.all(own.map((o) => fs.realpath(o).catch(() => path.resolve(o))));
    const under = (p: string, root: string) => p === root || p.startsWith(`${root}/`);
    if (ownReal.some((o) => under(r.path, o) || under(o, r.path))) {
      return err(new BrigError('repo_invalid', `${r.path} is or holds brig's own state`, { data: { repo: r.path }, hint: 'Hand your own repository, outside brig\'s home.' }));
    }
    return ok(r);
  } catch (e) {
    return err(e instanceof BrigError ? e : new BrigError('repo_invalid', publicError(e).message));
  }
}

/** Launch: the clean clone the jail gets at /workspace/repo, in the run's directory. */
export async function stageRepo(runDir: string, repo: RunRepo, maxBytes: number): Promise<string> {
  const dest = path.join(runDir, REPO_STAGE);
  await fs.rm(dest, { recursive: true, force: true });
  await cloneClean(repo, dest, maxBytes);
  return dest;
}

export interface CollectedChanges {
  changes: RunChanges;
  /** Host files to index as the `changes.patch` and `changes.stat` refs (absent: none kept). */
  patchFile?: string;
  statFile?: string;
  /** Removes the scratch (after indexing). */
  cleanup(): Promise<void>;
}

/**
 * End: /workspace/repo collected, imported and diffed against the base on the host.
 * `budget` is what the run's result cap leaves after out/.
 */
export async function collectChanges(sup: RepoCollectContext, r: RunRecord, jail: Jail, caps: CollectCaps, budget: number): Promise<CollectedChanges> {
  const runDir = sup.runDir(r.id);
  const repo = r.repo!;
  const stage = path.join(runDir, REPO_STAGE);
  const collected = path.join(runDir, REPO_COLLECTED);
  const scratch = path.join(runDir, REPO_SCRATCH);
  const cleanup = async () => {
    await fs.rm(collected, { recursive: true, force: true });
    await fs.rm(scratch, { recursive: true, force: true });
  };
  const none = (why: string): CollectedChanges => ({ changes: { filesChanged: 0, insertions: 0, deletions: 0, commits: 0, patchBytes: 0, error: why }, cleanup });
  await cleanup();
  if (!(await fs.stat(path.join(stage, '.git')).catch(() => null))) return none('the clean clone of the run is gone (a restart after its end was collected once)');
  let rep;
  try {
    rep = await jail.collect(collected, caps, 'repo', { links: true, minFreeBytes: sup.minFreeBytes });
  } catch (e) {
    return none(`/workspace/repo could not be collected: ${publicError(e).message}`);
  }
  if (rep.tooLarge || rep.noSpace) return none(`/workspace/repo was not collected whole (${rep.tooLarge ? 'a file over the per-file cap' : 'no space in brig\'s home'}): a patch would show it deleted`);
  const gitDir = path.join(stage, '.git');
  const head = await importTree(gitDir, repo.base, { dir: collected, links: rep.links ?? [], executables: rep.files.filter((f) => f.executable).map((f) => f.path) }, scratch);
  const patchFile = path.join(scratch, 'changes.patch');
  const stat = await diffChanges(gitDir, repo.base, head, patchFile);
  const { commits, incomplete } = childCommits(path.join(collected, '.git'), repo.base);
  const full: ChangeStat = { ...stat, commits, ...(incomplete ? { commitsIncomplete: incomplete } : {}) };
  const statFile = path.join(scratch, 'changes.stat');
  await fs.writeFile(statFile, `${JSON.stringify({ repo: repo.path, ref: repo.ref, ...full }, null, 2)}\n`, { mode: 0o600 });
  const changes: RunChanges = { filesChanged: stat.filesChanged, insertions: stat.insertions, deletions: stat.deletions, commits: commits.length, patchBytes: stat.patchBytes };
  if (stat.patchBytes > budget) {
    return { changes: { ...changes, error: `the patch is ${stat.patchBytes} bytes, over what the run's result cap leaves (${budget}): not kept` }, statFile, cleanup };
  }
  return { changes, patchFile, statFile, cleanup };
}

/** After the change is indexed: the clone goes (it is as large as the repository). */
export async function dropStage(runDir: string): Promise<void> {
  await fs.rm(path.join(runDir, REPO_STAGE), { recursive: true, force: true });
}

/**
 * `brig apply`: a run's patch written into the host repository as a new branch.
 *
 * Guarantees: only plumbing runs in the operator's repository (read-tree, apply --cached,
 * write-tree, commit-tree into a scratch index, then one update-ref whose expected old value
 * is "no such ref"): its working tree, its index, HEAD and every existing branch are never
 * touched, and a branch that exists is refused, never moved. The change lands on the base the
 * child started from; when the ref it came from has moved since (a branch that advanced) it is
 * refused unless `rebase`, which applies it onto the ref's new commit (three-way on a
 * conflict) and refuses what still does not apply. No hook runs (host-git.ts).
 * Threat: brig overwriting the operator's work or a branch, or a stale patch silently landing
 * on a base it was not made against.
 * Trusts: the patch file brig computed itself (changes.ts) and the run record's base.
 * Fails closed: `repo_conflict` with what to do; nothing is written to the repository's refs.
 */
import crypto from 'node:crypto';
import fs from 'node:fs';
import os from 'node:os';
import path from 'node:path';
import { BrigError } from '../util/errors.js';
import { git } from './host-git.js';

export interface ApplyInput {
  /** The host repository (its top directory) and the ref and base commit the run started from. */
  repo: string;
  ref: string;
  base: string;
  patchFile: string;
  branch: string;
  rebase?: boolean;
  message: string;
}

export interface ApplyOutcome {
  branch: string;
  commit: string;
  /** The commit the change was put on: the base, or (rebase) the ref's commit now. */
  onto: string;
  rebased: boolean;
}

function conflict(message: string, hint: string, data: Record<string, unknown>, cause?: unknown): BrigError {
  return new BrigError('repo_conflict', message, { hint, data, ...(cause ? { cause } : {}) });
}

export async function applyChanges(a: ApplyInput): Promise<ApplyOutcome> {
  const inRepo = { cwd: a.repo };
  await git(['check-ref-format', '--branch', a.branch], inRepo).catch((e: unknown) => {
    throw new BrigError('invalid_input', `${JSON.stringify(a.branch.slice(0, 100))} is not a branch name`, { data: { branch: a.branch.slice(0, 100) }, cause: e });
  });
  const exists = await git(['rev-parse', '--verify', '--quiet', `refs/heads/${a.branch}`], inRepo).then(() => true, () => false);
  if (exists) throw conflict(`branch ${a.branch} already exists in ${a.repo}`, 'Name a new branch with --branch: brig never moves an existing one.', { branch: a.branch });
  const now = (await git(['rev-parse', '--verify', '--quiet', '--end-of-options', `${a.ref}^{commit}`], inRepo).catch(() => '')).trim();
  const moved = now !== '' && now !== a.base;
  if (moved && !a.rebase) {
    throw conflict(`${a.ref} moved since the run started (${a.base.slice(0, 12)} → ${now.slice(0, 12)})`, 'Apply it onto the new commit with --rebase, or look at the patch first (`brig ref read` on changes.patch).', { ref: a.ref, base: a.base, now });
  }
  const onto = moved ? now : a.base;
  const scratch = await fs.promises.mkdtemp(path.join(os.tmpdir(), 'brig-apply-'));
  try {
    const o = { ...inRepo, env: { GIT_INDEX_FILE: path.join(scratch, 'index') } };
    await git(['read-tree', onto], o);
    const empty = (await fs.promises.stat(a.patchFile)).size === 0;
    if (!empty) {
      await git(['apply', '--cached', '--binary', '--whitespace=nowarn', a.patchFile], o).catch(async (e: unknown) => {
        if (!moved) throw conflict(`the patch does not apply to its own base ${a.base.slice(0, 12)}: ${(e as Error).message}`, 'The repository may have lost that commit; look at the patch (`brig ref read`).', { base: a.base }, e);
        await git(['read-tree', onto], o);
        await git(['apply', '--cached', '--3way', '--binary', '--whitespace=nowarn', a.patchFile], o).catch((e2: unknown) => {
          throw conflict(`the change does not apply onto ${a.ref} (${now.slice(0, 12)}): ${(e2 as Error).message}`, 'Apply it without --rebase (onto its base) and merge by hand.', { ref: a.ref, now }, e2);
        });
      });
    }
    const tree = (await git(['write-tree'], o)).trim();
    const msgFile = path.join(scratch, `msg-${crypto.randomBytes(4).toString('hex')}`);
    await fs.promises.writeFile(msgFile, a.message.endsWith('\n') ? a.message : `${a.message}\n`, { mode: 0o600 });
    const commit = (await git(['commit-tree', tree, '-p', onto, '-F', msgFile], o)).trim();
    // The old value "none": update-ref refuses if the branch appeared meanwhile.
    await git(['update-ref', '-m', 'brig apply', `refs/heads/${a.branch}`, commit, '0'.repeat(40)], inRepo).catch((e: unknown) => {
      throw conflict(`branch ${a.branch} could not be created: ${(e as Error).message}`, 'Name a new branch with --branch.', { branch: a.branch }, e);
    });
    return { branch: a.branch, commit, onto, rebased: moved };
  } finally {
    await fs.promises.rm(scratch, { recursive: true, force: true });
  }
}

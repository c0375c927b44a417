/**
 * A child's change to its repository, computed on the host from the files collected out of
 * its jail — never by git inside the jail, never from a patch the child wrote.
 *
 * Guarantees: the collected tree (regular files only, as the jail's collect writes them, plus
 * the symlinks it reported as name → target text) is imported into the clean clone's object
 * store through a scratch index: `read-tree` of the base, `add -A` of the collected tree, each
 * symlink entered as a blob of its target text (mode 120000, never made or followed on the
 * host), executable bits from the archive's modes, the base's submodule entries kept as they
 * were (a child cannot move a submodule). The diff of the base against that tree is the patch
 * (`--binary --full-index`: binary-safe, `git apply`-able) and its numstat the stat. The
 * child's commit messages are read as data: HEAD and the loose commit objects under its
 * collected .git, inflated with a size cap and checked against their own hash, walked first
 * parent back to the base (at most MAX_COMMITS). Nothing of the child's .git is ever used as
 * a git directory, its config and hooks are never read.
 * Threat: a hostile child's tree making the host run or follow something (hooks, filters,
 * diff drivers, symlinks, submodules), or passing off a patch that is not its tree.
 * Trusts: host-git.ts (configuration off), the jail's collect (regular files, safe names).
 * Fails: a git step failing throws; the caller keeps the run's other outputs and names it.
 */
import crypto from 'node:crypto';
import fs from 'node:fs';
import path from 'node:path';
import zlib from 'node:zlib';
import { git } from './host-git.js';

export const MAX_COMMITS = 50;
const MAX_MESSAGE_CHARS = 4096;
const MAX_OBJECT_BYTES = 1024 * 1024;
const MAX_STAT_FILES = 1000;

export interface ChildCommit {
  sha: string;
  subject: string;
  message: string;
}

export interface ChangeStat {
  base: string;
  filesChanged: number;
  insertions: number;
  deletions: number;
  /** The first MAX_STAT_FILES files; binary ones count no lines. */
  files: { path: string; insertions: number; deletions: number; binary?: true }[];
  patchBytes: number;
  /** The child's own commits on top of the base, oldest first (empty if it made none). */
  commits: ChildCommit[];
  /** Set when its commits could not all be read (packed objects, more than MAX_COMMITS, a history not on the base). */
  commitsIncomplete?: string;
}

export interface CollectedTree {
  /** The collected /workspace/repo on the host (regular files only). */
  dir: string;
  /** Symlinks the collect reported, as relative path → target text. */
  links: readonly { path: string; target: string }[];
  /** Files whose archive mode had the owner's execute bit. */
  executables: readonly string[];
}

const envOf = (gitDir: string, index: string, workTree?: string) => ({ env: { GIT_DIR: gitDir, GIT_INDEX_FILE: index, ...(workTree ? { GIT_WORK_TREE: workTree } : {}) } });

/** Runs git over argument lists too long for one call, a slice at a time. */
async function inBatches(items: readonly string[], run: (batch: string[]) => Promise<unknown>, size = 200): Promise<void> {
  for (let i = 0; i < items.length; i += size) await run(items.slice(i, i + size));
}

/** Imports the collected tree as a commit on the base (never a ref): its sha. */
export async function importTree(gitDir: string, base: string, tree: CollectedTree, scratch: string): Promise<string> {
  await fs.promises.mkdir(scratch, { recursive: true, mode: 0o700 });
  const index = path.join(scratch, 'index');
  const o = envOf(gitDir, index, tree.dir);
  await git(['read-tree', base], o);
  await git(['add', '--all', '--', '.'], { ...o, cwd: tree.dir });
  // Every file as the archive said: 0644 unless its owner could execute it.
  const tracked = (await git(['ls-files', '-z', '--stage'], o)).split('\0').filter(Boolean);
  const exec = new Set(tree.executables);
  const flip = tracked.flatMap((l) => {
    const m = /^(\d{6}) [0-9a-f]+ \d\t(.*)$/s.exec(l);
    if (!m || (m[1] !== '100644' && m[1] !== '100755')) return [];
    const want = exec.has(m[2]!) ? '100755' : '100644';
    return want === m[1] ? [] : [`${want === '100755' ? '+' : '-'}x\0${m[2]!}`];
  });
  for (const sign of ['+x', '-x']) {
    const paths = flip.filter((f) => f.startsWith(sign)).map((f) => f.slice(3));
    await inBatches(paths, (b) => git(['update-index', `--chmod=${sign}`, '--', ...b], o));
  }
  // Symlinks: their target text as a blob, entered by mode; nothing made on the host disk.
  if (tree.links.length > 0) {
    const linkDir = path.join(scratch, 'links');
    await fs.promises.mkdir(linkDir, { mode: 0o700 });
    const files = await Promise.all(
      tree.links.map(async (l, i) => {
        const f = path.join(linkDir, String(i));
        await fs.promises.writeFile(f, l.target, { flag: 'wx', mode: 0o600 });
        return f;
      }),
    );
    const shas: string[] = [];
    await inBatches(files, async (b) => shas.push(...(await git(['hash-object', '-w', '--no-filters', '--', ...b], o)).trim().split('\n')));
    const infos = tree.links.map((l, i) => `120000,${shas[i]},${l.path}`);
    await inBatches(infos, (b) => git(['update-index', '--add', '--replace', ...b.flatMap((x) => ['--cacheinfo', x])], o));
  }
  // Submodules of the base stay what they were: the clone never had their contents.
  const gitlinks = (await git(['ls-tree', '-r', '-z', base], o)).split('\0').flatMap((l) => {
    const m = /^160000 commit ([0-9a-f]+)\t(.*)$/s.exec(l);
    return m ? [`160000,${m[1]},${m[2]}`] : [];
  });
  if (gitlinks.length > 0) {
    await inBatches(gitlinks.map((g) => g.split(',').slice(2).join(',')), (b) => git(['rm', '--cached', '-r', '-q', '--ignore-unmatch', '--', ...b], o));
    await inBatches(gitlinks, (b) => git(['update-index', '--add', '--replace', ...b.flatMap((x) => ['--cacheinfo', x])], o));
  }
  const treeSha = (await git(['write-tree'], o)).trim();
  return (await git(['commit-tree', treeSha, '-p', base, '-m', 'brig: the child\'s tree'], o)).trim();
}

/** Writes the binary-safe patch of base..head to `patchFile`; its stat. */
export async function diffChanges(gitDir: string, base: string, head: string, patchFile: string): Promise<Omit<ChangeStat, 'commits' | 'commitsIncomplete'>> {
  const o = { env: { GIT_DIR: gitDir } };
  const flags = ['--no-renames', '--no-ext-diff', '--no-textconv', '--no-color', '--ignore-submodules=none'];
  await git(['diff', '--binary', '--full-index', ...flags, `--output=${patchFile}`, base, head], o);
  const numstat = await git(['diff', '--numstat', '-z', ...flags, base, head], o);
  const files: ChangeStat['files'] = [];
  let filesChanged = 0, insertions = 0, deletions = 0;
  for (const rec of numstat.split('\0')) {
    const m = /^(-|\d+)\t(-|\d+)\t(.*)$/s.exec(rec);
    if (!m) continue;
    filesChanged++;
    const bin = m[1] === '-';
    const ins = bin ? 0 : Number(m[1]), del = bin ? 0 : Number(m[2]);
    insertions += ins;
    deletions += del;
    if (files.length < MAX_STAT_FILES) files.push({ path: m[3]!, insertions: ins, deletions: del, ...(bin ? { binary: true as const } : {}) });
  }
  return { base, filesChanged, insertions, deletions, files, patchBytes: (await fs.promises.stat(patchFile)).size };
}

/** One loose object of the collected .git, checked against its name; null when it is not there loose. */
function looseObject(gitDir: string, sha: string): { type: string; body: Buffer } | null {
  const file = path.join(gitDir, 'objects', sha.slice(0, 2), sha.slice(2));
  let raw: Buffer;
  try {
    raw = zlib.inflateSync(fs.readFileSync(file), { maxOutputLength: MAX_OBJECT_BYTES });
  } catch {
    return null;
  }
  if (crypto.createHash('sha1').update(raw).digest('hex') !== sha) return null;
  const nul = raw.indexOf(0);
  const m = /^(\w+) (\d+)$/.exec(raw.subarray(0, nul).toString('latin1'));
  if (nul < 0 || !m) return null;
  return { type: m[1]!, body: raw.subarray(nul + 1) };
}

const readSmall = (f: string) => {
  try {
    const st = fs.lstatSync(f);
    return st.isFile() && st.size < 1024 * 1024 ? fs.readFileSync(f, 'utf8') : null;
  } catch {
    return null;
  }
};

/** The child's HEAD commit, read as data from its collected .git (a ref file, packed-refs, or a detached sha). */
export function childHead(dotGit: string): string | null {
  const head = readSmall(path.join(dotGit, 'HEAD'))?.trim();
  if (!head) return null;
  if (/^[0-9a-f]{40}$/.test(head)) return head;
  const ref = /^ref: (refs\/[A-Za-z0-9._/-]+)$/.exec(head)?.[1];
  if (!ref || ref.split('/').includes('..')) return null;
  const loose = readSmall(path.join(dotGit, ref))?.trim();
  if (loose && /^[0-9a-f]{40}$/.test(loose)) return loose;
  for (const line of (readSmall(path.join(dotGit, 'packed-refs')) ?? '').split('\n')) {
    const m = /^([0-9a-f]{40}) (.+)$/.exec(line);
    if (m?.[2] === ref) return m[1]!;
  }
  return null;
}

/** The commits the child made on top of the base, oldest first, read from its loose objects. */
export function childCommits(dotGit: string, base: string): { commits: ChildCommit[]; incomplete?: string } {
  const head = childHead(dotGit);
  if (!head) return { commits: [], incomplete: 'its HEAD could not be read' };
  const commits: ChildCommit[] = [];
  for (let sha = head; sha !== base; ) {
    if (commits.length >= MAX_COMMITS) return { commits: commits.reverse(), incomplete: `more than ${MAX_COMMITS} commits` };
    const obj = looseObject(dotGit, sha);
    if (!obj || obj.type !== 'commit') return { commits: commits.reverse(), incomplete: `commit ${sha.slice(0, 12)} is not a loose object of its .git (packed, or not on the base)` };
    const text = obj.body.toString('utf8');
    const split = text.indexOf('\n\n');
    const headers = split < 0 ? text : text.slice(0, split);
    const message = (split < 0 ? '' : text.slice(split + 2)).slice(0, MAX_MESSAGE_CHARS);
    commits.push({ sha, subject: message.split('\n')[0]!.slice(0, 200), message });
    const parent = /^parent ([0-9a-f]{40})$/m.exec(headers)?.[1];
    if (!parent) return { commits: commits.reverse(), incomplete: 'its history does not reach the base' };
    sha = parent;
  }
  return { commits: commits.reverse() };
}

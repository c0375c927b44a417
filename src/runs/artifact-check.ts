/**
 * What an operator may hand a child as an artifact (mounted read-only at /artifacts/NAME).
 *
 * Guarantees: the path's real location is resolved once, here, and judged: not a system path
 * (/, /proc, /sys, /dev, /run, /var/run, /etc, /boot, the engine's state, brig's own state
 * under /var/lib/brig), not brig's own home or runtime directory (its runs, leases, sockets,
 * warm slots), and the object itself a regular file or a tree of them (jail/artifact-tree.ts).
 * What it answers is that object's identity — real path, device, inode — which the jail
 * driver binds and nothing else (a later swap is `artifact_changed`, never followed).
 * Threat: an operator (or a coordinator acting for one) handing a path that gives the child a
 * way out, or into another run. Fails closed: anything it cannot examine is refused.
 */
import { promises as fs } from 'node:fs';
import path from 'node:path';
import { artifactTreeProblem, identityOf, type ArtifactIdentity } from '../jail/index.js';
import { BrigError, err, ok, type Result } from '../util/errors.js';

const SYSTEM = ['/proc', '/sys', '/dev', '/run', '/var/run', '/etc', '/boot', '/var/lib/docker', '/var/lib/containerd', '/var/lib/brig'];

function refuse(a: string, why: string, hint = 'Hand a plain directory or file of regular files (copy it first if needed).'): Result<never, BrigError> {
  return err(new BrigError('artifact_missing', `artifact ${path.basename(a)} is refused: ${why}`, { data: { artifact: a, why }, hint }));
}

const under = (p: string, root: string) => p === root || p.startsWith(root.endsWith('/') ? root : `${root}/`);
const over = (p: string, root: string) => under(root, p);

/**
 * Checks an artifact and answers what to bind: `own` are brig's own directories (its home,
 * its runtime directory), refused whether the artifact lies under one or holds one.
 */
export async function checkArtifact(a: string, own: readonly string[] = []): Promise<Result<ArtifactIdentity, BrigError>> {
  const abs = path.resolve(a);
  const real = await fs.realpath(abs).catch(() => null);
  if (!real) return refuse(a, 'it does not exist or cannot be resolved');
  const it = real === abs ? 'it' : `its real path ${real}`;
  const ownReal = await Promise.all(own.map((o) => fs.realpath(o).catch(() => path.resolve(o))));
  if (ownReal.some((o) => under(real, o) || over(real, o))) return refuse(a, `${it} is brig's own state (its home or runtime directory)`, 'Hand your own files; brig\'s runs, leases, sockets and slots are never an artifact.');
  if (real === '/' || SYSTEM.some((s) => under(real, s))) return refuse(a, `${it} is a system path`);
  const problem = await artifactTreeProblem(real);
  if (problem) return refuse(a, problem);
  const id = await identityOf(real);
  if (!id) return refuse(a, 'it is not a regular file or a directory');
  return ok(id);
}

/**
 * A graph input: a run's committed out/ in the result store, judged as an artifact is — its
 * real path must be the store's own path (no link on the way), the tree regular files only.
 * What the jail binds is that directory's identity, read-only.
 */
export async function checkCommittedOutput(outDir: string, name: string): Promise<Result<ArtifactIdentity, BrigError>> {
  const abs = path.resolve(outDir);
  const real = await fs.realpath(abs).catch(() => null);
  if (!real) return refuse(name, 'the upstream run committed no out/ directory', 'Its node ended without a collected out/; depend on a node that writes out/.');
  if (real !== abs) return refuse(name, 'the committed output is not where the result store put it');
  const problem = await artifactTreeProblem(real);
  if (problem) return refuse(name, problem);
  const id = await identityOf(real);
  if (!id || id.kind !== 'dir') return refuse(name, 'the committed output is not a directory');
  return ok(id);
}

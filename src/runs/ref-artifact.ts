/**
 * Hand-off between children: a ResultRef given as an artifact of a new child (`artifact_refs:
 * ['ref_…']`), mounted read-only at /artifacts/<name> straight from the result store — no copy
 * through the lead's context, never a host path a child names.
 *
 * Guarantees: a ref artifact is its own kind, told by its id alone (REF_ID_RE), resolved by
 * the supervisor from the result store to the one regular file the store holds for it; a
 * spawner inside a jail must hold `refs.read` and `artifacts.read` (capability_denied
 * otherwise) and may hand only refs of its own descendants — any other ref is answered
 * exactly like one that does not exist (`ref_not_found`), as the drill-in does
 * (refs/child-refs.ts); the file's real path must be the store's path for it (no symlink on
 * the way) and it must be a regular file, whose identity (device, inode) is what the jail
 * driver binds — re-checked and staged as any artifact (jail/docker/artifact-stage.ts),
 * read-only, never writable. Threat: a hostile lead handing a sibling tree's output, or
 * steering the bind elsewhere by swapping the path between check and mount. Trusts: the
 * result store's manifest and lookup pointers, the run table's paths. Fails closed.
 */
import { promises as fs } from 'node:fs';
import path from 'node:path';
import { identityOf, type JailArtifact } from '../jail/index.js';
import { grantAllows } from '../lease/index.js';
import { BrigError, err, ok, type Result } from '../util/errors.js';
import type { ResultsPort } from './ports.js';
import type { RunTable } from './run-table.js';
import { REF_ID_RE, isDescendant, type RunRecord } from './types.js';

export const isRefArtifact = (a: string): boolean => REF_ID_RE.test(a);

/** A name /artifacts may hold: the profile's rule (a plain basename of letters, digits, `_ . -`). */
export function artifactName(p: string): string {
  const base = path.posix.basename(p).replace(/[^A-Za-z0-9_.-]/g, '_').replace(/^[^A-Za-z0-9]+/, '').replace(/\.\.+/g, '.').slice(0, 120);
  return base || 'ref';
}

const notFound = (ref: string) => new BrigError('ref_not_found', `no ref ${ref.slice(0, 80)} among this run's descendants`, { hint: 'Hand a ref of one of your own children (or their descendants): its id is in their envelope.' });

/**
 * Checks one ref artifact for a spawn by `parent` (null: the operator, who may hand any live
 * ref): the file to bind and its identity, or the refusal.
 */
export async function checkRefArtifact(d: { table: RunTable; results: ResultsPort | undefined }, ref: string, parent: RunRecord | null): Promise<Result<JailArtifact & { ref: string; runId: string }, BrigError>> {
  if (parent) {
    const caps = d.table.live.get(parent.id)?.caps ?? [];
    for (const need of ['refs.read', 'artifacts.read'] as const) {
      if (!grantAllows({ caps }, need)) {
        return err(new BrigError('capability_denied', `handing a ResultRef to a child needs \`${need}\`, which this run's lease does not grant`, {
          data: { what: need },
          hint: 'A lead hands refs under a lease with refs.read and artifacts.read (the coordinator and researcher profiles have them); else pass what the child needs in its task.',
        }));
      }
    }
  }
  if (!d.results?.resolveRef) return err(new BrigError('ref_not_found', 'this supervisor has no result store to hand refs from'));
  const found = await d.results.resolveRef(ref);
  if (!found) return err(notFound(ref));
  if (parent) {
    const owner = d.table.get(found.ref.runId);
    if (!isDescendant(parent.id, parent.rootRunId, owner)) {
      d.table.ledger.append({ type: 'run.refused', code: 'ref_not_found', reason: 'not_descendant', parentRunId: parent.id, depth: parent.depth + 1 });
      return err(notFound(ref));
    }
  }
  // The store's path for the ref, with nothing on the way that is not what it seems.
  const real = await fs.realpath(found.hostPath).catch(() => null);
  if (real !== path.resolve(found.hostPath)) return err(new BrigError('artifact_missing', `ref ${ref} cannot be handed over: its file is not where the store keeps it`, { data: { artifact: ref } }));
  const id = await identityOf(real);
  if (!id || id.kind !== 'file') return err(new BrigError('artifact_missing', `ref ${ref} cannot be handed over: it is not a regular file`, { data: { artifact: ref } }));
  return ok({ name: artifactName(found.ref.path), hostPath: real, identity: id, ref, runId: found.ref.runId });
}

/**
 * Names under /artifacts must be unique: refs whose names collide (two children's
 * `result.json`) are each named `<run id>-<name>` instead — the same whatever their order.
 */
export function uniqueNames<T extends { name: string; ref?: string; runId?: string }>(arts: T[]): T[] {
  const count = new Map<string, number>();
  for (const a of arts) count.set(a.name, (count.get(a.name) ?? 0) + 1);
  return arts.map((a) => (count.get(a.name)! > 1 && a.runId ? { ...a, name: artifactName(`${a.runId}-${a.name}`) } : a));
}

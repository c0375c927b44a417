/**
 * `brig apply RUN`: a run's `changes.patch` ref into its host repository as a new branch.
 *
 * Guarantees: the patch applied is the one brig computed and stored (its bytes checked
 * against the ref's sha256 whichever way they were read: the result store's file on this
 * host, else the drill-in's byte reads), onto the base the run's record names; the commit's
 * message is the child's own commit messages (from `changes.stat`) or one brig writes.
 * Everything that touches the repository is apply-changes.ts.
 * Fails: a run without a repository or a kept patch, a patch whose bytes do not match → an
 * error that says which and what to do.
 */
import crypto from 'node:crypto';
import fs from 'node:fs';
import os from 'node:os';
import path from 'node:path';
import { BrigError, type Brig, type ResultRef, type RunRecord } from '../protocol/index.js';
import { applyChanges, type ApplyOutcome } from './apply-changes.js';

export interface ApplyRunOptions {
  branch?: string;
  rebase?: boolean;
}

const sha256 = (b: Buffer) => crypto.createHash('sha256').update(b).digest('hex');

/** The ref's bytes: the store's file when this process can read it, else byte reads through the drill-in. */
async function refBytes(brig: Pick<Brig, 'refs'>, run: RunRecord, ref: ResultRef): Promise<Buffer> {
  if (run.resultDir) {
    const local = await fs.promises.readFile(path.join(path.dirname(run.resultDir), ref.path)).catch(() => null);
    if (local && sha256(local) === ref.sha256) return local;
  }
  const parts: Buffer[] = [];
  for (let offset = 0; offset < ref.bytes; ) {
    const r = await brig.refs.read(ref.ref, { offset, length: 1024 * 1024 });
    if (!r.ok) throw r.error;
    const chunk = Buffer.from(r.value.text ?? '', r.value.encoding === 'base64' ? 'base64' : 'utf8');
    if (r.value.returned === 0) break;
    parts.push(chunk.subarray(0, r.value.returned));
    offset += r.value.returned;
  }
  const all = Buffer.concat(parts);
  if (sha256(all) !== ref.sha256) {
    throw new BrigError('state_corrupt', `the bytes of ${ref.ref} (${ref.path}) do not match its sha256 as read from here`, {
      data: { ref: ref.ref },
      hint: "Run `brig apply` as the user that owns brig's home, on its host (the patch is read from the result store).",
    });
  }
  return all;
}

function commitMessage(run: RunRecord, stat: unknown): string {
  const commits = (stat as { commits?: { message?: unknown }[] } | null)?.commits ?? [];
  const messages = commits.map((c) => (typeof c.message === 'string' ? c.message.trim() : '')).filter(Boolean);
  const trailer = `\n\nbrig-run: ${run.id}\nbrig-base: ${run.repo!.base}`;
  if (messages.length === 1) return `${messages[0]}${trailer}`;
  if (messages.length > 1) return `${run.label ?? `changes of run ${run.id}`}\n\n${messages.map((m) => `* ${m.split('\n')[0]}`).join('\n')}${trailer}`;
  return `${run.label ?? `brig: changes of run ${run.id}`}${trailer}`;
}

export async function applyRun(brig: Pick<Brig, 'get' | 'refs'>, runId: string, o: ApplyRunOptions = {}): Promise<ApplyOutcome & { repo: string; filesChanged: number }> {
  const run = await brig.get(runId);
  if (!run) throw new BrigError('run_not_found', `no run ${runId}`);
  if (!run.repo) throw new BrigError('invalid_input', `run ${runId} was given no repository (spawn it with --repo)`, { data: { runId } });
  if (run.status !== 'ended') throw new BrigError('not_running', `run ${runId} has not ended: its change is computed at its end`, { hint: `brig wait ${runId}, then apply it.` });
  const refs = await brig.refs.list(runId);
  if (!refs.ok) throw refs.error;
  const patchRef = refs.value.find((r) => r.source === 'changes' && r.path === 'changes.patch');
  if (!patchRef) {
    throw new BrigError('ref_not_found', `run ${runId} kept no changes.patch${run.changes?.error ? `: ${run.changes.error}` : ''}`, { data: { runId } });
  }
  const statRef = refs.value.find((r) => r.source === 'changes' && r.path === 'changes.stat');
  const stat = statRef ? JSON.parse((await refBytes(brig, run, statRef)).toString('utf8')) as unknown : null;
  const scratch = await fs.promises.mkdtemp(path.join(os.tmpdir(), 'brig-patch-'));
  try {
    const patchFile = path.join(scratch, 'changes.patch');
    await fs.promises.writeFile(patchFile, await refBytes(brig, run, patchRef), { mode: 0o600 });
    const out = await applyChanges({
      repo: run.repo.path,
      ref: run.repo.ref,
      base: run.repo.base,
      patchFile,
      branch: o.branch ?? `brig/${run.id}`,
      ...(o.rebase ? { rebase: true } : {}),
      message: commitMessage(run, stat),
    });
    return { ...out, repo: run.repo.path, filesChanged: run.changes?.filesChanged ?? 0 };
  } finally {
    await fs.promises.rm(scratch, { recursive: true, force: true });
  }
}

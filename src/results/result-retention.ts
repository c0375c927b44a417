/**
 * Retention of the ResultRef store (fs-result-store.ts): what is removed from
 * $BRIG_HOME/results, and when — runs whose refs have all expired, orphan directories older
 * than the retention, temps a crashed writer left, and what an interrupted materialization left.
 *
 * Guarantees: a run is removed with its lookup pointers (`.refs/<ref>`, `.runs/<run>`), so a
 * removed run answers run_not_found / ref_not_found, never an empty listing; every removal runs
 * in the run's own chain, so it never interleaves with a write to the same run's manifest.
 * Threat: names a child chose under the results root, and the disk a dead writer filled.
 * Trusts: the store's manifests and its per-run chains (run-manifests.ts). Fails closed: only directories named by the
 * run-id alphabet are walked; anything else under the root is left alone.
 */
import fsp from 'node:fs/promises';
import path from 'node:path';
import type { RunManifests } from './run-manifests.js';
import { readdirSafe, removeStaleTemps } from './store-fs.js';
import { RUN_ID_RE, type RunManifest } from './types.js';

export interface SweepReport {
  runs: number;
  refs: number;
  bytes: number;
}

/** A temp file this old belongs to a writer that crashed. */
const STALE_TEMP_MS = 60 * 60 * 1000;

export class ResultRetention {
  /** `retentionMs`: how long a directory without a manifest (an orphan) is kept. */
  constructor(
    private readonly manifests: RunManifests,
    private readonly retentionMs: number,
  ) {}

  /** Removes runs whose refs have all expired, and orphans older than the retention. */
  async sweep(now: Date): Promise<SweepReport> {
    const out: SweepReport = { runs: 0, refs: 0, bytes: 0 };
    await this.#eachRun(async (root, run, runPath) => {
      const m = await this.manifests.read(root, run);
      const expired = m
        ? m.refs.every((r) => Date.parse(r.expiresAt) <= now.getTime())
        : (await fsp.stat(runPath)).mtimeMs + this.retentionMs <= now.getTime();
      if (!expired) {
        await removeStaleTemps(runPath, now.getTime() - STALE_TEMP_MS);
        return;
      }
      out.runs++;
      out.refs += m?.refs.length ?? 0;
      out.bytes += m?.refs.reduce((s, r) => s + r.bytes, 0) ?? 0;
      await this.#drop(root, run, m);
    });
    return out;
  }

  /**
   * After a crash, at a supervisor's start (it holds the home lock, so no other writer is
   * here): removes every collect temp (`out.tmp-*`) and write temp (`.tmp-*`), and the
   * directory of each ended run that was never indexed (no manifest): what an interrupted
   * materialization left. Runs `isLive` keeps are redone by the supervisor, not removed.
   */
  async sweepInterrupted(isLive: (runId: string) => boolean): Promise<{ removed: number; bytes: number }> {
    const out = { removed: 0, bytes: 0 };
    const rm = async (p: string) => {
      out.bytes += await duBytes(p);
      out.removed++;
      await fsp.rm(p, { recursive: true, force: true });
    };
    await this.#eachRun(async (root, run, runPath) => {
      if (!(await this.manifests.read(root, run)) && !isLive(run)) return rm(runPath);
      for (const name of await readdirSafe(runPath)) if (name.startsWith('.tmp-') || name.includes('.tmp-')) await rm(path.join(runPath, name));
    });
    return out;
  }

  /** Drops a run's refs and files now (retention decided by the caller). */
  async remove(rootRunId: string, runId: string): Promise<void> {
    await this.manifests.serial(`${rootRunId}/${runId}`, async () => {
      await this.#drop(rootRunId, runId, await this.manifests.read(rootRunId, runId));
      await fsp.rmdir(path.join(this.manifests.dir, rootRunId)).catch(() => undefined);
    });
  }

  /** The run's directory, then its refs' pointers, then its own pointer. */
  async #drop(rootRunId: string, runId: string, m: RunManifest | undefined): Promise<void> {
    const w = this.manifests.writer;
    this.manifests.forget(rootRunId, runId);
    await w.remove(path.join(this.manifests.dir, rootRunId, runId));
    for (const r of m?.refs ?? []) await w.remove(path.join(this.manifests.dir, '.refs', r.ref));
    await w.remove(path.join(this.manifests.dir, '.runs', runId));
  }

  /** fn for every run directory, each in its run's chain; a root left empty is removed. */
  async #eachRun(fn: (rootRunId: string, runId: string, runPath: string) => Promise<void>): Promise<void> {
    for (const root of await readdirSafe(this.manifests.dir)) {
      if (root.startsWith('.') || !RUN_ID_RE.test(root)) continue;
      for (const run of await readdirSafe(path.join(this.manifests.dir, root))) {
        if (!RUN_ID_RE.test(run)) continue;
        await this.manifests.serial(`${root}/${run}`, () => fn(root, run, path.join(this.manifests.dir, root, run)));
      }
      await fsp.rmdir(path.join(this.manifests.dir, root)).catch(() => undefined);
    }
  }
}

async function duBytes(p: string): Promise<number> {
  const st = await fsp.lstat(p).catch(() => undefined);
  if (!st) return 0;
  if (!st.isDirectory()) return st.size;
  let n = 0;
  for (const name of await readdirSafe(p)) n += await duBytes(path.join(p, name));
  return n;
}

/**
 * The ResultRef store's manifests (fs-result-store.ts): `<runDir>/refs.json`, each run's list
 * of refs, and the lookup pointers beside them (`.refs/<ref>` → run, `.runs/<run>` → root).
 *
 * Guarantees: a manifest is the commit point of every write — the refs' pointers go first (a
 * pointer to a ref no manifest lists reads as not found), the manifest last, in one durable
 * commit of the writer (the home's journal replays its lines in that order), so a crash anywhere leaves the run as it was or with its refs whole; one run's
 * read-modify-writes (and retention's removals) run one after another in its chain.
 * Threat: interleaved writers losing refs, and a crash publishing half a run. Trusts: run ids
 * the store checked against the run-id alphabet (checked again here). Fails closed: a manifest
 * that fails its schema throws; nothing is guessed from a damaged one.
 */
import fsp from 'node:fs/promises';
import path from 'node:path';
import { directWriter, type DurableWriter } from '../util/write-journal.js';
import { checkRunId } from './store-fs.js';
import { type ResultRef, type RunManifest, RunManifestSchema } from './types.js';
import { mkdirAll } from '../util/disk-space.js';

const MANIFEST = 'refs.json';
/** Manifests kept in memory after their commit, and the most refs one may hold to be kept. */
const RECENT_MAX = 256;
const RECENT_MAX_REFS = 1000;

export class RunManifests {
  /** Per-run chain so manifest read-modify-writes never interleave. */
  private readonly chains = new Map<string, Promise<unknown>>();
  /** The pointer directories were made by this process (never removed: retention removes files in them). */
  #pointerDirs = false;

  /** `dir`: the results root; `writer`: the home's journal in a supervisor (util/write-journal.ts). */
  constructor(
    readonly dir: string,
    readonly writer: DurableWriter = directWriter,
  ) {}

  runDir(rootRunId: string, runId: string): string {
    checkRunId(rootRunId);
    checkRunId(runId);
    return path.join(this.dir, rootRunId, runId);
  }

  async read(rootRunId: string, runId: string): Promise<RunManifest | undefined> {
    const dir = this.runDir(rootRunId, runId);
    const kept = this.#recent.get(dir);
    if (kept) return kept;
    const text = await fsp.readFile(path.join(dir, MANIFEST), 'utf8').catch(() => undefined);
    return text === undefined ? undefined : RunManifestSchema.parse(JSON.parse(text));
  }

  /**
   * The manifests this process committed last (frozen, each as written): a run's envelope and
   * its refs are read right after its collection. Only the writer caches, so a reader in
   * another process always reads the file; a removal forgets.
   */
  readonly #recent = new Map<string, RunManifest>();

  #keep(dir: string, m: RunManifest): void {
    this.#recent.delete(dir);
    if (m.refs.length > RECENT_MAX_REFS) return;
    this.#recent.set(dir, Object.freeze({ ...m, refs: Object.freeze([...m.refs]) as ResultRef[], skipped: Object.freeze([...m.skipped]) as RunManifest['skipped'] }));
    if (this.#recent.size > RECENT_MAX) this.#recent.delete(this.#recent.keys().next().value!);
  }

  /** The root of a run whose manifest this process committed last (else undefined: read its pointer). */
  recentRoot(runId: string): string | undefined {
    for (const m of this.#recent.values()) if (m.runId === runId) return m.rootRunId;
    return undefined;
  }

  /** A run's manifest is gone (retention): not served from memory either. */
  forget(rootRunId: string, runId: string): void {
    this.#recent.delete(this.runDir(rootRunId, runId));
  }

  /** The bytes of the run's committed refs (what counts against its run cap). */
  async bytes(rootRunId: string, runId: string): Promise<number> {
    const m = await this.read(rootRunId, runId);
    return m ? m.refs.reduce((s, r) => s + r.bytes, 0) : 0;
  }

  /** Adds refs (and skipped entries) to the run's manifest: the commit point. */
  commit(rootRunId: string, runId: string, refs: ResultRef[], skipped: RunManifest['skipped']): Promise<RunManifest> {
    return this.serial(`${rootRunId}/${runId}`, async () => {
      const dir = this.runDir(rootRunId, runId);
      const m = (await this.read(rootRunId, runId)) ?? { runId, rootRunId, refs: [], skipped: [] };
      const next: RunManifest = { ...m, refs: [...m.refs, ...refs], skipped: [...m.skipped, ...skipped] };
      if (!this.#pointerDirs) {
        await mkdirAll(path.join(this.dir, '.refs'), 0o777);
        await mkdirAll(path.join(this.dir, '.runs'), 0o777);
        this.#pointerDirs = true;
      }
      const pointer = `${rootRunId}/${runId}`;
      // One commit, in this order (a replay keeps it): the pointers, the run's own, the manifest.
      await this.writer.writeMany([
        ...refs.map((r) => ({ file: path.join(this.dir, '.refs', r.ref), data: pointer })),
        { file: path.join(this.dir, '.runs', runId), data: rootRunId },
        { file: path.join(dir, MANIFEST), data: JSON.stringify(next) },
      ]);
      this.#keep(dir, next);
      return next;
    });
  }

  /** Runs fn after every earlier operation on the same run (`root/run`) has settled. */
  serial<T>(key: string, fn: () => Promise<T>): Promise<T> {
    const prev = this.chains.get(key) ?? Promise.resolve();
    const next = prev.then(fn, fn);
    const settled = next.catch(() => undefined);
    this.chains.set(key, settled);
    void settled.then(() => {
      if (this.chains.get(key) === settled) this.chains.delete(key);
    });
    return next;
  }
}

/**
 * The ResultRef store on the file system (the ResultStore role, result-store.ts):
 * $BRIG_HOME/results/<rootRunId>/<runId>/ holds a run's result value, its bounded stdio and its
 * /workspace/out files, each described by a ResultRef in refs.json. Retention (what is removed,
 * and when) is result-retention.ts.
 *
 * Guarantees: streaming end to end (hash, line index, kind and preview in the same pass; the
 * content is never held in memory; a collected out/ is described from the scans its collect
 * made while the bytes came in, not read again); atomic and durable (every file is written
 * to a temp, fsynced and renamed — util/atomic-file.ts — and the manifest, written last, is
 * the commit point, so a crash leaves no half ref); byte caps per file
 * and per run refuse with `ref_too_large`, never truncate; only regular files become refs
 * (symlinks, hardlinks, devices, fifos are skipped and listed); files are made read-only.
 * Threat: a child's output trying to escape its directory or exhaust the host.
 * Trusts: the run ids the supervisor gives (checked against a closed alphabet anyway).
 * Fails closed: anything odd in a name or an entry is refused or skipped, never followed.
 */
import { randomBytes } from 'node:crypto';
import fs from 'node:fs';
import fsp from 'node:fs/promises';
import path from 'node:path';
import { Readable, Transform } from 'node:stream';
import { pipeline } from 'node:stream/promises';
import { commitTemp, fsyncDir, writeFileAtomic } from '../util/atomic-file.js';
import { directWriter, type DurableWriter } from '../util/write-journal.js';
import { BrigError } from '../util/errors.js';
import { mkdirAll } from '../util/disk-space.js';
import { ContentScan, ScannedFile, decodeLineIndex, scanObserver } from './content-scan.js';
import { ResultRetention, type SweepReport } from './result-retention.js';
import { valueItem, type CollectedScan, type ResultStore, type StreamItem } from './result-store.js';
import { RunManifests } from './run-manifests.js';
import {
  checkRunId,
  exists,
  inParallel,
  listRegularFiles,
  newRefId,
  notFound,
  readPointer,
  safeRelPath,
  tooLarge,
} from './store-fs.js';
import {
  REF_ID_RE,
  type RefSource,
  type ResultCaps,
  type ResultRef,
  type RunManifest,
} from './types.js';

export interface ResultStoreOptions {
  /** The results root: brigPaths(home).results. */
  dir: string;
  caps?: Partial<ResultCaps>;
  /** How long refs live (default 24 h). */
  retentionMs?: number;
  now?: () => Date;
  /** How manifests, pointers and envelopes are written: the home's journal in a supervisor; default each its own fsyncs. */
  writer?: DurableWriter;
}

export const DEFAULT_RESULT_CAPS: ResultCaps = Object.freeze({ maxFileBytes: 4 * 1024 ** 3, maxRunBytes: 16 * 1024 ** 3 });
export const DEFAULT_RETENTION_MS = 24 * 60 * 60 * 1000;
const INDEX_DIR = '.index';

export class FsResultStore implements ResultStore {
  readonly dir: string;
  private readonly caps: ResultCaps;
  private readonly retentionMs: number;
  private readonly now: () => Date;
  private readonly manifests: RunManifests;
  /** Bytes being streamed right now, per run, so concurrent writes share the run cap. */
  private readonly inflight = new Map<string, number>();
  private readonly retention: ResultRetention;
  readonly writer: DurableWriter;

  constructor(opts: ResultStoreOptions) {
    this.dir = path.resolve(opts.dir);
    this.caps = { ...DEFAULT_RESULT_CAPS, ...opts.caps };
    this.retentionMs = opts.retentionMs ?? DEFAULT_RETENTION_MS;
    this.now = opts.now ?? (() => new Date());
    this.writer = opts.writer ?? directWriter;
    this.manifests = new RunManifests(this.dir, this.writer);
    this.retention = new ResultRetention(this.manifests, this.retentionMs);
  }

  runDir(rootRunId: string, runId: string): string {
    return this.manifests.runDir(rootRunId, runId);
  }

  /** Streams one output into a ref. `name` is relative (`stdout.txt`, `result.json`). */
  async writeStream(
    runId: string,
    rootRunId: string,
    name: string,
    readable: NodeJS.ReadableStream | Readable,
    caps: Partial<ResultCaps> = {},
    source: RefSource = 'stdout',
  ): Promise<ResultRef> {
    return (await this.writeStreams(runId, rootRunId, [{ name, readable, source }], caps))[0]!;
  }

  /** One manifest commit for the batch; a refused item keeps the ones before it committed, as one write after another would. */
  async writeStreams(runId: string, rootRunId: string, items: readonly StreamItem[], caps: Partial<ResultCaps> = {}): Promise<ResultRef[]> {
    const before = (await this.manifests.read(rootRunId, runId))?.refs.length ?? 0;
    if (items.length === 0) return [];
    const m = await this.#writeAndCommit(runId, rootRunId, [], [], items, caps, false);
    return m.refs.slice(before);
  }

  /**
   * Writes `items` one after another (each counted against the run's cap with the refs before
   * it, committed or not), then commits them with `refs` and `skipped` in one manifest commit.
   * A refused item keeps what came before it committed, as one write after another would.
   */
  async #writeAndCommit(runId: string, rootRunId: string, refs: ResultRef[], skipped: RunManifest['skipped'], items: readonly StreamItem[], caps: Partial<ResultCaps>, always = true): Promise<RunManifest> {
    const dir = this.runDir(rootRunId, runId);
    const all = [...refs];
    const commit = async () => {
      // The line indexes' names (each written fsynced, its directory not): none written, none to sync.
      if (all.length > 0) await fsyncDir(path.join(dir, INDEX_DIR));
      return this.manifests.commit(rootRunId, runId, all, skipped);
    };
    let pending = all.reduce((n, r) => n + r.bytes, 0);
    for (const it of items) {
      try {
        all.push(await this.#writeOne(runId, rootRunId, it.name, it.readable, caps, it.source, pending));
      } catch (e) {
        // An indexed out/ is committed even empty (the run has results); bare writes only with something written.
        if (always || all.length > 0) await commit();
        throw e;
      }
      pending += all[all.length - 1]!.bytes;
    }
    return commit();
  }

  /** One output's bytes into its file (durable) and its line index; the caller commits the ref. */
  async #writeOne(
    runId: string,
    rootRunId: string,
    name: string,
    readable: NodeJS.ReadableStream | Readable,
    caps: Partial<ResultCaps>,
    source: RefSource,
    pendingBytes: number,
  ): Promise<ResultRef> {
    const rel = safeRelPath(name);
    if (rel.split('/')[0] === 'out') throw new BrigError('invalid_input', 'out/ is filled by indexDir, not writeStream');
    const dir = this.runDir(rootRunId, runId);
    const limits = this.effectiveCaps(caps);
    await mkdirAll(path.join(dir, path.dirname(rel)), 0o777);
    const final = path.join(dir, rel);
    if (await exists(final)) throw new BrigError('invalid_input', `run ${runId} already has a ref at ${rel}`);
    const used = (await this.manifests.bytes(rootRunId, runId)) + pendingBytes;
    const tmp = path.join(dir, `.tmp-${randomBytes(8).toString('hex')}`);
    const scan = new ContentScan();
    const key = `${rootRunId}/${runId}`;
    let counted = 0;
    const meter = new Transform({
      transform: (chunk: Buffer, _enc, cb) => {
        scan.update(chunk);
        const inflight = (this.inflight.get(key) ?? 0) + chunk.length;
        this.inflight.set(key, inflight);
        counted += chunk.length;
        if (scan.size > limits.maxFileBytes) return cb(tooLarge(rel, 'file', limits.maxFileBytes));
        if (used + inflight > limits.maxRunBytes) return cb(tooLarge(rel, 'run', limits.maxRunBytes));
        cb(null, chunk);
      },
    });
    try {
      // flush: fsync before close, so the rename below never publishes bytes still in flight.
      await pipeline(readable, meter, fs.createWriteStream(tmp, { flags: 'wx', mode: 0o600, highWaterMark: 1 << 20, flush: true }));
      await fsp.chmod(tmp, 0o444);
      await commitTemp(tmp, final);
    } catch (e) {
      await fsp.rm(tmp, { force: true });
      throw e instanceof BrigError ? e : new BrigError('internal', `could not materialize ${rel}`, { cause: e });
    } finally {
      this.inflight.set(key, (this.inflight.get(key) ?? counted) - counted);
    }
    const facts = new ScannedFile(rel, scan.finish());
    const ref = this.describe(runId, rootRunId, rel, source, facts);
    await this.writeIndex(dir, ref.ref, facts.lineIndex);
    return ref;
  }

  /** The child's result value: a string becomes result.txt, anything else result.json. */
  async writeValue(runId: string, rootRunId: string, value: unknown, caps: Partial<ResultCaps> = {}): Promise<ResultRef> {
    return (await this.writeStreams(runId, rootRunId, [valueItem(value)], caps))[0]!;
  }

  /**
   * Turns an already-materialized directory inside the run's result directory (where the
   * jail's collect put /workspace/out) into refs, in place. Regular files only. Reads every
   * file back to scan it; indexCollected does not when collect scanned them on the way in.
   */
  indexDir(runId: string, rootRunId: string, dir: string, caps: Partial<ResultCaps> = {}): Promise<RunManifest> {
    return this.indexCollected(runId, rootRunId, dir, [], caps);
  }

  /**
   * indexDir for a directory the jail's collect just wrote with `observe` (scanObserver)
   * watching: `scans` is its report's files (path relative to `dir`, `observed` = the scan).
   * A file whose scan this store made and whose size on disk is the scanned size is described
   * from the scan; any other file (no scan, a foreign one, a size that changed) is read as
   * indexDir reads it. The walk, the caps, the skips and the commit are indexDir's.
   */
  async indexCollected(
    runId: string,
    rootRunId: string,
    dir: string,
    scans: Iterable<CollectedScan>,
    caps: Partial<ResultCaps> = {},
    more: readonly StreamItem[] = [],
  ): Promise<RunManifest> {
    const runDir = this.runDir(rootRunId, runId);
    const abs = path.resolve(dir);
    const relDir = path.relative(runDir, abs);
    if (relDir === '' || relDir.startsWith('..') || path.isAbsolute(relDir) || relDir.split(path.sep).some((s) => s.startsWith('.'))) {
      throw new BrigError('invalid_input', 'indexDir takes a directory inside the run\'s result directory (e.g. <runDir>/out)');
    }
    const limits = this.effectiveCaps(caps);
    const { files, skipped } = await listRegularFiles(abs, runDir);
    let total = await this.manifests.bytes(rootRunId, runId);
    for (const f of files) {
      if (f.size > limits.maxFileBytes) throw tooLarge(f.rel, 'file', limits.maxFileBytes);
      total += f.size;
      if (total > limits.maxRunBytes) throw tooLarge(f.rel, 'run', limits.maxRunBytes);
    }
    const known = new Map<string, ScannedFile>();
    for (const s of scans) if (s.observed instanceof ScannedFile) known.set(s.path, s.observed);
    const prefix = relDir.split(path.sep).join('/') + '/';
    await mkdirAll(path.join(runDir, INDEX_DIR), 0o777);
    const refs: ResultRef[] = new Array(files.length);
    await inParallel(files, async (f, i) => {
      const scanned = known.get(f.rel.slice(prefix.length));
      const facts = scanned !== undefined && scanned.bytes === f.size ? scanned : await scanFile(f.abs, f.rel);
      await fsp.chmod(f.abs, 0o444);
      const ref = this.describe(runId, rootRunId, f.rel, 'out', facts);
      await this.writeIndex(runDir, ref.ref, facts.lineIndex);
      refs[i] = ref;
    });
    // `more` (a run's value, transcript, stdio) rides on the same commit: one durable point.
    return this.#writeAndCommit(runId, rootRunId, refs, skipped, more, caps);
  }

  /** The observer the jail's collect feeds each out/ file through (ResultsPort.observe). */
  readonly observe = scanObserver;

  async manifest(runId: string): Promise<RunManifest> {
    checkRunId(runId);
    const root = this.manifests.recentRoot(runId) ?? (await readPointer(path.join(this.dir, '.runs', runId)));
    if (!root) throw new BrigError('run_not_found', `no results for run ${runId}`, { hint: '`brig list` shows the known runs.' });
    return (await this.manifests.read(root, runId)) ?? { runId, rootRunId: root, refs: [], skipped: [] };
  }

  async list(runId: string): Promise<ResultRef[]> {
    return (await this.manifest(runId)).refs;
  }

  async get(ref: string): Promise<ResultRef> {
    if (!REF_ID_RE.test(ref)) throw notFound(ref);
    const ptr = await readPointer(path.join(this.dir, '.refs', ref));
    if (!ptr) throw notFound(ref);
    const [root, run] = ptr.split('/');
    const m = root && run ? await this.manifests.read(root, run) : undefined;
    const found = m?.refs.find((r) => r.ref === ref);
    if (!found) throw notFound(ref);
    if (Date.parse(found.expiresAt) <= this.now().getTime()) throw notFound(ref, 'it has expired');
    return found;
  }

  /** The host path of a ref's bytes. Internal: never shown to a user or a child. */
  resolvePath(ref: ResultRef): string {
    return path.join(this.runDir(ref.rootRunId, ref.runId), ...safeRelPath(ref.path).split('/'));
  }

  async lineIndex(ref: ResultRef): Promise<number[]> {
    const buf = await fsp.readFile(path.join(this.runDir(ref.rootRunId, ref.runId), INDEX_DIR, `${ref.ref}.lidx`)).catch(() => undefined);
    return buf ? decodeLineIndex(buf) : [0];
  }

  // The supervisor's ResultsPort (src/runs/ports.ts), satisfied structurally: root first.

  /** Where the jail's collect puts a run's /workspace/out (it must not exist yet). */
  outDir(rootRunId: string, runId: string): string {
    return path.join(this.runDir(rootRunId, runId), 'out');
  }

  /** Indexes a collected out/ directory (from collect's scans when given); returns how many refs it made. */
  async index(rootRunId: string, runId: string, dir: string, extras: { collected?: Iterable<CollectedScan> } = {}): Promise<number> {
    const before = (await this.manifests.read(rootRunId, runId))?.refs.length ?? 0;
    const m = await this.indexCollected(runId, rootRunId, dir, extras.collected ?? []);
    return m.refs.length - before;
  }

  /** Drops a run's refs and files now (retention decided by the caller). */
  async remove(rootRunId: string, runId: string): Promise<void> {
    this.runDir(rootRunId, runId);
    await this.retention.remove(rootRunId, runId);
  }

  /** What an interrupted materialization left, removed at a supervisor's start (ResultRetention). */
  sweepInterrupted(isLive: (runId: string) => boolean): Promise<{ removed: number; bytes: number }> {
    return this.retention.sweepInterrupted(isLive);
  }

  /** Removes runs whose refs have all expired, and orphans older than the retention (ResultRetention). */
  sweep(now: Date = this.now()): Promise<SweepReport> {
    return this.retention.sweep(now);
  }

  private effectiveCaps(caps: Partial<ResultCaps>): ResultCaps {
    return {
      maxFileBytes: Math.min(this.caps.maxFileBytes, caps.maxFileBytes ?? Infinity),
      maxRunBytes: Math.min(this.caps.maxRunBytes, caps.maxRunBytes ?? Infinity),
    };
  }

  private describe(runId: string, rootRunId: string, rel: string, source: RefSource, facts: ScannedFile): ResultRef {
    const created = this.now();
    return {
      ref: newRefId(),
      runId,
      rootRunId,
      path: rel,
      source,
      kind: facts.kind,
      bytes: facts.bytes,
      ...(facts.rows !== undefined ? { rows: facts.rows } : {}),
      ...(facts.columns !== undefined ? { columns: facts.columns } : {}),
      ...(facts.columnCount !== undefined ? { columnCount: facts.columnCount } : {}),
      lines: facts.lines,
      sha256: facts.sha256,
      preview: facts.preview,
      createdAt: created.toISOString(),
      expiresAt: new Date(created.getTime() + this.retentionMs).toISOString(),
    };
  }

  /** The ref's line index, durable but for its directory entry: the caller fsyncs INDEX_DIR once. */
  private async writeIndex(runDir: string, ref: string, lineIndex: Buffer): Promise<void> {
    await mkdirAll(path.join(runDir, INDEX_DIR), 0o777);
    await writeFileAtomic(path.join(runDir, INDEX_DIR, `${ref}.lidx`), lineIndex, { syncDir: false });
  }
}

/** Reads a file through once to scan it: the path of a file no collect scanned. */
async function scanFile(abs: string, rel: string): Promise<ScannedFile> {
  const scan = new ContentScan();
  for await (const chunk of fs.createReadStream(abs, { highWaterMark: 1 << 20 })) scan.update(chunk as Buffer);
  return new ScannedFile(rel, scan.finish());
}

export { newRefId, safeRelPath } from './store-fs.js';

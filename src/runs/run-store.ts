/**
 * The one door to a run's directory, $BRIG_HOME/runs/<id>/: every file of it (protocol
 * RUN_FILES) is written and read here, nowhere else.
 *
 * Guarantees: every write is temp + rename (util/atomic-file.ts), so whoever reads finds the
 * old content or the new one whole; a write is durable unless the caller says the state may
 * be lost to a machine crash — the table below says which and why. In a supervisor the writes
 * go through the home's journal (util/write-journal.ts: a line, one fdatasync shared by every
 * writer of the moment, the next open replaying it over the files); elsewhere each write
 * fsyncs its file and directory. A `durable: false` write still never comes back older after
 * a crash of the process: its line precedes any later durable one, whose sync carries it. Every read is parsed and checked (the record by protocol's runRecordProblem, the
 * request by the one spawn schema, the packet and the agent spec by their shape): a file that
 * is not what brig wrote is `state_corrupt` naming the run, the file and the field — never a
 * cast. Run ids are validated before they become path parts.
 * Threat: a torn or tampered file read back as state (a restart trusting a half record, a
 * respawn running a request nobody admitted). Trusts: the file system's rename.
 * Fails closed: a bad file is an error, never a default.
 *
 * What must survive a crash (durable saves of run.json), and why:
 *   admitted (intake)      the run exists: a restart must find it queued or starting, not lose it
 *   before start (launch)  leaseId (revoke it), jailKey (find and sweep a pooled jail), limits
 *                          and budget as granted: a restart reattaches the child it started
 *   before stop + collect  pendingEnd: a kill is recorded before the engine is asked anything;
 *   (end)                  a crash mid-collection is redone, never left half done
 *   ended (end)            the one end reason (INV-8) and `unreleased` until the release is done
 * Everything else — `running` (reconcile reattaches a `starting` run whose container started),
 * progress lines and step counts, the collect's patch (redone from pendingEnd), `unreleased`
 * cleared (the release is idempotent and redone) — is written with `durable: false`.
 *
 * A full home (ENOSPC, EDQUOT): a run's record and its checkpoint are state the supervisor
 * already holds in memory for a live run, so a save or checkpoint the disk refuses is *held* —
 * kept in memory (the newest per file), served by load/read, and written by a retry every
 * RETRY_MS until it lands; a newer write of the file supersedes it, removing the file or the
 * run drops it. A crash before it lands loses it as a crash before the save would have.
 * Everything a run is admitted or started on (intake's files and first save, the packet) is
 * never held: the disk refusing it refuses the action, `storage_full`. Writes to one file are
 * serialized, so a retry never lands after a newer write.
 */
import { promises as fs, readFileSync } from 'node:fs';
import path from 'node:path';
import { directWriter, type DurableWriter } from '../util/write-journal.js';
import { isNoSpace, mkdirAll } from '../util/disk-space.js';
import { BrigError } from '../util/errors.js';
import { RUN_FILES, SUMMARY_BOUNDS, isRunId, runRecordProblem, type AgentPacket, type SpawnPacket } from '../protocol/index.js';
import { AgentFrontmatterSchema, type AgentSpec } from '../agents/index.js';
import type { JailArtifact } from '../jail/index.js';
import { z } from 'zod';
import { SpawnRequestSchema } from './spawn-request.js';
import type { RunRecord, SpawnRequest } from './types.js';

export { isRunId } from '../protocol/index.js';
export { RUN_FILES } from '../protocol/index.js';

type JsonFile = 'request' | 'agent' | 'packet' | 'artifacts';
type RawFile = 'script' | 'checkpoint' | 'transcript';

export interface SaveOptions {
  /** false: a machine crash may lose this save (the header's table says which may). Default true. */
  durable?: boolean;
  /**
   * When the home has no space: hold the write in memory and retry it until it lands (true,
   * the default for a record), or refuse `storage_full` (false: what admits a run).
   */
  hold?: boolean;
}

/** How often writes the disk refused for want of space are tried again. */
export const RETRY_MS = 1000;

/** A write the disk refused, held until it lands. */
interface Held {
  runId: string;
  data: string | Buffer;
  sync: boolean;
}

function noSpace(runId: string, file: string, e: unknown): BrigError {
  return new BrigError('storage_full', `no space left in brig's home for ${file} of run ${runId}`, { data: { runId, file }, cause: e });
}

function corrupt(runId: string, file: string, why: string): BrigError {
  return new BrigError('state_corrupt', `${file} of run ${runId} is not what brig wrote: ${why}`, { data: { runId, file } });
}

function parseJson(runId: string, file: string, text: string): unknown {
  try {
    return JSON.parse(text) as unknown;
  } catch {
    throw corrupt(runId, file, 'not JSON');
  }
}

const isObj = (v: unknown): v is Record<string, unknown> => !!v && typeof v === 'object' && !Array.isArray(v);

/** The packet's shape where a restart relies on it (its lease caps, the agent's tools). */
function packetProblem(v: unknown): string | null {
  if (!isObj(v) || v.v !== 1 || typeof v.runId !== 'string' || typeof v.task !== 'string') return 'not a spawn packet';
  const lease = v.lease;
  if (!isObj(lease) || typeof lease.id !== 'string' || !Array.isArray(lease.caps) || !lease.caps.every((c) => typeof c === 'string')) return 'lease is missing or of the wrong type';
  if (v.agent !== undefined && (!isObj(v.agent) || !Array.isArray((v.agent as Partial<AgentPacket>).tools))) return 'agent is of the wrong type';
  return null;
}

/** A graph node's upstream summaries as intake bounded them (SUMMARY_BOUNDS). */
const UpstreamSchema = z.array(z.strictObject({ node: z.string().min(1).max(200), text: z.string().max(4 * SUMMARY_BOUNDS.bytes) })).max(SUMMARY_BOUNDS.count);

const ArtifactsSchema = z.array(
  z.strictObject({
    name: z.string().min(1),
    hostPath: z.string().startsWith('/'),
    identity: z.strictObject({ realPath: z.string().startsWith('/'), dev: z.string().regex(/^\d+$/), ino: z.string().regex(/^\d+$/), kind: z.enum(['file', 'dir']) }),
  }),
);

function artifactsProblem(v: unknown): string | null {
  const p = ArtifactsSchema.safeParse(v);
  return p.success ? null : `${p.error.issues[0]?.path.join('.') || '(root)'}: ${p.error.issues[0]?.message ?? 'not a list of artifacts'}`;
}

/** A pinned spec is the frontmatter's schema plus its body and where it came from. */
const PinnedSpecSchema = AgentFrontmatterSchema.extend({ instructions: z.string(), source: z.string() });

function agentProblem(v: unknown): string | null {
  const p = PinnedSpecSchema.safeParse(v);
  return p.success ? null : `${p.error.issues[0]?.path.join('.') || '(root)'}: ${p.error.issues[0]?.message ?? 'not an agent spec'}`;
}

export class RunStore {
  /** Writes the disk refused for want of space, by file path: the newest of each. */
  readonly #held = new Map<string, Held>();
  #heldSince: number | undefined;
  #retry: NodeJS.Timeout | undefined;
  /** The write in flight per file: writes to one file land in the order they were asked for. */
  readonly #chains = new Map<string, Promise<void>>();
  /** Run directories made by this store (and not removed by it since): no mkdir per write. */
  readonly #made = new Set<string>();

  constructor(
    readonly root: string,
    private readonly retryMs = RETRY_MS,
    /** The home's journal (util/write-journal.ts) in a supervisor; plain durable writes elsewhere. */
    private readonly writer: DurableWriter = directWriter,
  ) {}

  /** Writes held for want of space (0 while the disk takes every write), and since when. */
  held(): { files: number; since: string | null } {
    return { files: this.#held.size + this.#tails.size, since: this.#heldSince === undefined ? null : new Date(this.#heldSince).toISOString() };
  }

  /** Lines an append-only file's disk refused, by file path, in order: appended before any later line. */
  readonly #tails = new Map<string, { runId: string; data: string }>();

  /**
   * Appends to a run's append-only file (an agent's transcript). On a full disk what was
   * written of it is cut back and the lines are held, in order, and appended when space
   * returns (by the retry, or the next append of the file), never out of order.
   */
  async append(runId: string, name: 'transcript', text: string): Promise<void> {
    const file = this.file(runId, name);
    await this.#serial(file, async () => {
      const data = (this.#tails.get(file)?.data ?? '') + text;
      if (await this.#appendWhole(runId, file, data)) return void this.#dropTail(file);
      this.#tails.set(file, { runId, data });
      this.#heldSince ??= Date.now();
      this.#retry ??= setTimeout(() => void this.#retryHeld(), this.retryMs).unref();
    });
  }

  /** true: all of `data` appended; false: the disk had no room, and the file is as it was. */
  async #appendWhole(runId: string, file: string, data: string): Promise<boolean> {
    const size = (await fs.stat(file).catch(() => null))?.size ?? 0;
    try {
      await this.ensureDir(runId);
      await fs.appendFile(file, data, { mode: 0o600 });
      return true;
    } catch (e) {
      if (!isNoSpace(e)) throw e;
      // A line cut midway would be a torn line inside the transcript: cut back (shrinking needs no space).
      await fs.truncate(file, size).catch(() => {});
      return false;
    }
  }

  #dropTail(file: string): void {
    if (!this.#tails.delete(file)) return;
    this.#drop(file);
  }

  #serial(file: string, fn: () => Promise<void>): Promise<void> {
    const next = (this.#chains.get(file) ?? Promise.resolve()).then(fn, fn);
    this.#chains.set(file, next);
    const done = () => {
      if (this.#chains.get(file) === next) this.#chains.delete(file);
    };
    next.then(done, done);
    return next;
  }

  /** The one write path of a run's file: atomic, serialized per file, held or refused on a full disk. */
  #put(runId: string, file: string, data: string | Buffer, o: { sync: boolean; hold: boolean }): Promise<void> {
    return this.#serial(file, async () => {
      try {
        await this.ensureDir(runId);
        await this.writer.write(file, data, { durable: o.sync });
      } catch (e) {
        if (!isNoSpace(e)) throw e;
        if (!o.hold) throw noSpace(runId, path.basename(file), e);
        this.#held.set(file, { runId, data, sync: o.sync });
        this.#heldSince ??= Date.now();
        this.#retry ??= setTimeout(() => void this.#retryHeld(), this.retryMs).unref();
        return;
      }
      // Landed: an older held write of this file is superseded.
      this.#drop(file);
    });
  }

  #drop(file: string): void {
    this.#held.delete(file);
    if (this.#held.size > 0 || this.#tails.size > 0) return;
    this.#heldSince = undefined;
    clearTimeout(this.#retry);
    this.#retry = undefined;
  }

  /** Tries every held write once, in the order they were first held; stops at the first refusal. */
  async #retryHeld(): Promise<void> {
    this.#retry = undefined;
    let full = false;
    for (const file of [...this.#held.keys()]) {
      if (full) break;
      await this.#serial(file, async () => {
        const h = this.#held.get(file);
        if (!h) return;
        try {
          await this.ensureDir(h.runId);
          await this.writer.write(file, h.data, { durable: h.sync });
        } catch (e) {
          // Still full: the next round. Anything else (the run's directory gone): nothing to keep.
          if (isNoSpace(e)) return void (full = true);
        }
        if (this.#held.get(file) === h) this.#drop(file);
      });
    }
    for (const file of [...this.#tails.keys()]) {
      if (full) break;
      await this.#serial(file, async () => {
        const h = this.#tails.get(file);
        if (!h) return;
        const landed = await this.#appendWhole(h.runId, file, h.data).catch(() => true);
        if (!landed) return void (full = true);
        if (this.#tails.get(file) === h) this.#dropTail(file);
      });
    }
    if (this.#held.size > 0 || this.#tails.size > 0) this.#retry ??= setTimeout(() => void this.#retryHeld(), this.retryMs).unref();
  }

  /** A held write of this file, newest first: what the run's state is while the disk is full. */
  #heldData(file: string): string | Buffer | undefined {
    return this.#held.get(file)?.data;
  }

  dir(runId: string): string {
    if (!isRunId(runId)) throw new BrigError('invalid_input', `not a run id: ${runId.slice(0, 80)}`);
    return path.join(this.root, runId);
  }

  file(runId: string, name: keyof typeof RUN_FILES): string {
    return path.join(this.dir(runId), RUN_FILES[name]);
  }

  async ensureDir(runId: string): Promise<string> {
    const d = this.dir(runId);
    if (this.#made.has(runId)) return d;
    await mkdirAll(d, 0o700);
    this.#made.add(runId);
    return d;
  }

  async save(rec: RunRecord, o: SaveOptions = {}): Promise<void> {
    await this.#put(rec.id, this.file(rec.id, 'record'), JSON.stringify(rec, null, 1), { sync: o.durable !== false, hold: o.hold !== false });
  }

  /** The record; undefined when there is none; `state_corrupt` when the file is not one. */
  async load(runId: string): Promise<RunRecord | undefined> {
    if (!isRunId(runId)) return undefined;
    let text: string;
    const held = this.#heldData(this.file(runId, 'record'));
    try {
      text = held !== undefined ? held.toString() : await fs.readFile(this.file(runId, 'record'), 'utf8');
    } catch {
      return undefined;
    }
    return this.#record(runId, text);
  }

  #record(runId: string, text: string): RunRecord {
    const v = parseJson(runId, RUN_FILES.record, text);
    const problem = runRecordProblem(v);
    if (problem !== null) throw corrupt(runId, RUN_FILES.record, problem);
    return v as RunRecord;
  }

  /** Every record, and the runs whose record is not one (never silently dropped: the caller reports them). */
  async loadAll(): Promise<{ records: RunRecord[]; corrupt: BrigError[] }> {
    let names: string[];
    try {
      names = await fs.readdir(this.root);
    } catch {
      return { records: [], corrupt: [] };
    }
    // Read synchronously on purpose: 3,000 records are ~50 ms this way, against ~0.5 s one
    // awaited read after another and ~0.2 s with 64 in flight (the thread pool's round trips
    // dominate a 1 KB read). Called at start-up and by local listings, not per request.
    const records: RunRecord[] = [];
    const bad: BrigError[] = [];
    for (const n of names) {
      if (!isRunId(n)) continue;
      let text: string;
      try {
        text = readFileSync(this.file(n, 'record'), 'utf8');
      } catch {
        continue; // a directory with no record yet (being made, or half removed)
      }
      try {
        records.push(this.#record(n, text));
      } catch (e) {
        bad.push(e as BrigError);
      }
    }
    return { records, corrupt: bad };
  }

  /**
   * Run directories with no record, and when each last changed (epoch ms): what an intake
   * cut short by a crash left (its first file is written before its admitted save) — or an
   * intake in flight in another process (an in-process CLI's) when it is young. `only`: just
   * these run ids.
   */
  async withoutRecord(only?: Iterable<string>): Promise<{ runId: string; changedAt: number }[]> {
    const names = only ? [...only] : await fs.readdir(this.root).catch(() => [] as string[]);
    const out: { runId: string; changedAt: number }[] = [];
    for (const n of names) {
      if (!isRunId(n)) continue;
      const dir = await fs.stat(this.dir(n)).catch(() => null);
      if (!dir?.isDirectory()) continue;
      if (await fs.stat(this.file(n, 'record')).then(() => true, () => false)) continue;
      out.push({ runId: n, changedAt: dir.mtimeMs });
    }
    return out;
  }

  /** The spawn request as admitted (parsed by intake), the agent spec, the packet: durable, 0600. */
  /**
   * `carried`: made durable by the run's next durable save rather than on its own — the
   * journal's lines are in order, so that save's sync carries this one (a writer without that
   * order syncs it here). For what a crash before that save may lose: intake's files before
   * the admitted save, the packet before the save that precedes the child's start.
   */
  async writeJson(runId: string, name: 'request', value: SpawnRequest, o?: { carried?: boolean }): Promise<void>;
  async writeJson(runId: string, name: 'agent', value: AgentSpec, o?: { carried?: boolean }): Promise<void>;
  async writeJson(runId: string, name: 'packet', value: SpawnPacket, o?: { carried?: boolean }): Promise<void>;
  async writeJson(runId: string, name: 'artifacts', value: JailArtifact[], o?: { carried?: boolean }): Promise<void>;
  async writeJson(runId: string, name: JsonFile, value: unknown, o: { carried?: boolean } = {}): Promise<void> {
    await this.#put(runId, this.file(runId, name), JSON.stringify(value), { sync: !(o.carried && this.writer.ordered), hold: false });
  }

  /** The admitted request, parsed again by the one spawn schema; null when there is none. */
  async readRequest(runId: string): Promise<SpawnRequest | null> {
    const v = await this.#json(runId, 'request');
    if (v === null) return null;
    // A request admitted before domain_knowledge was a list held one string: it is that list of one.
    if (isObj(v) && typeof v.domain_knowledge === 'string') v.domain_knowledge = [v.domain_knowledge];
    // What intake added (a graph node's upstream summaries) is no wire key: checked on its own.
    const { upstream, ...wire } = isObj(v) ? v : { upstream: undefined };
    const up = upstream === undefined ? undefined : UpstreamSchema.safeParse(upstream);
    if (up && !up.success) throw corrupt(runId, RUN_FILES.request, `upstream: ${up.error.issues[0]?.message ?? 'invalid'}`);
    const parsed = SpawnRequestSchema.safeParse(isObj(v) ? wire : v);
    if (!parsed.success) throw corrupt(runId, RUN_FILES.request, `${parsed.error.issues[0]?.path.join('.') || '(root)'}: ${parsed.error.issues[0]?.message ?? 'invalid'}`);
    return up ? { ...parsed.data, upstream: up.data } : parsed.data;
  }

  async readAgent(runId: string): Promise<AgentSpec | null> {
    const v = await this.#json(runId, 'agent');
    if (v === null) return null;
    const problem = agentProblem(v);
    if (problem) throw corrupt(runId, RUN_FILES.agent, problem);
    return v as AgentSpec;
  }

  /** The checked artifacts (name, real path, identity); null when the run has none. */
  async readArtifacts(runId: string): Promise<JailArtifact[] | null> {
    const v = await this.#json(runId, 'artifacts');
    if (v === null) return null;
    const problem = artifactsProblem(v);
    if (problem) throw corrupt(runId, RUN_FILES.artifacts, problem);
    return v as JailArtifact[];
  }

  async readPacket(runId: string): Promise<SpawnPacket | null> {
    const v = await this.#json(runId, 'packet');
    if (v === null) return null;
    const problem = packetProblem(v);
    if (problem) throw corrupt(runId, RUN_FILES.packet, problem);
    return v as SpawnPacket;
  }

  async #json(runId: string, name: JsonFile): Promise<unknown> {
    let text: string;
    try {
      text = await fs.readFile(this.file(runId, name), 'utf8');
    } catch (e) {
      if ((e as NodeJS.ErrnoException).code === 'ENOENT') return null;
      throw e;
    }
    return parseJson(runId, RUN_FILES[name], text);
  }

  /** The pinned script or a checkpoint; `hold` (a live run's checkpoint): held on a full disk. */
  async write(runId: string, name: RawFile, data: string | Buffer, o: { hold?: boolean; carried?: boolean } = {}): Promise<void> {
    // The transcript is appended directly after its first write: never a journal line (a replay
    // would put its first version back over the lines appended since).
    if (name === 'transcript') return this.#serial(this.file(runId, name), async () => {
      await this.ensureDir(runId);
      await directWriter.write(this.file(runId, name), data);
    });
    await this.#put(runId, this.file(runId, name), data, { sync: !(o.carried && this.writer.ordered), hold: o.hold === true });
  }

  async read(runId: string, name: RawFile): Promise<Buffer | null> {
    const held = this.#heldData(this.file(runId, name));
    if (held !== undefined) return Buffer.from(held);
    try {
      return await fs.readFile(this.file(runId, name));
    } catch {
      return null;
    }
  }

  async removeFile(runId: string, name: RawFile | 'out'): Promise<void> {
    const file = this.file(runId, name);
    await this.#serial(file, async () => {
      this.#drop(file);
      // The journal fences only what it wrote: out/ and the transcript (never its lines) go as plain removals.
      await this.writer.remove(file);
    });
  }

  /** Removes the whole run directory (prepareSpawn's rollback, an intake cut short by a crash). */
  async remove(runId: string): Promise<void> {
    const dir = this.dir(runId);
    for (const [file, h] of [...this.#held]) if (h.runId === runId) this.#drop(file);
    for (const [file, h] of [...this.#tails]) if (h.runId === runId) this.#dropTail(file);
    this.#made.delete(runId);
    await this.writer.remove(dir);
  }
}

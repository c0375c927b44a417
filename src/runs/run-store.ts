/**
 * The one door to a run's directory, $BRIG_HOME/runs/<id>/: every file of it (protocol
 * RUN_FILES) is written and read here, nowhere else.
 *
 * Guarantees: every write is temp + rename (util/atomic-file.ts), so whoever reads finds the
 * old content or the new one whole; a write is durable (file and directory fsynced) unless
 * the caller says the state may be lost to a machine crash — the table below says which and
 * why. Every read is parsed and checked (the record by protocol's runRecordProblem, the
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
 */
import { promises as fs, readFileSync } from 'node:fs';
import path from 'node:path';
import { writeFileAtomic } from '../util/atomic-file.js';
import { BrigError } from '../util/errors.js';
import { RUN_FILES, isRunId, runRecordProblem, type AgentPacket, type SpawnPacket } from '../protocol/index.js';
import { AgentFrontmatterSchema, type AgentSpec } from '../agents/index.js';
import type { JailArtifact } from '../jail/index.js';
import { z } from 'zod';
import { SpawnRequestSchema } from './spawn-request.js';
import type { RunRecord, SpawnRequest } from './types.js';

export { isRunId } from '../protocol/index.js';
export { RUN_FILES } from '../protocol/index.js';

type JsonFile = 'request' | 'agent' | 'packet' | 'artifacts';
type RawFile = 'script' | 'checkpoint';

export interface SaveOptions {
  /** false: a machine crash may lose this save (the header's table says which may). Default true. */
  durable?: boolean;
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
  constructor(readonly root: string) {}

  dir(runId: string): string {
    if (!isRunId(runId)) throw new BrigError('invalid_input', `not a run id: ${runId.slice(0, 80)}`);
    return path.join(this.root, runId);
  }

  file(runId: string, name: keyof typeof RUN_FILES): string {
    return path.join(this.dir(runId), RUN_FILES[name]);
  }

  async ensureDir(runId: string): Promise<string> {
    const d = this.dir(runId);
    await fs.mkdir(d, { recursive: true, mode: 0o700 });
    return d;
  }

  async save(rec: RunRecord, o: SaveOptions = {}): Promise<void> {
    await this.ensureDir(rec.id);
    await writeFileAtomic(this.file(rec.id, 'record'), JSON.stringify(rec, null, 1), { sync: o.durable !== false });
  }

  /** The record; undefined when there is none; `state_corrupt` when the file is not one. */
  async load(runId: string): Promise<RunRecord | undefined> {
    if (!isRunId(runId)) return undefined;
    let text: string;
    try {
      text = await fs.readFile(this.file(runId, 'record'), 'utf8');
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
  async writeJson(runId: string, name: 'request', value: SpawnRequest): Promise<void>;
  async writeJson(runId: string, name: 'agent', value: AgentSpec): Promise<void>;
  async writeJson(runId: string, name: 'packet', value: SpawnPacket): Promise<void>;
  async writeJson(runId: string, name: 'artifacts', value: JailArtifact[]): Promise<void>;
  async writeJson(runId: string, name: JsonFile, value: unknown): Promise<void> {
    await this.ensureDir(runId);
    await writeFileAtomic(this.file(runId, name), JSON.stringify(value));
  }

  /** The admitted request, parsed again by the one spawn schema; null when there is none. */
  async readRequest(runId: string): Promise<SpawnRequest | null> {
    const v = await this.#json(runId, 'request');
    if (v === null) return null;
    // A request admitted before domain_knowledge was a list held one string: it is that list of one.
    if (isObj(v) && typeof v.domain_knowledge === 'string') v.domain_knowledge = [v.domain_knowledge];
    const parsed = SpawnRequestSchema.safeParse(v);
    if (!parsed.success) throw corrupt(runId, RUN_FILES.request, `${parsed.error.issues[0]?.path.join('.') || '(root)'}: ${parsed.error.issues[0]?.message ?? 'invalid'}`);
    return parsed.data;
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

  async write(runId: string, name: RawFile, data: string | Buffer): Promise<void> {
    await this.ensureDir(runId);
    await writeFileAtomic(this.file(runId, name), data);
  }

  async read(runId: string, name: RawFile): Promise<Buffer | null> {
    try {
      return await fs.readFile(this.file(runId, name));
    } catch {
      return null;
    }
  }

  async removeFile(runId: string, name: RawFile | 'out'): Promise<void> {
    await fs.rm(this.file(runId, name), { recursive: true, force: true });
  }

  /** Removes the whole run directory (prepareSpawn's rollback, an intake cut short by a crash). */
  async remove(runId: string): Promise<void> {
    await fs.rm(this.dir(runId), { recursive: true, force: true });
  }
}

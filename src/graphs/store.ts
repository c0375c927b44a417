/**
 * The one door to a graph's directory, $BRIG_HOME/graphs/<id>/: `spec.json` (the checked spec,
 * written once before anything runs) and `graph.json` (the record, written ahead of every
 * action: an attempt is `starting` on disk before its spawn is asked).
 *
 * Durability (as runs/run-store.ts): every write is temp + rename + fsync of file and
 * directory, so a reader or a restart finds the old record or the new one whole. Reads are
 * checked (`state_corrupt` naming the graph and the file, never a cast). Graph ids are checked
 * before they become path parts. The supervisor writes here and nowhere a child can write.
 */
import { promises as fs } from 'node:fs';
import path from 'node:path';
import { isGraphId, type GraphRecord, type GraphSpec } from '../protocol/index.js';
import { writeFileAtomic } from '../util/atomic-file.js';
import { BrigError } from '../util/errors.js';

export const GRAPH_FILES = { record: 'graph.json', spec: 'spec.json' } as const;

function corrupt(id: string, file: string, why: string): BrigError {
  return new BrigError('state_corrupt', `${file} of graph ${id} is not what brig wrote: ${why}`, { data: { graphId: id, file } });
}

function recordProblem(v: unknown): string | null {
  if (!v || typeof v !== 'object') return 'not an object';
  const r = v as Partial<GraphRecord>;
  if (r.v !== 1 || typeof r.id !== 'string' || !isGraphId(r.id)) return 'id';
  if (!['running', 'completed', 'failed', 'cancelled'].includes(r.state as string)) return 'state';
  if (!Array.isArray(r.nodes) || !Array.isArray(r.order)) return 'nodes';
  for (const n of r.nodes) if (!n || typeof n.id !== 'string' || !Array.isArray(n.attempts)) return 'nodes';
  return null;
}

export class GraphStore {
  constructor(readonly dir: string) {}

  #dirOf(id: string): string {
    if (!isGraphId(id)) throw new BrigError('invalid_input', `not a graph id: ${JSON.stringify(id.slice(0, 40))}`, { hint: 'Graph ids look like g-… (`brig graph status` lists them).' });
    return path.join(this.dir, id);
  }

  async create(rec: GraphRecord, spec: GraphSpec): Promise<void> {
    const d = this.#dirOf(rec.id);
    await fs.mkdir(this.dir, { recursive: true, mode: 0o700 });
    await fs.mkdir(d, { mode: 0o700 });
    await writeFileAtomic(path.join(d, GRAPH_FILES.spec), JSON.stringify(spec));
    await this.save(rec);
  }

  /** Durable: the record is on disk before the action it announces. */
  async save(rec: GraphRecord): Promise<void> {
    await writeFileAtomic(path.join(this.#dirOf(rec.id), GRAPH_FILES.record), JSON.stringify(rec));
  }

  async load(id: string): Promise<GraphRecord | undefined> {
    const text = await fs.readFile(path.join(this.#dirOf(id), GRAPH_FILES.record), 'utf8').catch((e: NodeJS.ErrnoException) => {
      if (e.code === 'ENOENT') return undefined;
      throw e;
    });
    if (text === undefined) return undefined;
    let v: unknown;
    try {
      v = JSON.parse(text);
    } catch {
      throw corrupt(id, GRAPH_FILES.record, 'not JSON');
    }
    const p = recordProblem(v);
    if (p) throw corrupt(id, GRAPH_FILES.record, p);
    return v as GraphRecord;
  }

  async loadSpec(id: string): Promise<GraphSpec | undefined> {
    const text = await fs.readFile(path.join(this.#dirOf(id), GRAPH_FILES.spec), 'utf8').catch(() => undefined);
    if (text === undefined) return undefined;
    try {
      return JSON.parse(text) as GraphSpec;
    } catch {
      throw corrupt(id, GRAPH_FILES.spec, 'not JSON');
    }
  }

  /** A map's items (JSON texts), written once by its split before any slot starts. */
  async putItems(id: string, node: string, items: readonly string[]): Promise<void> {
    await writeFileAtomic(path.join(this.#dirOf(id), `items-${node}.json`), JSON.stringify(items));
  }

  async getItems(id: string, node: string): Promise<string[]> {
    const file = `items-${node}.json`;
    const text = await fs.readFile(path.join(this.#dirOf(id), file), 'utf8');
    let v: unknown;
    try {
      v = JSON.parse(text);
    } catch {
      throw corrupt(id, file, 'not JSON');
    }
    if (!Array.isArray(v) || v.some((x) => typeof x !== 'string')) throw corrupt(id, file, 'not a list of items');
    return v as string[];
  }

  async ids(): Promise<string[]> {
    const names = await fs.readdir(this.dir).catch(() => [] as string[]);
    return names.filter(isGraphId).sort();
  }
}

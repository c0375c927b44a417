/**
 * The graphs' ports over this home's parts: the supervisor spawns every node attempt, the
 * graph store keeps the records under $BRIG_HOME/graphs, the result store keeps each graph's
 * manifest as a ResultRef (under the graph's id, never in a directory a child can write), the
 * ledger hears the graphs' content-free events.
 */
import { promises as fs } from 'node:fs';
import { Readable } from 'node:stream';
import { GraphService, GraphStore } from '../graphs/index.js';
import type { Ledger } from '../ledger/index.js';
import type { FsResultStore } from '../results/index.js';
import type { SupervisorCore } from '../runs/index.js';
import type { OperatorSurface } from '../protocol/index.js';

/** A ballot over this is unreadable (counted invalid), never cut. */
const BALLOT_MAX_BYTES = 64 * 1024;

export function graphServiceFor(o: { dir: string; supervisor: SupervisorCore; results: FsResultStore; ledger: Ledger; leases?: OperatorSurface['leases'] }): GraphService {
  const s = o.supervisor.settings;
  return new GraphService({
    supervisor: o.supervisor,
    store: new GraphStore(o.dir),
    limits: { maxChildren: s.maxChildrenPerAgent, maxDepth: s.maxSpawnDepth, defaultTimeoutMs: s.maxRunTimeoutMs },
    async putManifest(graphId, jsonl) {
      const ref = await o.results.writeStream(graphId, graphId, 'manifest.jsonl', Readable.from([Buffer.from(jsonl, 'utf8')]), {}, 'value');
      return ref.ref;
    },
    async refOf(runId) {
      const refs = await o.results.list(runId).catch(() => []);
      return (refs.find((r) => r.source === 'value') ?? refs.find((r) => r.source === 'out') ?? refs[0])?.ref ?? null;
    },
    // explain: the lease the attempt's run got (the one its record names), as granted and refused.
    async leaseOf(runId) {
      const run = await o.supervisor.get(runId);
      if (!run?.leaseId || !o.leases) return null;
      const shown = await o.leases.show(run.leaseId);
      if (!shown.ok) return null;
      const l = shown.value.lease;
      return { id: l.id, profile: l.profile, depth: l.depth, caps: [...l.caps], refused: l.refused.map((r) => `${r.what}: ${r.code}`), revokedBy: l.revoked?.by ?? null };
    },
    // A ballot is small: one bounded read of a committed ref (never a file a child can still write).
    async readBallot(runId, ballot) {
      const refs = await o.results.list(runId);
      const ref = ballot === 'result' ? refs.find((r) => r.source === 'value') : refs.find((r) => r.path === ballot);
      if (!ref) throw new Error('no ballot');
      if (ref.bytes > BALLOT_MAX_BYTES) throw new Error('ballot too large');
      const text = await fs.readFile(o.results.resolvePath(ref), 'utf8');
      try {
        return JSON.parse(text) as unknown;
      } catch {
        return undefined;
      }
    },
    // A map's items: one bounded read of a committed out/ file; over the bound is refused, never cut.
    async readText(runId, file, maxBytes) {
      const ref = (await o.results.list(runId)).find((r) => r.path === file);
      if (!ref) throw new Error('no such file');
      if (ref.bytes > maxBytes) throw new Error('items file too large');
      return fs.readFile(o.results.resolvePath(ref), 'utf8');
    },
    // Content-free: ids, states, counts (INV-7); a node's run id is its own field.
    onEvent: (e) => {
      const { runId, ...rest } = e as typeof e & { runId?: string | null };
      o.ledger.append({ ...rest, ...(runId ? { runId } : {}) });
    },
  });
}

import { createReadStream } from 'node:fs';
import { Readable } from 'node:stream';
import type { CollectedScan, ResultStore } from './result-store.js';

/**
 * Everything a finished run leaves, made into ResultRefs in one place: its collected
 * /workspace/out (indexed from the scans taken while it streamed in), its result value
 * (inline, or the file a too-big value was spooled to), an agent's transcript, and its
 * bounded stdout/stderr tails. Returns how many refs the run has.
 */
export interface RunMaterial {
  /** The collect's report of out/ (with each file's scan), to index without re-reading. */
  collected?: readonly CollectedScan[];
  result?: unknown;
  /** A result value too big for a broker line, collected to this host file (JSON text). */
  resultFile?: string;
  /** An agent's transcript (JSONL) on the host. */
  transcriptFile?: string;
  stdout?: string;
  stderr?: string;
}

export async function materializeRun(store: ResultStore, rootRunId: string, runId: string, outDir: string, m: RunMaterial = {}): Promise<number> {
  await store.indexCollected(runId, rootRunId, outDir, m.collected ?? []);
  if (m.result !== undefined) await store.writeValue(runId, rootRunId, m.result);
  if (m.resultFile) await store.writeStream(runId, rootRunId, 'result.json', createReadStream(m.resultFile), {}, 'value');
  if (m.transcriptFile) await store.writeStream(runId, rootRunId, 'transcript.jsonl', createReadStream(m.transcriptFile), {}, 'transcript');
  for (const [name, text, source] of [['stdout.txt', m.stdout, 'stdout'], ['stderr.txt', m.stderr, 'stderr']] as const) {
    if (text) await store.writeStream(runId, rootRunId, name, Readable.from([Buffer.from(text, 'utf8')]), {}, source);
  }
  return (await store.manifest(runId)).refs.length;
}

import { createReadStream } from 'node:fs';
import { Readable } from 'node:stream';
import type { CollectedScan, ResultStore } from './result-store.js';
import { answerText } from './result-view.js';

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
  /** A repository's change (runs/run-repo.ts): the patch and its stat JSON, host files (source `changes`). */
  changesPatch?: string;
  changesStat?: string;
  /**
   * The value is an agent's `{answer, …}`: its answer is also kept as `answer.txt` (source
   * `value`), the answer's own lines — what grep and read drill into (result.json is one line).
   */
  agent?: boolean;
}

/** An agent's answer as text, when the value is one (inline). */
function inlineAnswer(v: unknown): string | undefined {
  return v && typeof v === 'object' && typeof (v as { answer?: unknown }).answer === 'string' ? (v as { answer: string }).answer : undefined;
}

export async function materializeRun(store: ResultStore, rootRunId: string, runId: string, outDir: string, m: RunMaterial = {}): Promise<number> {
  await store.indexCollected(runId, rootRunId, outDir, m.collected ?? []);
  if (m.result !== undefined) await store.writeValue(runId, rootRunId, m.result);
  if (m.resultFile) await store.writeStream(runId, rootRunId, 'result.json', createReadStream(m.resultFile), {}, 'value');
  if (m.agent) {
    const inline = inlineAnswer(m.result);
    if (inline !== undefined) await store.writeStream(runId, rootRunId, 'answer.txt', Readable.from([Buffer.from(inline, 'utf8')]), {}, 'value');
    // A spooled value is decoded as it streams: memory does not grow with the answer.
    else if (m.resultFile) await store.writeStream(runId, rootRunId, 'answer.txt', Readable.from(answerText(m.resultFile)), {}, 'value');
  }
  if (m.changesPatch) await store.writeStream(runId, rootRunId, 'changes.patch', createReadStream(m.changesPatch), {}, 'changes');
  if (m.changesStat) await store.writeStream(runId, rootRunId, 'changes.stat', createReadStream(m.changesStat), {}, 'changes');
  if (m.transcriptFile) await store.writeStream(runId, rootRunId, 'transcript.jsonl', createReadStream(m.transcriptFile), {}, 'transcript');
  for (const [name, text, source] of [['stdout.txt', m.stdout, 'stdout'], ['stderr.txt', m.stderr, 'stderr']] as const) {
    if (text) await store.writeStream(runId, rootRunId, name, Readable.from([Buffer.from(text, 'utf8')]), {}, source);
  }
  return (await store.manifest(runId)).refs.length;
}

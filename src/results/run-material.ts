import { createReadStream } from 'node:fs';
import { Readable } from 'node:stream';
import { valueItem, type CollectedScan, type ResultStore, type StreamItem } from './result-store.js';
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
  // out/ and the rest as one batch: one manifest commit (issue 26), in this order against the run's cap.
  // Streams are made lazily, each when its turn comes (a file read opens when it is written).
  const items: StreamItem[] = [];
  const lazy = (file: string): NodeJS.ReadableStream => Readable.from((async function* () { yield* createReadStream(file) as AsyncIterable<Buffer>; })());
  const text = (t: string) => Readable.from([Buffer.from(t, 'utf8')]);
  if (m.result !== undefined) items.push(valueItem(m.result));
  if (m.resultFile) items.push({ name: 'result.json', readable: lazy(m.resultFile), source: 'value' });
  if (m.agent) {
    const inline = inlineAnswer(m.result);
    if (inline !== undefined) items.push({ name: 'answer.txt', readable: text(inline), source: 'value' });
    // A spooled value is decoded as it streams: memory does not grow with the answer.
    else if (m.resultFile) items.push({ name: 'answer.txt', readable: Readable.from(answerText(m.resultFile)), source: 'value' });
  }
  if (m.changesPatch) items.push({ name: 'changes.patch', readable: lazy(m.changesPatch), source: 'changes' });
  if (m.changesStat) items.push({ name: 'changes.stat', readable: lazy(m.changesStat), source: 'changes' });
  if (m.transcriptFile) items.push({ name: 'transcript.jsonl', readable: lazy(m.transcriptFile), source: 'transcript' });
  for (const [name, t, source] of [['stdout.txt', m.stdout, 'stdout'], ['stderr.txt', m.stderr, 'stderr']] as const) {
    if (t) items.push({ name, readable: text(t), source });
  }
  return (await store.indexCollected(runId, rootRunId, outDir, m.collected ?? [], {}, items)).refs.length;
}

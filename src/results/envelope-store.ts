/**
 * The envelope a coordinator received, kept beside the run's refs (`<runDir>/envelope.json`,
 * util/atomic-file.ts) the first time it is cast. Why: a Level 2 envelope comes from a model and is
 * neither free nor deterministic; `brig result`, the API and `brig explain` must show the
 * envelope that was actually handed over, not a new one, and must not bill the model again.
 * Not a ResultRef (it is not child output): retention removes it with the run's directory.
 * A missing or unreadable file means "not cast yet": the caller casts and saves.
 */
import fsp from 'node:fs/promises';
import path from 'node:path';
import { z } from 'zod';
import { directWriter } from '../util/write-journal.js';
import type { ResultStore } from './result-store.js';
import type { CondenseOptions } from './condense.js';
import { type EnvelopeRun, type RunEnvelope, buildRunEnvelope } from './run-envelope.js';
import type { ResultRef } from './types.js';
import { mkdirAll } from '../util/disk-space.js';

const ENVELOPE_FILE = 'envelope.json';

const SavedEnvelopeSchema = z.object({
  envelope: z.string(),
  condensed: z
    .object({
      level: z.union([z.literal(1), z.literal(2), z.literal(3)]),
      levelName: z.string(),
      body: z.string(),
      originalTokens: z.number(),
      condensedTokens: z.number(),
      ratio: z.number(),
    })
    .passthrough(),
  savings: z
    .object({ materializedBytes: z.number(), charsReentered: z.number(), estSavedTokens: z.number(), savedRatio: z.number().optional() })
    .passthrough(),
});

export async function loadEnvelope(store: ResultStore, rootRunId: string, runId: string): Promise<RunEnvelope | undefined> {
  const text = await fsp.readFile(path.join(store.runDir(rootRunId, runId), ENVELOPE_FILE), 'utf8').catch(() => undefined);
  if (text === undefined) return undefined;
  try {
    const r = SavedEnvelopeSchema.safeParse(JSON.parse(text));
    return r.success ? (r.data as RunEnvelope) : undefined;
  } catch {
    return undefined;
  }
}

export async function saveEnvelope(store: ResultStore, rootRunId: string, runId: string, env: RunEnvelope): Promise<void> {
  const dir = store.runDir(rootRunId, runId);
  await mkdirAll(dir, 0o700);
  await (store.writer ?? directWriter).write(path.join(dir, ENVELOPE_FILE), JSON.stringify(env));
}

/**
 * The run's envelope as first cast: the saved one when there is one, else cast now and save
 * it (best effort: a read-only results directory still gets its envelope, just not kept).
 */
export async function envelopeOnce(store: ResultStore, run: EnvelopeRun, refs: readonly ResultRef[], opts: CondenseOptions = {}): Promise<RunEnvelope> {
  const saved = await loadEnvelope(store, run.rootRunId, run.id);
  if (saved) return saved;
  const env = await buildRunEnvelope(run, refs, { ...opts, fileOf: (r) => store.resolvePath(r) });
  await saveEnvelope(store, run.rootRunId, run.id, env).catch(() => undefined);
  return env;
}

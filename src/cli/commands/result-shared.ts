import fs from 'node:fs/promises';
import path from 'node:path';
import { brigPaths, loadConfig } from '../../config/index.js';
import { OpenAICompatibleProvider } from '../../models/index.js';
import { type EnvelopeRun, FsResultStore, type ResultRef } from '../../results/index.js';
import { BrigError } from '../../util/errors.js';
import type { CliIO } from '../command.js';

/**
 * A run's record and refs for `brig result` / `brig explain`. The record is read from
 * $BRIG_HOME/runs/<id>/run.json (the supervisor's store); only the fields the envelope needs
 * are used, so a newer record shape still renders.
 */
export async function loadRunForEnvelope(io: CliIO, runId: string): Promise<{ run: EnvelopeRun & { leaseId?: string | null; depth?: number; parentRunId?: string | null }; refs: ResultRef[] }> {
  const cfg = loadConfig(io.env);
  const paths = brigPaths(cfg.home);
  if (!/^[A-Za-z0-9][A-Za-z0-9_-]{0,127}$/.test(runId)) throw new BrigError('invalid_input', `not a run id: ${JSON.stringify(runId.slice(0, 40))}`);
  const text = await fs.readFile(path.join(paths.runs, runId, 'run.json'), 'utf8').catch(() => undefined);
  if (text === undefined) throw new BrigError('run_not_found', `no run ${runId}`);
  const run = JSON.parse(text) as EnvelopeRun & { leaseId?: string | null; depth?: number; parentRunId?: string | null };
  const store = new FsResultStore({ dir: paths.results });
  const refs = await store.list(runId).catch(() => [] as ResultRef[]);
  return { run, refs };
}

/** The configured model for Level 2, when there is one. */
export function configuredModel(io: CliIO): OpenAICompatibleProvider | undefined {
  const m = loadConfig(io.env).model;
  return m ? new OpenAICompatibleProvider(m) : undefined;
}

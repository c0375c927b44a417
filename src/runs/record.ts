import { createHash, randomBytes } from 'node:crypto';
import type { RunKind, RunRecord, SpawnRequest } from './types.js';

/** Run ids: `r-` + 16 hex chars. Sortable enough by createdAt; unguessable enough for a path. */
export function newRunId(): string {
  return `r-${randomBytes(8).toString('hex')}`;
}

export function taskHash(task: string): string {
  return createHash('sha256').update(task).digest('hex');
}

/** Keys sorted at every level: the same request always serializes the same. */
function canonical(v: unknown): unknown {
  if (Array.isArray(v)) return v.map(canonical);
  if (v && typeof v === 'object') return Object.fromEntries(Object.keys(v).sort().map((k) => [k, canonical((v as Record<string, unknown>)[k])]));
  return v;
}

/**
 * The duplicate-detection key: the whole request but `async` (how the caller waits does not
 * make it other work). The same task with another command, script, capability or profile
 * is another run.
 */
export function requestHash(req: object): string {
  const { async: _async, ...rest } = req as Partial<SpawnRequest>;
  return createHash('sha256').update(JSON.stringify(canonical(rest))).digest('hex');
}

export interface NewRunInput {
  id: string;
  parent: Pick<RunRecord, 'id' | 'rootRunId' | 'path' | 'depth'> | null;
  callerId: string;
  agent: string;
  kind: RunKind;
  label: string | null;
  task: string;
  requestHash: string;
  now: Date;
  timeoutMs: number;
  maxSteps: number;
  async: boolean;
  expectedOutputs: string[];
  resumeOf: string | null;
}

export function createRunRecord(i: NewRunInput): RunRecord {
  return {
    v: 1,
    id: i.id,
    rootRunId: i.parent ? i.parent.rootRunId : i.id,
    parentRunId: i.parent ? i.parent.id : null,
    path: i.parent ? [...i.parent.path, i.id] : [i.id],
    depth: i.parent ? i.parent.depth + 1 : 1,
    callerId: i.callerId,
    agent: i.agent,
    kind: i.kind,
    label: i.label,
    status: 'queued',
    endReason: null,
    killedBy: null,
    terminalStatus: null,
    leaseId: null,
    taskHash: taskHash(i.task),
    requestHash: i.requestHash,
    createdAt: i.now.toISOString(),
    startedAt: null,
    endedAt: null,
    timeoutMs: i.timeoutMs,
    maxSteps: i.maxSteps,
    stepsExecuted: 0,
    progressLine: null,
    lastProgressAt: null,
    exitCode: null,
    async: i.async,
    resumable: false,
    resumeOf: i.resumeOf,
    resumedBy: null,
    hasCheckpoint: false,
    expectedOutputs: i.expectedOutputs,
    missingOutputs: [],
    resultDir: null,
    outputBytes: 0,
    outputFiles: 0,
    outputs: [],
    skipped: [],
    stdoutTail: '',
    stderrTail: '',
    result: null,
    resultSpooled: null,
    error: null,
    steeredTo: null,
  };
}

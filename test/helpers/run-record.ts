import { createRunRecord } from '../../src/runs/record.js';
import type { RunRecord } from '../../src/protocol/index.js';

/**
 * A whole run record (every field a reader checks), ended `completed` unless patched: for tests
 * that write run.json themselves. A record missing fields is `state_corrupt` to every reader.
 */
export function recordOf(patch: Partial<RunRecord> & Pick<RunRecord, 'id'>): RunRecord {
  const base = createRunRecord({
    id: patch.id, parent: null, callerId: 'operator', agent: 'default', kind: 'script', label: null, task: 't',
    requestHash: 'h', now: new Date('2026-01-01T00:00:00.000Z'), timeoutMs: 60_000, maxSteps: 10, async: false, expectedOutputs: [], resumeOf: null,
  });
  return { ...base, status: 'ended', endReason: 'completed', startedAt: '2026-01-01T00:00:00.000Z', endedAt: '2026-01-01T00:00:01.000Z', ...patch };
}

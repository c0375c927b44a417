/**
 * A Brig made of plain data for the MCP face's unit tests (no engine, no DuckDB): runs in a
 * map, refs with their bytes in memory, slice verbs that answer or refuse as told. And an
 * MCP Client linked to a server over it through the SDK's in-memory transport pair.
 */
import { Client } from '@modelcontextprotocol/sdk/client/index.js';
import { InMemoryTransport } from '@modelcontextprotocol/sdk/inMemory.js';
import type { Brig, ResultRef, RunRecord, SliceOutput } from '../../../src/index.js';
import { createMcpServer, type McpServerOptions } from '../../../src/mcp/index.js';
import { BrigError, err, ok, type Result } from '../../../src/util/errors.js';

export function runRecord(id: string, over: Partial<RunRecord> = {}): RunRecord {
  return {
    v: 1, id, rootRunId: id, parentRunId: null, path: [id], depth: 0, callerId: 'operator', agent: 'default', kind: 'command', label: null,
    status: 'running', endReason: null, killedBy: null, terminalStatus: null, leaseId: null, taskHash: 'x', createdAt: '2030-01-01T00:00:00.000Z',
    startedAt: '2030-01-01T00:00:01.000Z', endedAt: null, timeoutMs: 60_000, maxSteps: 10, stepsExecuted: 2, progressLine: 'halfway', lastProgressAt: null,
    exitCode: null, async: true, resumable: false, resumeOf: null, resumedBy: null, hasCheckpoint: false, expectedOutputs: [], missingOutputs: [],
    resultDir: '/srv/brig/results/secret', outputBytes: 0, outputFiles: 0, outputs: [], skipped: [], stdoutTail: '', stderrTail: '', result: null,
    error: null, steeredTo: null, ...over,
  };
}

export function ref(runId: string, id: string, text: string, over: Partial<ResultRef> = {}): ResultRef & { text: string } {
  return {
    ref: id, runId, rootRunId: runId, path: 'out/n.txt', source: 'out', kind: 'text', bytes: Buffer.byteLength(text), lines: text.split('\n').length - 1,
    sha256: '0'.repeat(64), preview: text.slice(0, 2048), createdAt: '2030-01-01T00:00:02.000Z', expiresAt: '2030-02-01T00:00:00.000Z', text, ...over,
  };
}

export interface FakeState {
  runs: Map<string, RunRecord>;
  refs: (ResultRef & { text: string })[];
  /** What the next sql call answers. */
  sql?: Result<SliceOutput>;
  /**
   * A wait returns when this settles — the test says when the time it waited is up — and the
   * runs in `endsOnWait` have ended by then; the others come back as they stand. Without it, a
   * wait returns at once.
   */
  waitGate?: Promise<void>;
  endsOnWait?: string[];
  spawned: unknown[];
  killed: string[];
}

const sliceOf = (ref: string, verb: SliceOutput['verb'], text: string, more = 0): SliceOutput => ({
  ref, verb, text, encoding: 'utf8', returned: Buffer.byteLength(text), unit: 'bytes', more, moreExact: true, ...(more > 0 ? { note: `${more} more bytes` } : {}),
});

export function fakeBrig(s: FakeState): Brig {
  const find = (id: string) => s.refs.find((r) => r.ref === id);
  const noRef = (id: string) => err(new BrigError('ref_not_found', `no ref ${id}`));
  const refs = {
    async list(runId: string) {
      return s.runs.has(runId) ? ok(s.refs.filter((r) => r.runId === runId)) : err(new BrigError('run_not_found', `no run ${runId}`));
    },
    async manifest(runId: string) {
      const mine = s.refs.filter((r) => r.runId === runId);
      return mine.length ? ok({ runId, rootRunId: runId, refs: mine, skipped: [] }) : err(new BrigError('run_not_found', `run ${runId} has no results`));
    },
    async read(id: string, range: { offset?: number; length?: number }) {
      const r = find(id);
      if (!r) return noRef(id);
      const buf = Buffer.from(r.text);
      const start = range.offset ?? 0;
      const got = buf.subarray(start, start + (range.length ?? 4096));
      return ok(sliceOf(id, 'read', got.toString(), buf.length - start - got.length));
    },
    async grep(id: string, pattern: string) {
      const r = find(id);
      if (!r) return noRef(id);
      return ok({ ...sliceOf(id, 'grep', r.text.split('\n').filter((l) => l.includes(pattern)).join('\n')), unit: 'matches' as const });
    },
    async jq(id: string) {
      return find(id) ? ok(sliceOf(id, 'jq', '1')) : noRef(id);
    },
    async sql(id: string) {
      if (!find(id)) return noRef(id);
      return s.sql ?? ok({ ref: id, verb: 'sql' as const, columns: ['count_star()'], rows: [[3]], returned: 1, unit: 'rows' as const, more: 0, moreExact: true });
    },
    async jsonpath(id: string) {
      return find(id) ? ok({ ref: id, verb: 'jsonpath' as const, columns: ['value'], rows: [[1]], returned: 1, unit: 'values' as const, more: 0, moreExact: true }) : noRef(id);
    },
    async result(runId: string) {
      const run = s.runs.get(runId);
      if (!run) return err(new BrigError('run_not_found', `no run ${runId}`));
      if (run.status !== 'ended') return err(new BrigError('not_running', `run ${runId} has not ended (status ${run.status})`, { hint: '`brig wait RUN` first.' }));
      return ok(envelope(s, runId));
    },
    async peek(runId: string) {
      return s.runs.has(runId) ? ok(envelope(s, runId)) : err(new BrigError('run_not_found', `no run ${runId}`));
    },
    rollUp: (list: { materializedBytes: number; charsReentered: number; estSavedTokens: number }[]) => ({
      runs: list.length,
      materializedBytes: list.reduce((a, b) => a + b.materializedBytes, 0),
      charsReentered: list.reduce((a, b) => a + b.charsReentered, 0),
      estSavedTokens: list.reduce((a, b) => a + b.estSavedTokens, 0),
    }),
  };
  const end = (id: string, over: Partial<RunRecord> = {}) => {
    const r = s.runs.get(id)!;
    s.runs.set(id, { ...r, status: 'ended', endReason: 'completed', endedAt: '2030-01-01T00:00:05.000Z', ...over });
  };
  const brig = {
    mode: 'local' as const,
    refs,
    async spawn(req: unknown) {
      s.spawned.push(req);
      const id = `r-${String(s.spawned.length).padStart(16, '0')}`;
      const kind = (req as { kind: RunRecord['kind'] }).kind;
      s.runs.set(id, runRecord(id, { status: 'queued', kind, label: (req as { label?: string }).label ?? null }));
      return ok(s.runs.get(id)!);
    },
    async wait(id: string, _o: { timeoutMs?: number; signal?: AbortSignal } = {}) {
      if (!s.runs.has(id)) return err(new BrigError('run_not_found', `no run ${id}`));
      await s.waitGate;
      if (s.endsOnWait?.includes(id) && s.runs.get(id)!.status !== 'ended') end(id);
      return ok(s.runs.get(id)!);
    },
    async list() {
      return [...s.runs.values()];
    },
    async get(id: string) {
      return s.runs.get(id);
    },
    async kill(id: string, o: { confirm: boolean }) {
      const r = s.runs.get(id);
      if (!r) return err(new BrigError('run_not_found', `no run ${id}`));
      if (r.status === 'ended' || !o.confirm) return err(new BrigError('not_running', `run ${id} has ended`));
      s.killed.push(id);
      end(id, { endReason: 'killed', killedBy: 'operator', partial: true });
      return ok(s.runs.get(id)!);
    },
    async steer(id: string) {
      const r = s.runs.get(id);
      if (!r) return err(new BrigError('run_not_found', `no run ${id}`));
      return r.status === 'running' ? ok({ mode: 'inject' as const, runId: id, newRunId: null }) : err(new BrigError('not_running', `run ${id} is ${r.status}`));
    },
    async resume() {
      return err(new BrigError('resume_unavailable', 'no'));
    },
    events() {
      throw new Error('not in these tests');
    },
    async close() {},
  };
  return brig as unknown as Brig;
}

function envelope(s: FakeState, runId: string) {
  const mine = s.refs.filter((r) => r.runId === runId);
  const savings = { materializedBytes: 3893, charsReentered: 300, estSavedTokens: 898, savedRatio: 0.923 };
  return {
    runId,
    refs: mine,
    envelope: `Run ${runId}: completed\n${mine.map((r) => `- ${r.ref} ${r.path}`).join('\n')}\n`,
    condensed: { level: 1, levelName: 'passthrough', body: 'done', originalTokens: 2, condensedTokens: 2, ratio: 1 },
    savings,
  };
}

/** A client connected to an MCP server over the fake, through the in-memory pair. */
export async function connected(s: FakeState, o: Partial<McpServerOptions> = {}): Promise<{ client: Client; close: () => Promise<void> }> {
  const server = createMcpServer(fakeBrig(s), { version: '0.0.0-test', progressEveryMs: 40, ...o });
  const [a, b] = InMemoryTransport.createLinkedPair();
  const client = new Client({ name: 'test', version: '1' });
  await Promise.all([server.connect(a), client.connect(b)]);
  return { client, close: async () => void (await client.close(), await server.close()) };
}

export const state = (over: Partial<FakeState> = {}): FakeState => ({ runs: new Map(), refs: [], spawned: [], killed: [], ...over });

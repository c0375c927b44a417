/**
 * What the MCP face answers, against a fake Brig through a real SDK Client: results carry
 * structured content plus text; every refusal (SQL guard, unknown run, not_running, a bad
 * spawn) is a tool result with isError and the BrigError's code and hint in both — one the
 * SDK's own client accepts (no protocol error); wait sends progress; resources are bounded.
 */
import { test } from 'node:test';
import assert from 'node:assert/strict';
import type { CallToolResult } from '@modelcontextprotocol/sdk/types.js';
import { refusal } from '../../../src/mcp/tool-result.js';
import { BrigError, err } from '../../../src/util/errors.js';
import { ManualClock, ManualTimers } from '../../helpers/fakes/manual-time.js';
import { connected, ref, runRecord, state } from './fake-brig.js';

const text = (r: CallToolResult) => (r.content[0] as { text: string }).text;
const structured = <T = Record<string, unknown>>(r: CallToolResult) => r.structuredContent as T;
type ErrorShape = { error: { code: string; kind: string; message: string; hint: string; data?: Record<string, unknown> } };

test('a BrigError becomes an isError result with its code, kind, message and hint in text and structured content', () => {
  const r = refusal(new BrigError('query_refused', 'read_csv may only read the ref', { data: { reason: 'file_function' } }));
  assert.equal(r.isError, true);
  const e = structured<ErrorShape>(r).error;
  assert.deepEqual(e, { code: 'query_refused', kind: 'denied', message: 'read_csv may only read the ref', hint: 'Only one SELECT over the view `ref` is allowed.', data: { reason: 'file_function' } });
  assert.match(text(r), /^refused \[query_refused\]: read_csv may only read the ref\n→ Only one SELECT/);
  const nf = refusal(new BrigError('run_not_found', 'no run r-x'));
  assert.match(text(nf), /\n→ .*call `list` to see the known runs/, 'the next tool to call');
  assert.doesNotMatch(text(nf), /brig list/, 'never a CLI command');
});

test('anything else thrown is an internal refusal, its host paths scrubbed', () => {
  const r = refusal(new Error('EACCES: open /srv/brig/results/r-1/out/x.txt'));
  const e = structured<ErrorShape>(r).error;
  assert.equal(e.code, 'internal');
  assert.equal(e.kind, 'internal');
  assert.doesNotMatch(e.message, /\/srv\/brig/);
  assert.match(e.message, /…\/x\.txt/);
});

test('refusals come back as tool results the SDK client accepts: SQL guard, unknown run, not_running, bad spawn, kill without confirm', async () => {
  const s = state();
  s.runs.set('r-a', runRecord('r-a', { status: 'ended', endReason: 'completed' }));
  s.runs.set('r-b', runRecord('r-b'));
  s.refs.push(ref('r-a', 'ref_a', 'x\ny\n'));
  s.sql = err(new BrigError('query_refused', 'read_csv may only read the ref itself', { data: { reason: 'file_function' } }));
  const { client, close } = await connected(s);
  try {
    const call = (name: string, args: Record<string, unknown>) => client.callTool({ name, arguments: args }) as Promise<CallToolResult>;
    const sql = await call('ref_sql', { ref: 'ref_a', query: "SELECT * FROM read_csv('/etc/passwd')" });
    assert.equal(sql.isError, true);
    assert.equal(structured<ErrorShape>(sql).error.code, 'query_refused');
    assert.equal(structured<ErrorShape>(sql).error.data?.reason, 'file_function');
    assert.match(text(sql), /\[query_refused\]/);
    const unknown = await call('status', { runId: 'r-nope' });
    assert.equal(unknown.isError, true);
    assert.equal(structured<ErrorShape>(unknown).error.code, 'run_not_found');
    const w = await call('wait', { runIds: ['r-a', 'r-nope', 'r-zip'], timeoutMs: 10 });
    assert.equal(structured<ErrorShape>(w).error.code, 'run_not_found');
    assert.deepEqual(structured<ErrorShape>(w).error.data?.unknown, ['r-nope', 'r-zip']);
    const nr = await call('result', { runId: 'r-b' });
    assert.equal(structured<ErrorShape>(nr).error.code, 'not_running');
    assert.match(text(nr), /Call `status`/);
    const steer = await call('steer', { runId: 'r-a', message: 'go' });
    assert.equal(structured<ErrorShape>(steer).error.code, 'not_running');
    const sp = await call('spawn', { task: 't', argv: ['true'], script: 'x' });
    assert.equal(structured<ErrorShape>(sp).error.code, 'invalid_input');
    assert.equal(s.spawned.length, 0, 'nothing was spawned');
    const noConfirm = await call('kill', { runId: 'r-b' });
    assert.equal(noConfirm.isError, true, 'the SDK refuses the arguments as a tool result');
    assert.deepEqual(s.killed, []);
    const extra = await call('status', { runId: 'r-a', verbose: true });
    assert.equal(extra.isError, true, 'an unknown argument is refused');
  } finally {
    await close();
  }
});

test('spawn answers at once with the run id; status, list, kill and steer say what the supervisor said', async () => {
  const s = state();
  const { client, close } = await connected(s);
  try {
    const call = (name: string, args: Record<string, unknown>) => client.callTool({ name, arguments: args }) as Promise<CallToolResult>;
    const sp = await call('spawn', { task: 'count', argv: ['sh', '-c', 'seq 3 > out/n.txt'], label: 'nightly' });
    assert.equal(sp.isError, undefined);
    const { runId } = structured<{ runId: string }>(sp);
    assert.match(text(sp), new RegExp(`spawned ${runId} .*Call \`wait\``));
    assert.equal((s.spawned[0] as { async: boolean }).async, true);
    s.runs.set(runId, { ...s.runs.get(runId)!, status: 'running' });
    const st = structured<{ status: string; steps: number; progressLine: string; resultDir?: unknown }>(await call('status', { runId }));
    assert.equal(st.status, 'running');
    assert.equal(st.progressLine, 'halfway');
    assert.equal(st.resultDir, undefined, 'no host paths');
    const li = structured<{ runs: { runId: string; label: string }[]; total: number }>(await call('list', { label: 'nightly' }));
    assert.equal(li.runs[0]!.runId, runId);
    assert.equal((await call('steer', { runId, message: 'faster' })).isError, undefined);
    const k = await call('kill', { runId, confirm: true });
    assert.equal(structured<{ endReason: string; killedBy: string }>(k).endReason, 'killed');
    assert.deepEqual(s.killed, [runId]);
  } finally {
    await close();
  }
});

test('wait: the envelope and end reason of a run that ended, the status of one that did not, and progress notifications while waiting', async () => {
  // Time moves by hand: the progress timer fires when the test says, on a clock it advances,
  // and the wait is over when the test opens the gate (r-a ended by then, r-b not).
  let timeUp!: () => void;
  const s = state({ waitGate: new Promise<void>((r) => (timeUp = r)), endsOnWait: ['r-a'] });
  s.runs.set('r-a', runRecord('r-a'));
  s.runs.set('r-b', runRecord('r-b'));
  s.refs.push(ref('r-a', 'ref_a', 'one\ntwo\n'));
  const clock = new ManualClock();
  const timers = new ManualTimers();
  const { client, close } = await connected(s, { now: clock.now, timers });
  try {
    const progress: { progress: number; message?: string }[] = [];
    const call = client.callTool({ name: 'wait', arguments: { runIds: ['r-a', 'r-b', 'r-a'], timeoutMs: 300 } }, undefined, { onprogress: (p) => void progress.push(p) });
    while (timers.live === 0) await new Promise((r) => setImmediate(r)); // the wait has begun
    for (let i = 1; i <= 3; i++) {
      clock.advance(40);
      timers.fire();
      while (progress.length < i) await new Promise((r) => setImmediate(r));
    }
    timeUp();
    const r = (await call) as CallToolResult;
    assert.equal(timers.live, 0, 'the progress timer ends with the wait');
    const w = structured<{ runs: { runId: string; ended: boolean; endReason: string | null; envelope?: string; refs?: { ref: string; uri: string }[] }[]; timedOut: boolean }>(r);
    assert.deepEqual(w.runs.map((x) => x.runId), ['r-a', 'r-b'], 'each id once');
    assert.equal(w.runs[0]!.ended, true);
    assert.equal(w.runs[0]!.endReason, 'completed');
    assert.match(w.runs[0]!.envelope!, /ref_a/);
    assert.equal(w.runs[0]!.refs![0]!.uri, 'brig://runs/r-a/refs/ref_a');
    assert.equal(w.runs[1]!.ended, false);
    assert.equal(w.runs[1]!.envelope, undefined);
    assert.equal(w.timedOut, true);
    assert.match(text(r), /call wait again/);
    assert.ok(progress.length >= 2, `progress notifications: ${progress.length}`);
    assert.ok(progress.every((p, i) => i === 0 || p.progress > progress[i - 1]!.progress), 'progress increases');
    assert.match(progress[0]!.message!, /\d\/2 ended/);
  } finally {
    await close();
  }
});

test('ref tools: list, read with its "more" note, grep, sql rows — structured and as text', async () => {
  const s = state();
  s.runs.set('r-a', runRecord('r-a', { status: 'ended', endReason: 'completed' }));
  s.refs.push(ref('r-a', 'ref_a', `${Array.from({ length: 1000 }, (_, i) => i + 1).join('\n')}\n`));
  const { client, close } = await connected(s);
  try {
    const call = async (name: string, args: Record<string, unknown>) => (await client.callTool({ name, arguments: args })) as CallToolResult;
    const l = await call('ref_list', { runId: 'r-a' });
    assert.equal(structured<{ refs: { ref: string; preview?: string }[] }>(l).refs[0]!.ref, 'ref_a');
    assert.equal(structured<{ refs: { preview?: string }[] }>(l).refs[0]!.preview, undefined, 'previews stay out');
    const rd = await call('ref_read', { ref: 'ref_a', offset: 0, length: 10 });
    assert.equal(structured<{ more: number }>(rd).more, 3893 - 10);
    assert.match(text(rd), /^1\n2\n3\n4\n5\n… 3883 more bytes$/);
    assert.equal((await call('ref_read', { ref: 'ref_a', offset: 0, line: 3 })).isError, true, 'line and offset together');
    const g = await call('ref_grep', { ref: 'ref_a', pattern: '999' });
    assert.equal(text(g), '999');
    const q = await call('ref_sql', { ref: 'ref_a', query: 'SELECT count(*) FROM ref' });
    assert.deepEqual(structured<{ rows: unknown[][] }>(q).rows, [[3]]);
    assert.equal(text(q), '["count_star()"]\n[3]');
    assert.equal(structured<ErrorShape>(await call('ref_jq', { ref: 'ref_nope', filter: '.' })).error.code, 'ref_not_found');
  } finally {
    await close();
  }
});

test('resources: a template per ref, listed for recent ended runs (bounded), read as a bounded head that says how much is left', async () => {
  const s = state();
  for (let i = 0; i < 5; i++) {
    const id = `r-${i}`;
    s.runs.set(id, runRecord(id, { status: 'ended', endReason: 'completed', endedAt: `2030-01-01T00:00:0${i}.000Z` }));
    s.refs.push(ref(id, `ref_${i}a`, 'x'.repeat(100)), ref(id, `ref_${i}b`, 'y'.repeat(5000), { path: 'out/big.txt' }));
  }
  s.runs.set('r-live', runRecord('r-live'));
  const { client, close } = await connected(s, { resources: { runs: 2, maxListed: 3, headBytes: 1024 } });
  try {
    const { resourceTemplates } = await client.listResourceTemplates();
    assert.deepEqual(resourceTemplates.map((t) => t.uriTemplate), ['brig://runs/{runId}/refs/{refId}']);
    const { resources } = await client.listResources();
    assert.deepEqual(resources.map((r) => r.uri), ['brig://runs/r-4/refs/ref_4a', 'brig://runs/r-4/refs/ref_4b', 'brig://runs/r-3/refs/ref_3a'], 'newest ended runs first, at most 3');
    assert.equal(resources[1]!.size, 5000);
    assert.equal(resources[1]!.mimeType, 'text/plain');
    const small = await client.readResource({ uri: 'brig://runs/r-4/refs/ref_4a' });
    assert.equal((small.contents[0] as { text: string }).text, 'x'.repeat(100));
    const big = await client.readResource({ uri: 'brig://runs/r-4/refs/ref_4b' });
    assert.equal((big.contents[0] as { text: string }).text, `${'y'.repeat(1024)}\n… 3,976 more bytes; use ref_read with ref ref_4b and offset 1024 for them.`);
    await assert.rejects(client.readResource({ uri: 'brig://runs/r-3/refs/ref_4b' }), /run r-3 has no ref ref_4b/, "another run's ref is not this run's");
    await assert.rejects(client.readResource({ uri: 'brig://runs/r-zz/refs/ref_4b' }), /no run r-zz/);
  } finally {
    await close();
  }
});

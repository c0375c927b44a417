import { test } from 'node:test';
import assert from 'node:assert/strict';
import fs from 'node:fs';
import path from 'node:path';
import { executeCall, type CallEnv } from '../../../src/child/agent/calls.js';
import { boundResult, headTail, Spiller } from '../../../src/child/agent/bound.js';
import { allTools } from '../../../src/child/agent/tools/registry.js';
import { grepInWorker } from '../../../src/child/agent/tools/grep-worker.js';
import type { ChildInfo, ToolDef } from '../../../src/child/agent/tools/tool.js';
import { CodeError, tempRoots } from './fake-broker.js';

function env(t: { after: (fn: () => void) => void }, broker: (method: string, params: any) => unknown = () => ({}), extra: ToolDef[] = []) {
  const r = tempRoots();
  t.after(r.cleanup);
  const calls: { method: string; params: any }[] = [];
  const children = new Map<string, ChildInfo>();
  const e: CallEnv = {
    tools: new Map([...allTools(), ...extra].map((x) => [x.name, x])),
    ctx: { roots: { workspace: r.workspace, artifacts: r.artifacts }, broker: { call: async (method, params): Promise<any> => (calls.push({ method, params }), broker(method, params)) }, children, maxChars: 2000, runTimeoutMs: 60_000 },
    stop: new AbortController().signal,
    spiller: new Spiller(path.join(r.workspace, '.brig/spill')),
    secrets: [],
  };
  const run = async (name: string, input: unknown) => (await executeCall({ id: 'c1', name, input }, e)).message;
  return { r, run, calls, children };
}

test('edit_file replaces an exact unique text; several occurrences need replaceAll; a missing one is an error', async (t) => {
  const { r, run } = env(t);
  const f = path.join(r.workspace, 'x.txt');
  fs.writeFileSync(f, 'a = 1\nb = 1\n');
  assert.match((await run('edit_file', { path: 'x.txt', old: '= 1', new: '= 2' })).content, /occurs 2 times/);
  assert.equal((await run('edit_file', { path: 'x.txt', old: 'a = 1', new: 'a = 9' })).content, 'replaced 1 occurrence in x.txt');
  assert.equal((await run('edit_file', { path: 'x.txt', old: '= 1', new: '= 2', replaceAll: true })).content, 'replaced 1 occurrence in x.txt');
  assert.equal(fs.readFileSync(f, 'utf8'), 'a = 9\nb = 2\n');
  const miss = await run('edit_file', { path: 'x.txt', old: 'zzz', new: '' });
  assert.equal(miss.isError, true);
  assert.match(miss.content, /not found/);
  assert.match((await run('edit_file', { path: 'x.txt', old: '', new: 'q' })).content, /old must have at least 1 chars/);
});

test('read_file pages by lines under the result limit and says where to continue; binary files are refused', async (t) => {
  const { r, run } = env(t);
  fs.writeFileSync(path.join(r.workspace, 'big.txt'), Array.from({ length: 1000 }, (_, i) => `line ${i + 1} ${'.'.repeat(40)}`).join('\n'));
  const first = (await run('read_file', { path: 'big.txt' })).content;
  assert.ok(first.length <= 2000);
  const next = Number(/offset=(\d+)/.exec(first)![1]);
  assert.ok(next > 1 && next < 1000);
  const again = (await run('read_file', { path: 'big.txt', offset: next, limit: 2 })).content;
  assert.match(again, new RegExp(`^\\[big.txt: lines ${next}-${next + 1} of 1000\\]\\nline ${next} `));
  fs.writeFileSync(path.join(r.workspace, 'bin'), Buffer.from([1, 0, 2]));
  assert.match((await run('read_file', { path: 'bin' })).content, /binary file/);
  assert.match((await run('read_file', { path: 'nope.txt' })).content, /ENOENT|no such file/);
});

test('write_file creates parent directories; list_files shows the tree', async (t) => {
  const { r, run } = env(t);
  assert.equal((await run('write_file', { path: 'out/deep/r.md', content: 'hé' })).content, 'wrote 3 bytes to out/deep/r.md');
  assert.equal(fs.readFileSync(path.join(r.workspace, 'out/deep/r.md'), 'utf8'), 'hé');
  assert.equal((await run('list_files', { depth: 3 })).content, '[.: 3 entries]\nout/\n  deep/\n    r.md (3 B)');
});

test('grep_files: regular expression matches with path:line, a cap, and a bad pattern refused', async (t) => {
  const { r, run } = env(t);
  fs.mkdirSync(path.join(r.workspace, 'src'));
  fs.writeFileSync(path.join(r.workspace, 'src/a.ts'), 'const a = 1;\n// TODO one\n');
  fs.writeFileSync(path.join(r.workspace, 'src/b.ts'), 'TODO two\nTODO three\n');
  assert.equal((await run('grep_files', { pattern: 'TODO \\w+' })).content, '[3 matches in 2 files]\nsrc/a.ts:2: // TODO one\nsrc/b.ts:1: TODO two\nsrc/b.ts:2: TODO three');
  assert.match((await run('grep_files', { pattern: 'TODO', maxMatches: 1 })).content, /stopped at maxMatches=1/);
  assert.match((await run('grep_files', { pattern: '(' })).content, /bad pattern/);
});

test('grep runs in a worker, so a pattern that backtracks forever is ended', async (t) => {
  const r = tempRoots();
  t.after(r.cleanup);
  const f = path.join(r.workspace, 'evil.txt');
  fs.writeFileSync(f, `${'a'.repeat(40)}!\n`);
  const ac = new AbortController();
  setTimeout(() => ac.abort(), 300);
  const t0 = Date.now();
  await assert.rejects(grepInWorker({ pattern: '^(a+)+$', flags: '', files: [f], maxMatches: 10, maxLineChars: 100 }, ac.signal), /stopped/);
  assert.ok(Date.now() - t0 < 5000);
});

test('shell: exit codes, stderr, its own timeout kills the process group', async (t) => {
  const { run } = env(t);
  assert.equal((await run('shell', { command: 'echo out; echo err >&2; exit 3' })).content, '[exit 3]\nout\nerr\n');
  const t0 = Date.now();
  const slow = await run('shell', { command: 'sleep 30 & sleep 30', timeoutMs: 1000 });
  assert.ok(Date.now() - t0 < 5000);
  assert.equal(slow.isError, true);
  assert.match(slow.content, /killed: timed out after 1000 ms/);
});

test('every call gets one result: a throwing tool, a tool past its timeout, a broker refusal', async (t) => {
  const boom: ToolDef = { name: 'boom', description: 'throws', parameters: { type: 'object', properties: {}, additionalProperties: false }, timeoutMs: () => 1000, run: () => Promise.reject(new Error('kaput')) };
  const hang: ToolDef = { ...boom, name: 'hang', timeoutMs: () => 50, run: () => new Promise(() => {}) };
  const { run } = env(t, (method) => {
    throw new CodeError('capability_denied', `the lease does not grant ${method}`);
  }, [boom, hang]);
  assert.deepEqual(await run('boom', {}), { role: 'tool', toolCallId: 'c1', content: 'error: boom failed: kaput', isError: true });
  assert.deepEqual(await run('hang', {}), { role: 'tool', toolCallId: 'c1', content: 'error: hang timed out after 50 ms', isError: true });
  const denied = await run('steer_child', { runId: 'r-0000000000000002', message: 'hi' });
  assert.equal(denied.content, 'error (capability_denied): the lease does not grant child.steer');
});

test('the broker tools send exactly the contract params and remember the children', async (t) => {
  const summary = (id: string, status: string, endReason: string | null) => ({ runId: id, status, endReason, result: null, error: null, missingOutputs: [] });
  const { run, calls, children } = env(t, (method, p) => {
    if (method === 'spawn') return summary('r-00000000000000aa', 'running', null);
    if (method === 'wait') return { runs: p.runs.map((id: string) => summary(id, 'ended', 'completed')) };
    if (method === 'child.kill') return { runId: p.child, endReason: 'killed' };
    if (method === 'child.steer') return { mode: 'inject', runId: p.child, newRunId: null };
    return { ref: p.ref, verb: method.slice(5), text: 'hello', returned: 1, unit: 'lines', more: 0, moreExact: true };
  });
  await run('spawn', { task: 'sub', agent: 'worker', objective: 'goal', async: true });
  await run('spawn', { task: 'cheap', tokens: 5000, cost_usd: 0.25, async: true });
  assert.match((await run('list_children', {})).content, /"runId":"r-00000000000000aa".*"status":"running"/);
  await run('wait_children', { runIds: ['r-00000000000000aa'], timeoutMs: 1000 });
  assert.equal(children.get('r-00000000000000aa')!.endReason, 'completed');
  await run('wait_children', { runIds: ['r-00000000000000aa'] });
  await run('steer_child', { runId: 'r-00000000000000aa', message: 'faster' });
  await run('kill_child', { runId: 'r-00000000000000aa' });
  await run('ref_read', { ref: 'ref1', line: 3, lines: 2 });
  await run('ref_grep', { ref: 'ref1', pattern: 'x', ignoreCase: true });
  await run('ref_jq', { ref: 'ref1', filter: '.a' });
  await run('ref_sql', { ref: 'ref1', sql: 'SELECT 1', maxRows: 5 });
  const slice = await run('ref_jsonpath', { ref: 'ref1', path: '$.a' });
  assert.match(slice.content, /"verb": "jsonpath"[\s\S]*\nhello$/);
  assert.match((await run('wait_children', { runIds: ['a'], timeoutMs: 60_000 })).content, /timeoutMs must be ≤ 50000/);
  assert.deepEqual(calls, [
    { method: 'spawn', params: { request: { kind: 'agent', task: 'sub', agent: 'worker', objective: 'goal', async: true } } },
    { method: 'spawn', params: { request: { kind: 'agent', task: 'cheap', async: true, limits: { tokens: 5000, costUsd: 0.25 } } } },
    { method: 'wait', params: { runs: ['r-00000000000000aa'], timeoutMs: 1000 } },
    { method: 'wait', params: { runs: ['r-00000000000000aa'], timeoutMs: 50_000 } },
    { method: 'child.steer', params: { child: 'r-00000000000000aa', message: 'faster' } },
    { method: 'child.kill', params: { child: 'r-00000000000000aa' } },
    { method: 'refs.read', params: { ref: 'ref1', line: 3, lines: 2 } },
    { method: 'refs.grep', params: { ref: 'ref1', pattern: 'x', ignoreCase: true } },
    { method: 'refs.jq', params: { ref: 'ref1', filter: '.a' } },
    { method: 'refs.sql', params: { ref: 'ref1', sql: 'SELECT 1', maxRows: 5 } },
    { method: 'refs.jsonpath', params: { ref: 'ref1', path: '$.a' } },
  ]);
});

test('bounding: head 60% / tail 40%, spill numbering, and the JSON size of control characters', (t) => {
  const r = tempRoots();
  t.after(r.cleanup);
  const s = headTail('0123456789'.repeat(100), 200);
  assert.ok(s.length <= 200 && s.startsWith('0123') && s.endsWith('789'));
  const sp = new Spiller(path.join(r.workspace, '.brig/spill'));
  fs.mkdirSync(sp.dir, { recursive: true });
  fs.writeFileSync(path.join(sp.dir, '1.txt'), 'taken');
  const ctl = '\u0001'.repeat(15_000); // 15 000 chars, 90 000 bytes of JSON
  const out = boundResult(ctl, 16_000, sp);
  assert.ok(Buffer.byteLength(JSON.stringify(out)) <= 44 * 1024);
  assert.match(out, /whole output is in .*\/2\.txt/);
  assert.equal(fs.readFileSync(path.join(sp.dir, '2.txt'), 'utf8'), ctl);
  assert.equal(boundResult('small', 16_000, sp), 'small');
});

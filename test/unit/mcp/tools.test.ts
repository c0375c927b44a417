/**
 * The MCP face's tool table and its schema mapping, read through a real SDK Client over the
 * in-memory transport: the exact tool names, honest annotations, input JSON schemas derived
 * from the zod ones (strict, bounded), output schemas, and the spawn arguments → SpawnRequest
 * translation checked against the library's own SpawnRequestSchema.
 */
import { test } from 'node:test';
import assert from 'node:assert/strict';
import { SpawnRequestSchema } from '../../../src/index.js';
import { ALL_TOOLS, toolsFor } from '../../../src/mcp/index.js';
import { toSpawnRequest } from '../../../src/runs/spawn-args.js';
import { connected, state } from './fake-brig.js';

const NAMES = ['spawn', 'list', 'status', 'steer', 'kill', 'send', 'history', 'wait', 'result', 'explain', 'ref_list', 'ref_read', 'ref_grep', 'ref_jq', 'ref_sql', 'ref_jsonpath', 'graph_define', 'graph_run', 'graph_status', 'graph_wait', 'graph_explain', 'graph_cancel'];
const READ_ONLY = ['list', 'status', 'history', 'wait', 'result', 'explain', 'ref_list', 'ref_read', 'ref_grep', 'ref_jq', 'ref_sql', 'ref_jsonpath', 'graph_define', 'graph_status', 'graph_wait', 'graph_explain'];

test('the server lists exactly the tools of the brief, each with one actionable sentence and all four annotations', async () => {
  const { client, close } = await connected(state());
  try {
    const { tools } = await client.listTools();
    assert.deepEqual(tools.map((t) => t.name).sort(), [...NAMES].sort());
    for (const t of tools) {
      assert.match(t.description ?? '', /^Use (to|after|only)\b/, `${t.name}: says when to use it`);
      assert.ok((t.description ?? '').length < 600, `${t.name}: short`);
      const a = t.annotations!;
      for (const k of ['readOnlyHint', 'destructiveHint', 'idempotentHint', 'openWorldHint'] as const) assert.equal(typeof a[k], 'boolean', `${t.name}.${k}`);
      assert.equal(a.openWorldHint, false, `${t.name}: closed world`);
      assert.equal(a.readOnlyHint, READ_ONLY.includes(t.name), `${t.name}: readOnlyHint`);
      if (a.readOnlyHint) assert.equal(a.destructiveHint, false);
      assert.equal(t.inputSchema.type, 'object');
      assert.equal((t.inputSchema as { additionalProperties?: unknown }).additionalProperties, false, `${t.name}: unknown arguments are refused`);
      assert.equal(t.outputSchema?.type, 'object', `${t.name}: an output schema`);
      assert.ok(t.outputSchema?.properties && 'error' in t.outputSchema.properties, `${t.name}: a refusal fits its output schema`);
    }
    const by = Object.fromEntries(tools.map((t) => [t.name, t]));
    assert.equal(by.kill!.annotations!.destructiveHint, true);
    assert.equal(by.steer!.annotations!.destructiveHint, false);
    assert.equal(by.spawn!.annotations!.idempotentHint, false);
  } finally {
    await close();
  }
});

test('input schemas: spawn takes task and one of argv/script/agent; wait is bounded (1–50 ids, ≤ 50 s, default 30 s); kill needs confirm: true', async () => {
  const { client, close } = await connected(state());
  try {
    const by = Object.fromEntries((await client.listTools()).tools.map((t) => [t.name, t.inputSchema as { properties: Record<string, Record<string, unknown>>; required?: string[] }]));
    const sp = by.spawn!;
    assert.deepEqual(sp.required, ['task']);
    for (const k of ['task', 'argv', 'script', 'agent', 'objective', 'artifacts', 'profile', 'caps', 'limits', 'model', 'label']) assert.ok(k in sp.properties, `spawn.${k}`);
    assert.ok((sp.properties.caps!.items as { enum: string[] }).enum.includes('refs.read'));
    const w = by.wait!.properties;
    assert.equal(w.runIds!.minItems, 1);
    assert.equal(w.runIds!.maxItems, 50);
    assert.equal(w.timeoutMs!.maximum, 50_000);
    assert.equal(w.timeoutMs!.default, 30_000);
    assert.deepEqual(by.kill!.required?.sort(), ['confirm', 'runId']);
    assert.equal(by.kill!.properties.confirm!.const, true);
    assert.deepEqual(by.ref_sql!.required?.sort(), ['query', 'ref']);
    assert.deepEqual(Object.keys(by.ref_grep!.properties).sort(), ['context', 'fixed', 'ignoreCase', 'max', 'pattern', 'ref']);
    assert.deepEqual(Object.keys(by.ref_read!.properties).sort(), ['length', 'line', 'lines', 'offset', 'ref']);
  } finally {
    await close();
  }
});

test('--read-only offers only the tools that read', () => {
  assert.deepEqual(toolsFor({ readOnly: true }).map((t) => t.name).sort(), [...READ_ONLY].sort());
  assert.equal(toolsFor({}).length, ALL_TOOLS.length);
});

test('no tool decides a graph gate unless the operator turns it on (--allow-gate-decisions): then graph_decide, destructive, never with --read-only', async () => {
  assert.ok(!toolsFor({}).some((t) => t.name === 'graph_decide'));
  assert.ok(!ALL_TOOLS.some((t) => t.name === 'graph_decide'));
  assert.ok(!toolsFor({ readOnly: true, gateDecisions: true }).some((t) => t.name === 'graph_decide'));
  const on = toolsFor({ gateDecisions: true });
  assert.deepEqual(on.map((t) => t.name).filter((n) => !NAMES.includes(n)), ['graph_decide']);
  const { client, close } = await connected(state(), { gateDecisions: true });
  try {
    const d = (await client.listTools()).tools.find((t) => t.name === 'graph_decide')!;
    assert.ok(d, 'listed when turned on');
    assert.equal(d.annotations!.destructiveHint, true);
    assert.deepEqual((d.inputSchema as { required?: string[] }).required?.sort(), ['decision', 'graphId', 'node']);
    assert.equal((d.inputSchema as { additionalProperties?: unknown }).additionalProperties, false, 'no `by`: the face says who (mcp)');
  } finally {
    await close();
  }
});

test('spawn arguments become a SpawnRequest the library accepts, always async', () => {
  const cmd = toSpawnRequest({ task: 't', argv: ['sh', '-c', 'echo hi'], limits: { memoryMb: 128, timeoutMs: 5000, maxSteps: 3 }, artifacts: ['/data/x'], label: 'L', caps: ['exec'] });
  assert.ok(cmd.ok);
  assert.deepEqual(cmd.value, {
    task: 't', kind: 'command', argv: ['sh', '-c', 'echo hi'], caps: ['exec'], limits: { memoryMb: 128 }, timeout: 5000, max_steps: 3, label: 'L',
    artifact_refs: ['/data/x'], expected_outputs: [], async: true,
  });
  const web = toSpawnRequest({ task: 't', argv: ['true'], egress: ['pypi'] });
  assert.ok(web.ok && JSON.stringify(web.value.egress) === JSON.stringify({ rules: ['pypi'] }), 'egress rule ids become the request\'s egress ask');
  const script = toSpawnRequest({ task: 't', script: 'export default async () => 1', objective: 'o', expectedOutputs: ['report.json'] });
  assert.ok(script.ok && script.value.kind === 'script' && script.value.async === true);
  const agent = toSpawnRequest({ task: 't', agent: 'general', model: 'fast', profile: 'worker' });
  assert.ok(agent.ok && agent.value.kind === 'agent' && agent.value.agent === 'general' && agent.value.model === 'fast');
  for (const r of [cmd, script, agent]) assert.ok(r.ok && SpawnRequestSchema.safeParse(r.value).success, JSON.stringify(r));
});

test('spawn arguments that cannot be a request are refused invalid_input with a hint, before any run', () => {
  const cases: [Parameters<typeof toSpawnRequest>[0], RegExp][] = [
    [{ task: 't' }, /one of argv, script or agent/],
    [{ task: 't', argv: ['true'], script: 'x' }, /exactly one of argv, script or agent, got argv and script/],
    [{ task: 't', argv: ['true'], agent: 'general' }, /exactly one/],
    [{ task: 't', argv: ['true'], model: 'fast' }, /model is only for an agent/],
    [{ task: 't', argv: ['true'], artifacts: ['./src'] }, /neither a ResultRef id nor an absolute host path/],
    [{ task: 't', argv: ['true'], expectedOutputs: ['../x'] }, /relative to out\/ without/],
    [{ task: 't', argv: ['true'], expectedOutputs: ['/etc/x'] }, /relative to out\/ without/],
  ];
  for (const [args, re] of cases) {
    const r = toSpawnRequest(args);
    assert.ok(!r.ok, JSON.stringify(args));
    assert.equal(r.error.code, 'invalid_input');
    assert.match(r.error.message, re);
    assert.ok(r.error.hint.length > 0);
  }
});

test('a refusal speaks MCP: no tool result tells a client to run `brig …` or pass a flag — an unknown run names `list`, a missing ref `ref_list`', async () => {
  const { client, close } = await connected(state());
  try {
    const calls: [string, Record<string, unknown>][] = [
      ['status', { runId: 'r-0000000000000000' }],
      ['kill', { runId: 'r-0000000000000000', confirm: true }],
      ['ref_read', { ref: 'ref_nope' }],
      ['history', { runId: 'r-0000000000000000' }],
    ];
    const hints: string[] = [];
    for (const [name, args] of calls) {
      const r = (await client.callTool({ name, arguments: args })) as { isError?: boolean; content: { text: string }[]; structuredContent?: { error?: { code: string; hint: string } } };
      assert.equal(r.isError, true, name);
      const e = r.structuredContent!.error!;
      hints.push(e.hint);
      assert.doesNotMatch(e.hint, /`brig |--[a-z]/, `${name}: ${e.hint}`);
      assert.doesNotMatch(r.content[0]!.text, /`brig |--[a-z]/, `${name}: ${r.content[0]!.text}`);
    }
    assert.match(hints[0]!, /`list`/);
    assert.match(hints[2]!, /`ref_list`/);
  } finally {
    await close();
  }
});

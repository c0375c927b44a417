/**
 * One spawn request, four faces: the HTTP body (and the library) is the request itself
 * (SpawnRequestSchema); the CLI's flags, MCP's `spawn` arguments and an agent lead's `spawn`
 * tool are each mapped to it by protocol SPAWN_FIELDS. This pins the table to every face:
 * each name a face is listed with is accepted by that face and lands in that request field,
 * a face accepts nothing the table does not list, the tool's descriptions are the table's,
 * and docs/api.md's table is this table.
 */
import { test } from 'node:test';
import assert from 'node:assert/strict';
import fs from 'node:fs';
import path from 'node:path';
import { SPAWN_FIELDS, SpawnRequestSchema } from '../../../src/index.js';
import type { SpawnField } from '../../../src/protocol/index.js';
import { SpawnArgsSchema, toSpawnRequest } from '../../../src/runs/spawn-args.js';
import spawnCommand, { spawnRequestFromFlags } from '../../../src/cli/commands/spawn.js';
import { parseArgs } from '../../../src/cli/command.js';
import { SPAWN_PARAMS, spawnRequestOf } from '../../../src/child/agent/tools/broker-tools.js';

const ROOT = path.resolve(import.meta.dirname, '../../..');
const FIELDS = Object.keys(SPAWN_FIELDS) as SpawnField[];
const REF = 'ref_abcdefghijklmnopqrstuvwxyz';

/** The value at a field's path of a request (`limits.tokens` → req.limits.tokens). */
function at(req: Record<string, unknown>, field: string): unknown {
  const [a, b] = field.split('.');
  const v = req[a!];
  return b === undefined ? v : (v as Record<string, unknown> | undefined)?.[b];
}

test('SPAWN_FIELDS names every field of the one spawn request, a limit as limits.<name>, and nothing else', () => {
  const shape = SpawnRequestSchema.shape as Record<string, unknown>;
  const limits = Object.keys((SpawnRequestSchema.shape.limits.unwrap() as { shape: Record<string, unknown> }).shape).map((k) => `limits.${k}`);
  const fromSchema = [...Object.keys(shape).filter((k) => k !== 'limits'), ...limits].sort();
  assert.deepEqual([...FIELDS].sort(), fromSchema);
  for (const f of FIELDS) {
    const row = SPAWN_FIELDS[f] as { cli: string | null; mcp: string | null; agentTool: string | null; why?: string; about: string };
    assert.ok(row.about.length > 0, `${f}: says what it is`);
    if (row.cli === null || row.mcp === null || row.agentTool === null) assert.ok(row.why, `${f}: a face does without it, and the table says why`);
  }
});

test('the packet fields of the reference (sessions_spawn) are taken by all four faces', () => {
  const packet: SpawnField[] = ['task', 'agent', 'model', 'objective', 'artifact_refs', 'domain_knowledge', 'tool_groups', 'expected_outputs', 'max_steps'];
  for (const f of packet) {
    const row = SPAWN_FIELDS[f];
    assert.ok(row.cli && row.mcp && row.agentTool, `${f} on every face`);
  }
  // include_parent_history: the lead asks, brig writes; an operator face gives the text, which implies it.
  assert.equal(SPAWN_FIELDS.include_parent_history.agentTool, 'include_parent_history');
  assert.equal(SPAWN_FIELDS.parent_summary.cli, '--parent-summary');
  assert.equal(SPAWN_FIELDS.parent_summary.mcp, 'parentSummary');
});

test('CLI: the flags of `brig spawn` are the table\'s cli column, and each lands in its field', () => {
  const operational = new Set(['json']);
  const flags = spawnCommand.flags.map((f) => `--${f.name}`).filter((f) => !operational.has(f.slice(2)));
  const listed = FIELDS.map((f) => SPAWN_FIELDS[f].cli).filter((x: string | null): x is string => x !== null && x !== '-- ARGV');
  assert.deepEqual([...flags].sort(), [...listed].sort());
  const args = [
    '--task', 'T', '--agent', 'researcher', '--model', 'm', '--objective', 'O', '--label', 'L', '--profile', 'P', '--cap', 'refs.read', '--egress', 'pypi',
    '--image', 'img', '--memory', '256', '--cpus', '1', '--pids', '64', '--disk', '100', '--tokens', '5000', '--cost', '0.5', '--timeout', '60',
    '--max-steps', '40', '--knowledge', 'K1', '--knowledge', 'K2', '--tool-group', 'slicing', '--parent-summary', 'PS', '--artifact', REF,
    '--expect', 'brief.md', '--async', '--repo', '/src/project@main',
  ];
  const p = parseArgs(args, spawnCommand.flags);
  const req = spawnRequestFromFlags(p, { argv: [], agent: { name: 'researcher', model: 'm' } }) as unknown as Record<string, unknown>;
  for (const f of FIELDS) {
    const cli = SPAWN_FIELDS[f].cli;
    if (cli === null || f === 'script' || f === 'argv') continue;
    assert.notEqual(at(req, f), undefined, `${cli} → ${f}`);
  }
  assert.deepEqual(req.domain_knowledge, ['K1', 'K2']);
  assert.deepEqual(req.artifact_refs, [REF], 'a ref id stays a ref id (not made a host path)');
  assert.equal(req.include_parent_history, 'summary');
  assert.equal(req.timeout, 60_000, 'seconds on the command line');
  const script = spawnRequestFromFlags(parseArgs(['--script', 'job.mjs'], spawnCommand.flags), { argv: [], script: 'export default 1', scriptFile: 'job.mjs' }) as unknown as Record<string, unknown>;
  assert.equal(script.script, 'export default 1');
  const command = spawnRequestFromFlags(parseArgs(['--', 'true'], spawnCommand.flags), { argv: ['true'] }) as unknown as Record<string, unknown>;
  assert.deepEqual(command.argv, ['true']);
  assert.ok(SpawnRequestSchema.safeParse(req).success, 'the one schema takes what the flags made');
});

test('MCP: the spawn arguments are the table\'s mcp column, and each lands in its field', () => {
  const shape = SpawnArgsSchema.shape as Record<string, unknown>;
  const limits = Object.keys((SpawnArgsSchema.shape.limits.unwrap() as { shape: Record<string, unknown> }).shape).map((k) => `limits.${k}`);
  const args = [...Object.keys(shape).filter((k) => k !== 'limits'), ...limits].sort();
  const listed = FIELDS.map((f) => SPAWN_FIELDS[f].mcp).filter((x: string | null): x is string => x !== null).sort();
  assert.deepEqual(args, listed);
  const all = {
    task: 'T', agent: 'researcher', model: 'm', objective: 'O', image: 'my-image:1', artifacts: [REF], profile: 'P', caps: ['refs.read' as const],
    limits: { cpu: 1, memoryMb: 256, pids: 64, diskMb: 100, timeoutMs: 60_000, maxSteps: 40, tokens: 5000, costUsd: 0.5 },
    expectedOutputs: ['brief.md'], label: 'L', domainKnowledge: ['K1'], toolGroups: ['slicing'], parentSummary: 'PS', egress: ['pypi'], repo: '/src/project',
  };
  const r = toSpawnRequest(SpawnArgsSchema.parse(all));
  assert.ok(r.ok, JSON.stringify(!r.ok && r.error.message));
  const req = r.value as unknown as Record<string, unknown>;
  for (const f of FIELDS) {
    const mcp = SPAWN_FIELDS[f].mcp;
    if (mcp === null || f === 'script' || f === 'argv') continue;
    assert.notEqual(at(req, f), undefined, `${mcp} → ${f}`);
  }
  assert.ok(SpawnRequestSchema.safeParse(req).success);
});

test('agent tool: the lead\'s spawn parameters are the table\'s agentTool column, with its descriptions, and each lands in its field', () => {
  const listed = FIELDS.map((f) => SPAWN_FIELDS[f].agentTool).filter((x: string | null): x is string => x !== null).sort();
  assert.deepEqual(Object.keys(SPAWN_PARAMS).sort(), listed);
  for (const f of FIELDS) {
    const name = SPAWN_FIELDS[f].agentTool;
    if (name === null) continue;
    assert.equal((SPAWN_PARAMS as Record<string, { description?: string }>)[name]!.description, SPAWN_FIELDS[f].about, `${name}: the table's description (one text, on both sides of the jail)`);
  }
  const all = {
    task: 'T', agent: 'researcher', model: 'm', objective: 'O', async: true, tokens: 5000, cost_usd: 0.5, artifact_refs: [REF],
    domain_knowledge: ['K1'], tool_groups: ['slicing'], include_parent_history: 'summary', expected_outputs: ['brief.md'], max_steps: 40, egress: ['pypi'], repo: 'inherit',
  };
  const req = spawnRequestOf(all);
  for (const f of FIELDS) {
    const name = SPAWN_FIELDS[f].agentTool;
    if (name === null) continue;
    assert.notEqual(at(req, f), undefined, `${name} → ${f}`);
  }
  assert.equal(req.kind, 'agent');
  assert.deepEqual(req.egress, { rules: ['pypi'] }, 'a lead asks for egress rules by id: never inherited, each granted only inside one of its own');
  assert.ok(SpawnRequestSchema.safeParse(req).success, 'the one schema takes what the lead sends');
});

test('docs/api.md documents the mapping once: its table is SPAWN_FIELDS', () => {
  const text = fs.readFileSync(path.join(ROOT, 'docs/api.md'), 'utf8');
  const from = text.indexOf('## The spawn request on every face');
  assert.ok(from >= 0, 'docs/api.md has the section');
  const section = text.slice(from, text.indexOf('\n## ', from + 1));
  const cell = (s: string) => (s.trim() === '—' ? null : s.trim().replace(/^`|`$/g, ''));
  const rows = [...section.matchAll(/^\| `([a-z_.A-Z]+)` \|([^|]*)\|([^|]*)\|([^|]*)\|/gm)].map((m) => ({ field: m[1]!, cli: cell(m[2]!), mcp: cell(m[3]!), agentTool: cell(m[4]!) }));
  assert.deepEqual(rows.map((r) => r.field), FIELDS);
  for (const r of rows) {
    const row = SPAWN_FIELDS[r.field as SpawnField];
    assert.deepEqual([r.cli, r.mcp, r.agentTool], [row.cli, row.mcp, row.agentTool], r.field);
  }
});

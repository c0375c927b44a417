import { test } from 'node:test';
import assert from 'node:assert/strict';
import fs from 'node:fs';
import os from 'node:os';
import path from 'node:path';
import { AGENT_LOOP_METHODS, AGENT_TOOLS as AGENT_TOOLS_CAPS, AGENT_TOOL_NAMES, TOOL_METHODS, agentMethodSurface, loadAgentCatalog, parseAgentSpec, shippedAgentsDir, toolSurface } from '../../../src/agents/index.js';
import { BROKER_METHODS, type BrokerMethod } from '../../../src/protocol/index.js';

const SPEC = (fm: string, body = 'Do the task.') => `---\n${fm}\n---\n${body}\n`;

test('an agent spec: strict frontmatter (unknown key named with its line and the nearest key), a body of instructions', () => {
  const good = parseAgentSpec(SPEC('name: scout\ndescription: looks around\nmaxSteps: 12\nworkspaceAware: true'), 'scout.md');
  assert.ok(good.ok);
  assert.equal(good.value.instructions, 'Do the task.');
  assert.equal(good.value.role, 'worker');
  const typo = parseAgentSpec(SPEC('name: scout\ndescription: x\nmaxStep: 12'), 'scout.md');
  assert.equal(typo.ok, false);
  if (!typo.ok) {
    assert.equal(typo.error.code, 'invalid_input');
    assert.match(typo.error.message, /scout\.md:4: unknown key "maxStep"/);
    assert.match(typo.error.hint, /maxSteps/);
  }
  const tool = parseAgentSpec(SPEC('name: scout\ndescription: x\ntools: [shell, curl]'), 'scout.md');
  assert.equal(tool.ok, false, 'a tool the loop does not implement is refused');
  assert.equal(parseAgentSpec('just text', 'x.md').ok, false);
  assert.equal(parseAgentSpec(SPEC('name: scout\ndescription: x', '   '), 'x.md').ok, false, 'empty instructions');
});

test('the catalog: the home\'s specs shadow the shipped ones; `general` ships; an unknown name gets the nearest', (t) => {
  const home = fs.mkdtempSync(path.join(os.tmpdir(), 'brig-agents-'));
  t.after(() => fs.rmSync(home, { recursive: true, force: true }));
  fs.writeFileSync(path.join(home, 'general.md'), SPEC('name: general\ndescription: the operator\'s own'));
  fs.writeFileSync(path.join(home, 'broken.md'), SPEC('name: broken\ndescriptio: typo'));
  const cat = loadAgentCatalog([home, shippedAgentsDir()]);
  const g = cat.get('general');
  assert.ok(g.ok);
  assert.equal(g.value.description, "the operator's own");
  assert.ok(cat.get('coordinator').ok, 'shipped');
  const near = cat.get('genral');
  assert.equal(near.ok, false);
  if (!near.ok) assert.match(near.error.hint, /general/);
  const broken = cat.get('broken');
  assert.equal(broken.ok, false);
  if (!broken.ok) assert.match(broken.error.message, /unknown key "descriptio"/);
  assert.equal(cat.broken().length, 1);
  const shipped = loadAgentCatalog([shippedAgentsDir()]);
  assert.deepEqual(shipped.broken(), [], 'every shipped spec validates');
});

// req: lease:enforced
test('[INV-1] the tool surface follows the lease: no cap, no tool; a coordinator keeps delegation and drill-in; finish always', () => {
  const all = toolSurface({ caps: ['exec', 'spawn', 'steer', 'kill', 'refs.read', 'llm'], role: 'worker' });
  assert.ok(all.includes('shell') && all.includes('spawn') && all.includes('ref_sql') && all.includes('finish'));
  const noExec = toolSurface({ caps: ['llm'], role: 'worker' });
  assert.deepEqual(noExec, ['read_file', 'write_file', 'edit_file', 'list_files', 'grep_files', 'session_status', 'ctx_search', 'ctx_expand', 'finish']);
  // A spawn's tool groups narrow what a run does to the world; looking at itself stays, as finish does.
  assert.deepEqual(toolSurface({ caps: ['exec', 'llm'], role: 'worker', groupTools: ['shell'] }), ['shell', 'session_status', 'ctx_search', 'ctx_expand', 'finish']);
  const coord = toolSurface({ caps: ['exec', 'spawn', 'steer', 'kill', 'refs.read', 'llm'], role: 'coordinator' });
  assert.ok(!coord.includes('shell') && !coord.includes('write_file') && !coord.includes('edit_file'));
  assert.ok(coord.includes('spawn') && coord.includes('wait_children') && coord.includes('ref_grep'));
  const narrowed = toolSurface({ caps: ['exec', 'llm'], role: 'worker', wanted: ['shell', 'spawn'] });
  assert.deepEqual(narrowed, ['shell', 'finish'], 'a spec can narrow but not widen: spawn needs the cap');
  assert.ok(!toolSurface({ caps: ['exec', 'llm'], role: 'worker', denied: ['shell'] }).includes('shell'));
});

test('[INV-1] property: the role only narrows — a coordinator\'s surface is within the worker\'s, both within the lease, whatever the caps', async () => {
  const fc = (await import('fast-check')).default;
  const { CAPABILITIES } = await import('../../../src/lease/index.js');
  const { AGENT_TOOLS } = await import('../../../src/agents/index.js');
  fc.assert(
    fc.property(fc.subarray([...CAPABILITIES]), fc.option(fc.subarray(Object.keys(AGENT_TOOLS)), { nil: undefined }), (caps, wanted) => {
      const worker = toolSurface({ caps, role: 'worker', ...(wanted ? { wanted } : {}) });
      const coord = toolSurface({ caps, role: 'coordinator', ...(wanted ? { wanted } : {}) });
      for (const t of coord) assert.ok(worker.includes(t), `${t} offered to a coordinator but not to a worker`);
      for (const t of [...worker, ...coord]) {
        const cap = (AGENT_TOOLS as Record<string, string | null>)[t];
        assert.ok(cap === null || caps.includes(cap as never), `${t} offered without ${cap}`);
      }
      assert.ok(worker.includes('finish') && coord.includes('finish'));
    }),
    { numRuns: 300 },
  );
});

// req: lease:tool-surface-binds
test('[INV-1] every broker method is the loop\'s, a tool\'s, or no agent\'s: a method added to the protocol must be placed before an agent may call it', () => {
  const NO_AGENT: BrokerMethod[] = ['refs.list'];
  const byTool = new Set<string>(Object.values(TOOL_METHODS).flat());
  for (const m of Object.keys(BROKER_METHODS) as BrokerMethod[]) {
    const placed = [(AGENT_LOOP_METHODS as readonly string[]).includes(m), byTool.has(m), NO_AGENT.includes(m)].filter(Boolean).length;
    assert.equal(placed, 1, `${m}: exactly one of the loop's methods, a tool's, or NO_AGENT`);
  }
  // A tool's method needs the tool's capability: the surface never reaches past the lease's tool surface.
  for (const [tool, methods] of Object.entries(TOOL_METHODS)) {
    for (const m of methods) assert.equal(BROKER_METHODS[m], (AGENT_TOOLS_CAPS as Record<string, unknown>)[tool], `${tool} → ${m}`);
  }
  assert.deepEqual(Object.keys(TOOL_METHODS).sort(), [...AGENT_TOOL_NAMES].sort());
  const shellOnly = agentMethodSurface(['shell', 'finish']);
  assert.deepEqual(shellOnly, [...AGENT_LOOP_METHODS].sort());
  assert.ok(!(shellOnly as string[]).includes('spawn'));
  assert.ok(agentMethodSurface(['spawn', 'wait_children', 'ref_sql', 'finish']).includes('spawn'));
  assert.ok(agentMethodSurface(['spawn', 'wait_children', 'ref_sql', 'finish']).includes('refs.sql'));
  assert.deepEqual(agentMethodSurface(['not_a_tool']), [...AGENT_LOOP_METHODS].sort(), 'an unknown name adds nothing');
});

test('a spec written after the catalog loaded is found on its first use (a miss reads the directory again): no daemon restart', () => {
  const dir = fs.mkdtempSync(path.join(os.tmpdir(), 'brig-agents-'));
  try {
    const cat = loadAgentCatalog([dir]);
    const before = cat.get('late');
    assert.equal(before.ok, false);
    fs.writeFileSync(path.join(dir, 'late.md'), '---\nname: late\ndescription: added while serving\n---\nDo it.\n');
    const after = cat.get('late');
    assert.ok(after.ok, JSON.stringify(!after.ok && after.error.message));
    assert.equal(after.value.name, 'late');
  } finally {
    fs.rmSync(dir, { recursive: true, force: true });
  }
});

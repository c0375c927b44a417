/**
 * [INV-2] What a graph hands its nodes besides their dependencies' outputs, proven from inside
 * real jails: a graph input that is an existing ResultRef is mounted read-only at
 * /artifacts/<as> only in the nodes that declare it, and a map reads its items from one; the
 * lease ceiling is every node's (a node naming no caps gets exactly the ceiling's);
 * `context.summaries_of` puts the head of an upstream node's committed result in the packet as
 * data. A ref the caller cannot hand is refused before anything starts.
 */
import { test } from 'node:test';
import assert from 'node:assert/strict';
import { requireEngine } from '../../helpers/engine.js';
import { outOf, read } from './committed.js';
import { freshHome, leftovers, supervisorAt } from '../runs/fixture.js';
import type { SpawnPacket } from '../../../src/protocol/index.js';

const sh = (script: string) => ['sh', '-c', script];
const ITEMS = '{"n":1}\n{"n":2}\n{"n":3}\n';


// req: jail:no-host-paths
test('[INV-2] a ref input is mounted read-only only where declared, a map reads its items from one, the lease ceiling is each node\'s, summaries_of reaches the packet', async (t) => {
  if (!(await requireEngine(t))) return;
  const home = await freshHome(t);
  const c = await supervisorAt(home);
  try {
    // An existing ResultRef: an operator's earlier run's out/items.jsonl.
    const src = await c.supervisor.spawn({ task: 'make items', kind: 'command', argv: sh(`printf '${ITEMS.replace(/\n/g, '\\n')}' > /workspace/out/items.jsonl`) });
    assert.ok(src.ok && src.value.endReason === 'completed', src.ok ? src.value.endReason! : src.error.message);
    const refs = await c.brig.refs.list(src.value.id);
    assert.ok(refs.ok);
    const ref = refs.value.find((r) => r.path === 'out/items.jsonl')!.ref;

    const spec = JSON.stringify({
      graph: 'brig/v1',
      label: 'inputs',
      inputs: { items: { ref }, topic: { text: 'counting' } },
      lease: { caps: ['exec', 'artifacts.read', 'refs.read'], limits: { memoryMb: 256 }, timeout_ms: 120_000 },
      concurrency: { max_parallel: 2 },
      nodes: [
        {
          id: 'look',
          kind: 'script',
          inputs: [{ from: '$inputs.items', as: 'items' }],
          spawn: {
            task: 'look at {{inputs.topic}}',
            script: `import { readFileSync, writeFileSync, readdirSync } from 'node:fs';
export default async function () {
  const out = '/workspace/out/';
  writeFileSync(out + 'ls.txt', readdirSync('/artifacts').join('\\n'));
  writeFileSync(out + 'copy.jsonl', readFileSync('/artifacts/items'));
  let w = 'written';
  try { writeFileSync('/artifacts/items', 'x'); } catch (e) { w = e.code; }
  writeFileSync(out + 'write.txt', w);
  return 'look saw ' + readFileSync('/artifacts/items', 'utf8').trim().split('\\n').length + ' items';
}`,
          },
        },
        { id: 'blind', kind: 'command', spawn: { task: 'declares nothing', argv: sh('ls -A /artifacts > /workspace/out/ls.txt 2>&1; true'), caps: ['exec'] } },
        {
          id: 'm',
          kind: 'map',
          map: { over: { from: '$inputs.items' }, max_items: 4, item_kind: 'command' },
          spawn: { task: 'item {{item}}', argv: sh('cp /workspace/.brig/packet.json /workspace/out/packet.json') },
        },
        {
          id: 'tell',
          kind: 'command',
          depends_on: ['look'],
          context: { summaries_of: ['look'] },
          spawn: { task: 'what did look see', argv: sh('cp /workspace/.brig/packet.json /workspace/out/packet.json') },
        },
      ],
    });
    const started = await c.graphs.run(spec, { source: 'inputs.json' });
    assert.ok(started.ok, started.ok ? '' : started.error.message);
    const w = await c.graphs.wait(started.value.graphId, { timeoutMs: 240_000 });
    assert.ok(w.ok);
    const rec = w.value;
    assert.equal(rec.state, 'completed', JSON.stringify(rec.nodes.map((n) => [n.id, n.state, n.skipReason, n.attempts.map((a) => a.errorCode)])));

    // The ref, read-only, only where declared.
    const look = outOf(home, rec, 'look');
    assert.equal(read(look, 'ls.txt'), 'items');
    assert.equal(read(look, 'copy.jsonl'), ITEMS);
    assert.equal(read(look, 'write.txt'), 'EROFS', 'the input cannot be written');
    assert.match(read(outOf(home, rec, 'blind'), 'ls.txt'), /^(ls: \/artifacts: No such file or directory\n)?$/, 'a node that declared nothing has no /artifacts');

    // The map's items came from the ref: 3 slots ran with their item, the 4th had none.
    assert.equal(rec.nodes.find((n) => n.id === 'm.items')!.items, 3);
    for (const k of [0, 1, 2]) {
      const p = JSON.parse(read(outOf(home, rec, `m.${k}`), 'packet.json')) as SpawnPacket;
      assert.equal(p.task, `item {"n":${k + 1}}`);
    }
    assert.deepEqual([rec.nodes.find((n) => n.id === 'm.3')!.state, rec.nodes.find((n) => n.id === 'm.3')!.skipReason], ['skipped', 'no_item']);

    // summaries_of: the head of look's committed result, in tell's packet as data — not in its task.
    const told = JSON.parse(read(outOf(home, rec, 'tell'), 'packet.json')) as SpawnPacket;
    assert.deepEqual(told.upstream, [{ node: 'look', text: 'look saw 3 items' }]);
    assert.equal(told.task, 'what did look see');

    // The ceiling: a node naming no caps got exactly the ceiling's (its profile allowing); one naming caps, those.
    const ex = await c.graphs.explain(rec.id);
    assert.ok(ex.ok);
    const caps = (id: string) => [...(ex.value.nodes.find((n) => n.id === id)!.attempts[0]!.lease?.caps ?? [])].sort();
    assert.deepEqual(caps('look'), ['artifacts.read', 'exec', 'refs.read']);
    assert.deepEqual(caps('blind'), ['exec']);
    const lookRun = await c.supervisor.get(rec.nodes.find((n) => n.id === 'look')!.committedRunId!);
    // The ceiling's timeout (less the moments its lease took to grant; the default would be the supervisor's maxRunTimeoutMs).
    assert.ok(lookRun && lookRun.timeoutMs <= 120_000 && lookRun.timeoutMs > 100_000, `the ceiling's timeout: ${lookRun?.timeoutMs}`);
    assert.deepEqual(await leftovers(home, { released: true }), []);
  } finally {
    await c.close();
  }
});

test('a ref input the store does not hold refuses the graph before anything starts (ref_not_found, naming the input)', async (t) => {
  if (!(await requireEngine(t))) return;
  const home = await freshHome(t);
  const c = await supervisorAt(home);
  try {
    const spec = JSON.stringify({
      graph: 'brig/v1',
      inputs: { data: { ref: `ref_${'a'.repeat(26)}` } },
      nodes: [{ id: 'a', kind: 'command', inputs: [{ from: '$inputs.data', as: 'data' }], spawn: { task: 't', argv: ['true'] } }],
    });
    const r = await c.graphs.run(spec);
    assert.ok(!r.ok);
    assert.equal(r.error.code, 'ref_not_found');
    assert.match(r.error.message, /^input data: /);
    assert.deepEqual(await c.supervisor.list(), [], 'no run was made');
  } finally {
    await c.close();
  }
});

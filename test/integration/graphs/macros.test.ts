/**
 * The macros on real jails, each expanded node an ordinary run: a map_reduce over a JSONL file
 * a script committed (12 items, agent slots against the scripted model server — item 7 fails
 * once and its retry succeeds —, 4 slots without an item skipped, a reducer that sees every
 * item's out/ read-only, item 7's once, from its succeeded attempt), a refine that stops at round 2 and a collaborate whose last round
 * sees every earlier one read-only, and a debate whose turns see only earlier rounds.
 */
import { test } from 'node:test';
import assert from 'node:assert/strict';
import fs from 'node:fs';
import path from 'node:path';
import { loadConfig } from '../../../src/config/index.js';
import { compose } from '../../../src/daemon/index.js';
import type { GraphRecord } from '../../../src/protocol/index.js';
import { requireEngine } from '../../helpers/engine.js';
import { startModelServer, statusTurn, toolCallTurn, type RecordedRequest } from '../../helpers/model-server.js';
import { freshHome, leftovers, supervisorAt } from '../runs/fixture.js';

const KEY = 'sk-brig-test-graphs-0123456789abcdef';
const sys = (r: RecordedRequest) => String((r.body.messages as { content: unknown }[])[0]?.content ?? '');
const turns = (r: RecordedRequest) => (r.body.messages as { role: string }[]).filter((m) => m.role === 'assistant').length;
/** Each node's state, skip reason and attempts; a failed one with its last attempt's end (so a failure in CI says why). */
const states = (rec: GraphRecord) => Object.fromEntries(rec.nodes.map((n) => {
  const last = n.attempts.at(-1);
  const why = n.state === 'failed' && last ? ` (${last.endReason ?? '?'}/${last.errorCode ?? '-'} ${last.runId ?? ''})` : '';
  return [n.id, `${n.state}${n.skipReason ? `/${n.skipReason}` : ''}:a${n.attempts.length}${why}`];
}));
const outFile = (home: string, runId: string, file: string) => fs.readFileSync(path.join(home, 'results', runId, runId, 'out', file), 'utf8');

const PLAN = "import { writeFileSync } from 'node:fs';\nexport default async function () { writeFileSync('/workspace/out/items.jsonl', Array.from({ length: 12 }, (_, n) => JSON.stringify({ n }) + '\\n').join('')); return { items: 12 }; }";

test('a map_reduce on real jails: 12 items from a committed JSONL, agent slots each with its own item (item 7 fails once, its retry succeeds), 4 empty slots skipped, the reducer sees every item read-only', async (t) => {
  if (!(await requireEngine(t))) return;
  const home = await freshHome(t);
  let sevenCalls = 0;
  const m = await startModelServer({
    script: (req) => {
      const n = /research item \{"n":(\d+)\}/.exec(sys(req))?.[1];
      if (n === undefined) return undefined;
      // Item 7's first attempt: the model refuses its first call and the salvage after it (a 400 is not retried): the run fails.
      if (n === '7' && sevenCalls++ < 2) {
        return statusTurn(400, { body: { error: { message: 'scripted refusal: item 7 fails once' } } });
      }
      if (turns(req) === 0) return toolCallTurn('write_file', { path: '/workspace/out/item.txt', content: `item ${n} researched\n` });
      return toolCallTurn('finish', { answer: `item ${n} done`, files: ['/workspace/out/item.txt'] });
    },
    expectKey: KEY,
  });
  t.after(() => m.close());
  const cfg = loadConfig({ BRIG_HOME: home, BRIG_MODEL_BASE_URL: m.baseUrl, BRIG_MODEL: 'scripted-stand-in', BRIG_MODEL_API: 'openai-chat', BRIG_MODEL_API_KEY: KEY, BRIG_MODEL_CONTEXT_WINDOW: '32000' });
  const c = await compose(cfg, { tickMs: 200, reconcile: true });
  await c.supervisor.start();
  try {
    const spec = JSON.stringify({
      graph: 'brig/v1',
      label: 'research',
      concurrency: { max_parallel: 4 },
      nodes: [
        { id: 'plan', kind: 'script', spawn: { task: 'split the work', script: PLAN } },
        {
          id: 'research',
          kind: 'map_reduce',
          depends_on: ['plan'],
          map: { over: { from: 'plan', path: 'out/items.jsonl' }, max_items: 16, item_kind: 'agent' },
          spawn: { task: 'research item {{item}}', agent: 'general' },
          retry: { max: 1, on: ['failed'] },
          reduce: {
            kind: 'command',
            as: 'items',
            spawn: { task: 'join', argv: ['sh', '-c', 'ls /artifacts > /workspace/out/list.txt; cat /artifacts/items-*/item.txt | sort -V > /workspace/out/all.txt; (echo x > /artifacts/items-0/item.txt) 2> /workspace/out/write.txt || true'] },
          },
        },
      ],
    });
    const d = await c.graphs.define(spec);
    assert.ok(d.ok, d.ok ? '' : d.error.message);
    assert.equal(d.value.nodes.length, 1 + 1 + 16 + 1 + 1, 'define answers the expanded nodes: plan, the split, 16 slots, the map join, the reducer');
    const s = await c.graphs.run(spec);
    assert.ok(s.ok, s.ok ? '' : s.error.message);
    const w = await c.graphs.wait(s.value.graphId, { timeoutMs: 540_000 });
    assert.ok(w.ok);
    const rec = w.value;
    const st = states(rec);
    assert.equal(rec.state, 'completed', JSON.stringify(rec.nodes.map((n) => [n.id, n.state, n.attempts.map((a) => [a.endReason, a.errorCode])])));
    const node = (id: string) => rec.nodes.find((n) => n.id === id)!;
    assert.equal(node('research.items').items, 12);
    for (let i = 0; i < 16; i++) assert.equal(st[`research.${i}`], i === 7 ? 'succeeded:a2' : i < 12 ? 'succeeded:a1' : 'skipped/no_item:a0', `slot ${i}`);
    // Item 7: a failed first attempt (its run ended failed), a retry under its own key that succeeded and is the one committed.
    const s7 = node('research.7');
    assert.deepEqual(s7.attempts.map((a) => a.result), ['failed', 'succeeded']);
    assert.equal(s7.committedRunId, s7.attempts[1]!.runId);
    assert.equal(node('research.map').parts!.find((p) => p.name === '7')?.runId, s7.attempts[1]!.runId, "the join mounts the retry's out/, never the failed attempt's");
    // Each slot an ordinary agent run whose task carried its own item (the model server saw each once).
    const seven = await c.supervisor.get(node('research.7').committedRunId!);
    assert.deepEqual([seven?.kind, seven?.endReason, seven?.label], ['agent', 'completed', `${rec.id}/research.7`]);
    const asked = new Set(m.requests.map((q) => /research item (\{"n":\d+\})/.exec(sys(q))?.[1]).filter(Boolean));
    assert.equal(asked.size, 12);
    assert.equal(node('research.map').parts!.length, 12);
    const reducer = node('research').committedRunId!;
    assert.equal(outFile(home, reducer, 'list.txt'), Array.from({ length: 12 }, (_, i) => `items-${i}`).sort().join('\n') + '\n', 'exactly the 12 items, nothing else');
    assert.equal(outFile(home, reducer, 'all.txt'), Array.from({ length: 12 }, (_, i) => `item ${i} researched\n`).join(''));
    assert.match(outFile(home, reducer, 'write.txt'), /Read-only file system/);
    assert.match(rec.envelope!, /^research\.items\s+split\s+succeeded .*12 items$/m);
    assert.ok(Buffer.byteLength(rec.envelope!) <= 4096);
    assert.deepEqual(await leftovers(home, { released: true }), []);
  } finally {
    await c.close();
  }
});

// A round: its number from its task; the previous draft (refine) read from /artifacts/prev.
const ROUND = `import { readFileSync, writeFileSync, readdirSync } from 'node:fs';
export default async function (brig) {
  const n = Number(/round (\\d+)/.exec(brig.task)[1]);
  let prev = '';
  try { prev = readFileSync('/artifacts/prev/draft.txt', 'utf8'); } catch {}
  writeFileSync('/workspace/out/draft.txt', prev + 'line ' + n + '\\n');
  let saw = [];
  try { saw = readdirSync('/artifacts').sort(); } catch {}
  let write = 'none';
  for (const d of saw) { try { writeFileSync('/artifacts/' + d + '/draft.txt', 'x'); write = 'WROTE'; } catch (e) { write = e.code; } }
  writeFileSync('/workspace/out/seen.json', JSON.stringify({ saw, write }));
  return { done: n >= 2 };
}`;

test('refine stops at round 2 (stop_when on its committed result; rounds 3 and 4 skipped stopped_early) and its join commits round 2; collaborate round 3 sees rounds 1 and 2 read-only', async (t) => {
  if (!(await requireEngine(t))) return;
  const home = await freshHome(t);
  const c = await supervisorAt(home);
  try {
    const spec = JSON.stringify({
      graph: 'brig/v1',
      concurrency: { max_parallel: 2 },
      nodes: [
        { id: 'draft', kind: 'refine', rounds: { count: 4, round_kind: 'script', stop_when: { field: '$.done', equals: true } }, spawn: { task: 'round {{round}}', script: ROUND } },
        { id: 'publish', kind: 'command', depends_on: ['draft'], inputs: [{ from: 'draft', as: 'd' }], spawn: { task: 'publish', argv: ['sh', '-c', 'cat /artifacts/d/draft.txt > /workspace/out/final.txt'] } },
        { id: 'team', kind: 'collaborate', rounds: { count: 3, round_kind: 'script' }, spawn: { task: 'round {{round}}', script: ROUND } },
      ],
    });
    const s = await c.graphs.run(spec);
    assert.ok(s.ok, s.ok ? '' : s.error.message);
    const w = await c.graphs.wait(s.value.graphId, { timeoutMs: 360_000 });
    assert.ok(w.ok);
    const rec = w.value;
    const st = states(rec);
    assert.equal(rec.state, 'completed', JSON.stringify(st));
    assert.deepEqual([st['draft.r1'], st['draft.r2'], st['draft.r3'], st['draft.r4'], st.draft], ['succeeded:a1', 'succeeded:a1', 'skipped/stopped_early:a0', 'skipped/stopped_early:a0', 'succeeded:a1']);
    const node = (id: string) => rec.nodes.find((n) => n.id === id)!;
    assert.equal(node('draft').committedRunId, node('draft.r2').committedRunId, 'the join commits the last round that ran');
    assert.equal(outFile(home, node('publish').committedRunId!, 'final.txt'), 'line 1\nline 2\n');
    // Collaborate: round 3 saw rounds 1 and 2, and could write neither.
    const seen = (id: string) => JSON.parse(outFile(home, node(id).committedRunId!, 'seen.json')) as { saw: string[]; write: string };
    assert.deepEqual(seen('team.r3'), { saw: ['r1', 'r2'], write: 'EROFS' });
    assert.deepEqual(seen('draft.r2'), { saw: ['prev'], write: 'EROFS' });
    assert.deepEqual(seen('draft.r1'), { saw: [], write: 'none' });
    assert.deepEqual(await leftovers(home, { released: true }), []);
  } finally {
    await c.close();
  }
});

const TURN = `import { readdirSync, readFileSync, writeFileSync } from 'node:fs';
export default async function (brig) {
  let saw = [];
  try { saw = readdirSync('/artifacts').sort(); } catch {}
  const heard = saw.map((d) => readFileSync('/artifacts/' + d + '/turn.txt', 'utf8').trim());
  writeFileSync('/workspace/out/turn.txt', brig.task + ' after [' + heard.join(' | ') + ']\\n');
  return { saw };
}`;

test('a debate on real jails: round 1 sides see nothing of each other, round 2 sees the committed round 1 read-only, the synthesizer sees every turn', async (t) => {
  if (!(await requireEngine(t))) return;
  const home = await freshHome(t);
  const c = await supervisorAt(home);
  try {
    const spec = JSON.stringify({
      graph: 'brig/v1',
      concurrency: { max_parallel: 2 },
      nodes: [
        {
          id: 'd',
          kind: 'debate',
          debate: { sides: ['pro', 'con'], rounds: 2, side_kind: 'script', synthesizer: { kind: 'script', spawn: { task: 'judge', script: TURN } } },
          spawn: { task: '{{side}}{{round}}', script: TURN },
        },
      ],
    });
    const s = await c.graphs.run(spec);
    assert.ok(s.ok, s.ok ? '' : s.error.message);
    assert.deepEqual(s.value.order, ['d.r1.pro', 'd.r1.con', 'd.r2.pro', 'd.r2.con', 'd']);
    const w = await c.graphs.wait(s.value.graphId, { timeoutMs: 360_000 });
    assert.ok(w.ok);
    const rec = w.value;
    assert.equal(rec.state, 'completed', JSON.stringify(states(rec)));
    const said = (id: string) => outFile(home, rec.nodes.find((n) => n.id === id)!.committedRunId!, 'turn.txt');
    assert.equal(said('d.r1.pro'), 'pro1 after []\n');
    assert.equal(said('d.r1.con'), 'con1 after []\n');
    assert.equal(said('d.r2.con'), 'con2 after [con1 after [] | pro1 after []]\n', 'round 2 heard the committed round 1, not its own side');
    assert.equal(said('d'), 'judge after [con1 after [] | pro1 after [] | con2 after [con1 after [] | pro1 after []] | pro2 after [con1 after [] | pro1 after []]]\n');
    assert.deepEqual(await leftovers(home, { released: true }), []);
  } finally {
    await c.close();
  }
});

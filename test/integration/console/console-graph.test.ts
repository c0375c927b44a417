/**
 * The console's graphs tab in a real browser (Debian's chromium through playwright-core) against
 * a real `brig serve --ui`: a graph started from the CLI is listed and drawn live — nodes in
 * columns by depth, coloured by state — its gate waits for an operator and is approved from the
 * page (the decision recorded as the console's, the note only as its hash), the graph then
 * completes, and a click on a node opens that node's run.
 */
import { test } from 'node:test';
import assert from 'node:assert/strict';
import fs from 'node:fs';
import path from 'node:path';
import { chromium } from 'playwright-core';
import type { GraphRecord } from '../../../src/index.js';
import { CHROMIUM, CHROMIUM_ARGS, ensureChromium } from '../../helpers/chromium.js';
import { requireEngine } from '../../helpers/engine.js';
import { daemonHome } from '../daemon/serve-proc.js';

test('the console draws a graph live, approves its waiting gate, and opens a node\'s run', async (t) => {
  if (!(await requireEngine(t))) return;
  if (!ensureChromium(t)) return;
  const h = await daemonHome(t);
  const serve = await h.serve(['--ui']);
  const url = (JSON.parse(serve.stdout().split('\n')[0]!) as { console?: string }).console!;
  const spec = path.join(h.home, 'gated.json');
  fs.writeFileSync(spec, JSON.stringify({
    graph: 'brig/v1',
    label: 'console-gate',
    nodes: [
      { id: 'facts', kind: 'command', spawn: { task: 'facts', argv: ['sh', '-c', 'echo 412 passed > /workspace/out/facts.txt'] } },
      { id: 'risks', kind: 'command', spawn: { task: 'risks', argv: ['sh', '-c', 'echo one risk > /workspace/out/risks.txt'] } },
      { id: 'go', kind: 'gate', depends_on: ['facts', 'risks'], gate: { prompt: 'Ship?', timeout_ms: 600000, show: ['facts', 'risks'] } },
      { id: 'ship', kind: 'command', depends_on: ['go'], spawn: { task: 'ship', argv: ['sh', '-c', 'echo shipped > /workspace/out/ship.txt'] } },
    ],
  }));
  const started = await h.run(['graph', 'run', spec, '--json']);
  assert.equal(started.code, 0, started.stderr);
  const gid = (JSON.parse(started.stdout) as { graph: { graphId: string } }).graph.graphId;

  const browser = await chromium.launch({ executablePath: CHROMIUM, args: CHROMIUM_ARGS });
  t.after(() => browser.close());
  const page = await browser.newPage({ viewport: { width: 1400, height: 800 } });
  await page.goto(url);
  await page.waitForSelector('#live:text("live")');
  await page.click('nav button[data-tab="graphs"]');
  await page.locator(`tr[data-graph="${gid}"]`).click();
  // Drawn live: the two first nodes succeed, the gate waits for an operator, ship is pending behind it.
  await page.waitForSelector('#graph-svg g[data-node="go"][data-state="waiting"]', { timeout: 30_000 });
  for (const n of ['facts', 'risks']) assert.equal(await page.getAttribute(`#graph-svg g[data-node="${n}"]`, 'data-state'), 'succeeded');
  assert.equal(await page.getAttribute('#graph-svg g[data-node="ship"]', 'data-state'), 'pending');
  assert.equal(await page.locator('#graph-svg line').count(), 3, 'an edge per dependency');
  // Columns by depth: facts and risks first, the gate after them, ship last.
  const xOf = async (n: string) => Number(/translate\((\d+)/.exec((await page.getAttribute(`#graph-svg g[data-node="${n}"]`, 'transform')) ?? '')?.[1]);
  assert.deepEqual([await xOf('facts'), await xOf('risks'), await xOf('go'), await xOf('ship')], [10, 10, 210, 410]);
  assert.match((await page.textContent('#graph')) ?? '', /gate go waits for an operator until/);
  // The person deciding sees the prompt and what the gate shows: each named node's result.
  assert.equal(await page.textContent('div.gate[data-gate="go"] p.prompt'), 'Ship?');
  assert.equal(await page.textContent('pre[data-shows="facts"]'), 'facts: out/facts.txt: 412 passed\n');
  assert.equal(await page.textContent('pre[data-shows="risks"]'), 'risks: out/risks.txt: one risk\n');
  if (process.env.BRIG_CONSOLE_SHOTS) await page.screenshot({ path: path.join(process.env.BRIG_CONSOLE_SHOTS, 'console-graph.png') });

  // Approve from the page, with a note.
  page.once('dialog', (d) => void d.accept('counts look right'));
  await page.click('button.approve[data-gate="go"]');
  await page.waitForSelector('#graph-state[data-state="completed"]', { timeout: 30_000 });
  assert.equal(await page.getAttribute('#graph-svg g[data-node="ship"]', 'data-state'), 'succeeded');
  const status = JSON.parse((await h.run(['graph', 'status', gid, '--json'])).stdout) as { graph: GraphRecord };
  const go = status.graph.nodes.find((n) => n.id === 'go')!;
  assert.deepEqual([go.gate?.decision, go.gate?.by], ['approved', 'console']);
  const ledger = fs.readdirSync(path.join(h.home, 'ledger')).map((f) => fs.readFileSync(path.join(h.home, 'ledger', f), 'utf8')).join('');
  assert.match(ledger, /"type":"graph\.gate_decided"/);
  assert.ok(!ledger.includes('counts look right'), 'the note only as its hash');

  // A node opens its run.
  const shipRun = status.graph.nodes.find((n) => n.id === 'ship')!.attempts[0]!.runId!;
  await page.click('#graph-svg g[data-node="ship"]');
  await page.waitForSelector(`#detail h2:text("Run ${shipRun}")`);
  assert.equal(await page.isHidden('#tab-graphs'), true, 'the runs tab is shown');
});

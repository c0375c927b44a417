/**
 * `brig spawn --agent NAME [--model ALIAS] --task TEXT`: the flags are checked before anything
 * runs (an agent takes no script and no argv, needs a task; --model only with an agent; an
 * unknown or broken spec name is refused with the nearest one, exit 2), and with no model
 * configured the supervisor refuses it `model_unavailable` (exit 7) before any run, lease or
 * container exists — in-process and over the daemon alike.
 */
import { test } from 'node:test';
import assert from 'node:assert/strict';
import fs from 'node:fs';
import os from 'node:os';
import path from 'node:path';
import { loadConfig } from '../../../src/config/index.js';
import { startDaemon } from '../../../src/daemon/index.js';
import { requireEngine } from '../../helpers/engine.js';
import { runCli } from '../../helpers/cli.js';
import { leftovers } from '../runs/fixture.js';

function tmpHome(t: { after: (fn: () => void) => void }): string {
  const h = fs.mkdtempSync(path.join(os.tmpdir(), 'brig-agent-flags-'));
  t.after(() => fs.rmSync(h, { recursive: true, force: true }));
  return h;
}

/** Nothing was made for this home: no run record, no lease, no container or volume. */
async function nothingMade(home: string): Promise<void> {
  const runs = JSON.parse((await runCli(['list', '--json'], { home })).out) as { runs: unknown[] };
  assert.deepEqual(runs.runs, [], 'no run record');
  const leases = JSON.parse((await runCli(['lease', 'list', '--json'], { home })).out) as { leases: unknown[] };
  assert.deepEqual(leases.leases, [], 'no lease');
  assert.deepEqual(await leftovers(home, { released: true }), [], 'no container or volume');
}

test('brig spawn --agent: usage errors (exit 2) before any run — with --script or `-- ARGV`, without --task or NAME, --model alone', async (t) => {
  const home = tmpHome(t);
  fs.writeFileSync(path.join(home, 'job.mjs'), 'export default async () => 1;\n');
  const cases: [string[], RegExp][] = [
    [['--agent', 'general', '--task', 'x', '--script', path.join(home, 'job.mjs')], /give either --agent NAME or --script FILE, not both/],
    [['--agent', 'general', '--task', 'x', '--', 'sh', '-c', 'true'], /an agent child runs its spec, not a command/],
    [['--agent', 'general', '--task', 'x', 'sh'], /an agent child runs its spec, not a command/],
    [['--agent', 'general'], /an agent child needs --task/],
    [['--agent', 'general', '--task', '  '], /an agent child needs --task/],
    [['--agent'], /--agent needs a value/],
    [['--agent', '--task', 'x'], /--agent needs a NAME/],
    [['--model', 'fast', '--', 'true'], /--model is for an agent child/],
    [['--agent', 'general', '--task', 'x', '--model', '--json'], /--model needs an ALIAS/],
  ];
  for (const [argv, why] of cases) {
    const r = await runCli(['spawn', ...argv], { home });
    assert.equal(r.code, 2, `${argv.join(' ')}: ${r.err}`);
    assert.match(r.err, /\[invalid_input\]/, argv.join(' '));
    assert.match(r.err, why, argv.join(' '));
  }
  const j = await runCli(['spawn', '--agent', 'general', '--json'], { home });
  assert.equal(JSON.parse(j.out).error.code, 'invalid_input');
  assert.ok(!fs.existsSync(path.join(home, 'runs')), 'no run directory');
});

test('brig spawn --agent NAME: an unknown name is refused with the nearest (exit 2); a broken spec with its error', async (t) => {
  const home = tmpHome(t);
  const r = await runCli(['spawn', '--agent', 'genral', '--task', 'x'], { home });
  assert.equal(r.code, 2, r.err);
  assert.match(r.err, /no agent spec "genral" \[invalid_input\]/);
  assert.match(r.err, /Did you mean "general"\?/);
  fs.mkdirSync(path.join(home, 'agents'));
  fs.writeFileSync(path.join(home, 'agents', 'mine.md'), '---\nname: mine\ndescription: mine\nmaxStep: 3\n---\nDo it.\n');
  const broken = await runCli(['spawn', '--agent', 'mine', '--task', 'x', '--json'], { home });
  assert.equal(broken.code, 2);
  const e = JSON.parse(broken.out).error as { code: string; message: string; hint: string };
  assert.equal(e.code, 'invalid_input');
  assert.match(e.message, /mine\.md:4: unknown key "maxStep"/);
  assert.match(e.hint, /maxSteps/);
  // Refused by the supervisor's pre-check before any run exists (the in-process one may make runs/ itself).
  const runs = path.join(home, 'runs');
  assert.deepEqual(fs.existsSync(runs) ? fs.readdirSync(runs) : [], [], 'no run directory');
});

test('brig spawn --agent general with no model configured: model_unavailable (exit 7) before any run, lease or container — in-process and over the daemon', async (t) => {
  if (!(await requireEngine(t))) return;
  const home = tmpHome(t);
  // runCli's environment is BRIG_HOME alone: no BRIG_MODEL_*, and the home has no config.yaml.
  const local = await runCli(['spawn', '--agent', 'general', '--task', 'x'], { home });
  assert.equal(local.code, 7, local.err);
  assert.match(local.err, /\[model_unavailable\]/);
  await nothingMade(home);

  const d = await startDaemon(loadConfig({ BRIG_HOME: home }), { tickMs: 200 });
  try {
    const r = await runCli(['spawn', '--agent', 'general', '--model', 'fast', '--task', 'x', '--json'], { home });
    assert.equal(r.code, 7, r.err);
    assert.equal(JSON.parse(r.out).error.code, 'model_unavailable');
    await nothingMade(home);
  } finally {
    await d.shutdown();
  }
});

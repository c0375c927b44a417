import { test } from 'node:test';
import assert from 'node:assert/strict';
import fs from 'node:fs';
import os from 'node:os';
import path from 'node:path';
import { PassThrough } from 'node:stream';
import { main } from '../../../src/cli/cli.js';
import { loadConfig } from '../../../src/config/index.js';
import { startDaemon } from '../../../src/daemon/index.js';
import { requireEngine } from '../../helpers/engine.js';
import { runCli } from '../../helpers/cli.js';
import { leftovers } from '../runs/fixture.js';

/** A synchronous `brig spawn` on a terminal (isTTY): the run id at once, a live line, then the end. */

const SCRIPT = `export default async function (brig) {
  await brig.progress('warming up');
  await new Promise((r) => setTimeout(r, 1500));
  await brig.progress('halfway there');
  await new Promise((r) => setTimeout(r, 1500));
  return { ok: true };
}`;

function tmpHome(t: { after: (fn: () => void) => void }): string {
  const h = fs.mkdtempSync(path.join(os.tmpdir(), 'brig-live-'));
  t.after(() => fs.rmSync(h, { recursive: true, force: true }));
  return h;
}

/** The CLI in-process on a "terminal", with its output readable while it runs. */
function startCli(argv: string[], home: string): { out: () => string; done: Promise<number> } {
  const stdout = new PassThrough();
  const stderr = new PassThrough();
  let out = '';
  stdout.on('data', (d: Buffer) => (out += d.toString()));
  stderr.resume();
  return { out: () => out, done: main(argv, { stdout, stderr, env: { BRIG_HOME: home }, isTTY: true, columns: 120 }) };
}

async function until(what: string, pred: () => boolean, ms = 60_000): Promise<void> {
  const end = Date.now() + ms;
  while (!pred()) {
    if (Date.now() > end) throw new Error(`timed out waiting for ${what}`);
    await new Promise((r) => setTimeout(r, 50));
  }
}

function checkLive(out: string): string {
  const first = /^run (r-[0-9a-f]{16}) (queued|starting|running) \(Ctrl-C kills it\)\n/.exec(out);
  assert.ok(first, `the run id first:\n${JSON.stringify(out.slice(0, 200))}`);
  const id = first[1]!;
  assert.match(out, /\r\x1b\[Krunning {2}steps \d+\/\d+ {2}\d+(ms|\.\ds|s)/, 'a live line: status, steps, elapsed');
  assert.match(out, /\r\x1b\[Krunning {2}steps \d+\/\d+ {2}\S+ {2}“halfway there”/, "the child's progress line");
  assert.match(out, new RegExp(`\\r\\x1b\\[Krun ${id} completed \\(exit 0\\)\\n`), 'the line is cleared, then the final block');
  assert.match(out, /result: \{"ok":true\}/);
  return id;
}

for (const mode of ['in-process', 'daemon'] as const) {
  test(`brig spawn on a terminal (${mode}): run id at once, live status/steps/elapsed/progress line, then the final block`, async (t) => {
    if (!(await requireEngine(t))) return;
    const home = tmpHome(t);
    const file = path.join(home, 'job.mjs');
    fs.writeFileSync(file, SCRIPT);
    const d = mode === 'daemon' ? await startDaemon(loadConfig({ BRIG_HOME: home }), { tickMs: 200 }) : undefined;
    try {
      const r = await runCli(['spawn', '--script', file], { home, isTTY: true });
      assert.equal(r.code, 0, r.err + r.out);
      checkLive(r.out);
      // Not on a terminal, or with --json: one print at the end, as before.
      const plain = await runCli(['spawn', '--script', file], { home });
      assert.equal(plain.code, 0, plain.err);
      assert.match(plain.out, /^run r-[0-9a-f]{16} completed \(exit 0\)\n/);
      assert.doesNotMatch(plain.out, /\x1b|Ctrl-C/);
      const json = await runCli(['spawn', '--json', '--script', file], { home, isTTY: true });
      assert.equal(json.code, 0, json.err);
      assert.equal((JSON.parse(json.out) as { endReason: string }).endReason, 'completed');
    } finally {
      await d?.shutdown();
    }
    assert.deepEqual(await leftovers(home, { released: true }), []);
  });

  test(`Ctrl-C on a live brig spawn (${mode}) kills the run by the operator, collects it and exits 1`, async (t) => {
    if (!(await requireEngine(t))) return;
    const home = tmpHome(t);
    const d = mode === 'daemon' ? await startDaemon(loadConfig({ BRIG_HOME: home }), { tickMs: 200 }) : undefined;
    try {
      const cli = startCli(['spawn', '--', 'sh', '-c', 'echo so-far > out/p.txt; sleep 60'], home);
      await until('the live line', () => /\r\x1b\[Krunning/.test(cli.out()));
      process.emit('SIGINT');
      const code = await cli.done;
      assert.equal(code, 1, cli.out());
      assert.match(cli.out(), /run r-[0-9a-f]{16} killed by operator/);
      assert.match(cli.out(), /output: 1 files/);
    } finally {
      await d?.shutdown();
    }
    assert.deepEqual(await leftovers(home, { released: true }), []);
  });
}

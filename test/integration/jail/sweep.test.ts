/**
 * INV-8 across every way a run can end: success, failure, timeout, and a supervisor process
 * killed mid-run. Afterwards the sweep leaves no labelled container or volume. Everything here
 * is scoped by this process's own owner and root run id, so concurrent tests are never touched.
 */
import { test, after } from 'node:test';
import assert from 'node:assert/strict';
import { spawn } from 'node:child_process';
import path from 'node:path';
import { requireEngine } from '../../helpers/engine.js';
import { LABELS, runJailOnce } from '../../../src/jail/index.js';
import { driver, ROOT, runId, spec, sweepOwn } from './helpers.js';

after(sweepOwn);

/** Every container and volume carrying this test process's root run id, whoever the owner. */
async function mine(): Promise<string[]> {
  const filters = { label: [`${LABELS.rootRunId}=${ROOT}`] };
  const [cs, vs] = await Promise.all([driver.docker.listContainers({ all: true, filters }), driver.docker.listVolumes({ filters })]);
  return [...cs.map((c) => `container ${c.Names[0]} ${c.State}`), ...(vs.Volumes ?? []).map((v) => `volume ${v.Name}`)];
}

// req: end:released
test('[INV-8] after runs that succeed, fail or time out, and after a killed supervisor, the sweep leaves no labelled container or volume', async (t) => {
  if (!(await requireEngine(t))) return;

  const ok = await runJailOnce(driver, spec('ok', ['true']), { timeoutMs: 60_000 });
  assert.equal(ok.endReason, 'completed');
  const failed = await runJailOnce(driver, spec('fail', ['sh', '-c', 'exit 3']), { timeoutMs: 60_000 });
  assert.deepEqual([failed.endReason, failed.exitCode], ['failed', 3]);
  const slow = await runJailOnce(driver, spec('slow', ['sleep', '60']), { timeoutMs: 300 });
  assert.equal(slow.endReason, 'watchdog_timeout');
  assert.deepEqual(await mine(), [], 'each ended run removed its own container and volume');

  // A supervisor SIGKILLed while its child runs: nothing of its own can clean up.
  const orphan = runId('orphan');
  const fixture = path.resolve(import.meta.dirname, '../../fixtures/jail/orphan-maker.ts');
  const child = spawn(process.execPath, ['--import', 'tsx', fixture, driver.owner, orphan, ROOT], { stdio: ['ignore', 'pipe', 'pipe'] });
  let out = '';
  let errText = '';
  child.stderr.on('data', (c: Buffer) => (errText += c.toString()));
  const started = await new Promise<boolean>((resolve) => {
    child.stdout.on('data', (c: Buffer) => {
      out += c.toString();
      if (out.includes('started ')) resolve(true);
    });
    child.on('exit', () => resolve(false));
  });
  assert.ok(started, `the orphan maker did not start its jail: ${errText}`);
  const exited = new Promise((r) => child.on('exit', r));
  child.kill('SIGKILL');
  await exited;
  const left = await mine();
  assert.ok(left.some((l) => l.startsWith('container ') && l.endsWith(' running')), `the killed supervisor left its jail running: ${left}`);
  assert.ok(left.some((l) => l.startsWith('volume ')), `and its workspace volume: ${left}`);

  // The next supervisor's sweep: no run of this owner is live any more.
  const swept = await driver.sweep(() => false);
  assert.deepEqual(swept, { containers: 1, volumes: 1, disks: 1 });
  assert.deepEqual(await mine(), [], 'after the sweep nothing labelled remains');
});

/**
 * [INV-2] The CIS Docker Benchmark's section 5, run on every kind of jail brig makes — a cold
 * one, one with an artifact (its staged bind), a warm-pool slot and the run it serves — as the
 * engine reports it: 0 failed (each check not applicable says why). The control: a container
 * made with the engine's defaults and a bind of /etc fails the checker.
 */
import { test, after } from 'node:test';
import assert from 'node:assert/strict';
import fs from 'node:fs';
import os from 'node:os';
import path from 'node:path';
import { cisSection5, identityOf, WarmPool, type CisInspect, type Jail } from '../../../src/jail/index.js';
import { requireEngine } from '../../helpers/engine.js';
import { driver, ROOT, spec, sweepOwn } from './helpers.js';

after(sweepOwn);

async function inspectOf(runIdOrKey: string): Promise<CisInspect> {
  const c = (await driver.docker.listContainers({ all: true, filters: { name: [runIdOrKey] } }))[0]!;
  return (await driver.docker.getContainer(c.Id).inspect()) as unknown as CisInspect;
}

function failures(i: CisInspect): string[] {
  return cisSection5(i).filter((r) => r.result === 'fail').map((r) => `${r.id} ${r.title}: ${r.detail}`);
}

// req: jail:verified jail:no-host-paths
test('[INV-2] CIS Docker §5 on every kind of jail: cold, with a staged artifact, a warm slot and its run — 0 failed', async (t) => {
  if (!(await requireEngine(t))) return;
  const dir = fs.mkdtempSync(path.join(os.tmpdir(), 'brig-cis-'));
  t.after(() => fs.rmSync(dir, { recursive: true, force: true }));
  const art = path.join(dir, 'data');
  fs.mkdirSync(art);
  fs.writeFileSync(path.join(art, 'f.txt'), 'x');
  const made: Jail[] = [];
  t.after(async () => {
    for (const j of made) await j.destroy();
  });
  const cold = spec('cis-cold', ['true']);
  made.push(await driver.create(cold));
  const withArt = spec('cis-art', ['true'], { artifacts: [{ name: 'data', hostPath: art, identity: (await identityOf(fs.realpathSync(art)))! }] });
  made.push(await driver.create(withArt));
  const brokers = fs.mkdtempSync(path.join(dir, 'b-'));
  const pool = new WarmPool({ driver, size: 1, brokersDir: brokers, prime: [cold.limits] });
  t.after(() => pool.close());
  await pool.start();
  await pool.filled();
  const slotKey = fs.readdirSync(brokers).find((n) => n.startsWith('pool-'))!;
  const slotInspect = await inspectOf(slotKey);
  const served = await pool.create(spec('cis-pooled', ['true'], { limits: cold.limits, brokerDir: fs.mkdtempSync(path.join(dir, 'r-')) }));
  made.push(served);
  const seen: [string, CisInspect][] = [
    ['cold', await inspectOf(cold.runId)],
    ['artifact', await inspectOf(withArt.runId)],
    ['warm slot', slotInspect],
    ['pooled run', await inspectOf(served.key ?? served.runId)],
  ];
  for (const [what, i] of seen) {
    assert.deepEqual(failures(i), [], `${what}: CIS §5 failures`);
    const rows = cisSection5(i);
    assert.ok(rows.filter((r) => r.result === 'pass').length >= 20, `${what}: most checks apply and pass`);
    for (const r of rows.filter((x) => x.result === 'n/a')) assert.ok(r.detail.length > 0, `${r.id} says why it does not apply`);
  }
  const artBind = seen[1]![1].Mounts!.find((m) => m.Destination === '/artifacts/data')!;
  assert.match(artBind.Source!, /^\/var\/lib\/brig\/stage\//, 'the artifact comes from its staged bind');
});

// req: jail:verified
test('[INV-2] the control: a container with the engine defaults and a bind of /etc fails CIS §5 (the checker can fail)', async (t) => {
  if (!(await requireEngine(t))) return;
  const image = await driver.ensureImage();
  const c = await driver.docker.createContainer({ name: `brig-cis-control-${process.pid}`, Image: image, Cmd: ['true'], Labels: { 'dev.brig.test-root': ROOT }, HostConfig: { Binds: ['/etc:/host-etc:ro'] } });
  try {
    const fails = failures((await c.inspect()) as unknown as CisInspect).map((f) => f.split(' ')[0]);
    for (const id of ['5.3', '5.5', '5.10', '5.12', '5.25', '5.28']) assert.ok(fails.includes(id), `${id} fails under the engine's defaults: ${fails.join(', ')}`);
  } finally {
    await c.remove({ force: true });
  }
});

/**
 * Fan-out: 50 trivial children (`true`) at concurrency 5.
 *
 * raw   `xargs -P5` of `docker run --rm --network none IMAGE true` (the same child image)
 * brig  one in-process supervisor (admission + queue, lease, broker socket, hardened verified
 *       jail, collect, ledger) with maxChildrenPerAgent 5 and all 50 submitted at once
 *
 * Both run in the same process run, raw first then brig then raw again (the two raw timings
 * bracket engine drift). Also prints the supervisor's RSS idle and with 5 children running.
 * Target: brig ≤ 1.2× raw. Printed, never asserted.
 */
import { execFile } from 'node:child_process';
import fs from 'node:fs';
import os from 'node:os';
import path from 'node:path';
import { promisify } from 'node:util';
import { loadConfig } from '../src/config/index.js';
import { compose } from '../src/daemon/index.js';
import { DockerJailDriver, ownerForHome } from '../src/jail/index.js';

import { BenchReport } from './report.js';

const report = new BenchReport('fanout');
const run = promisify(execFile);
const N = Number(process.argv[2] ?? 50);
const P = 5;
const mb = (b: number) => `${Math.round(b / 1024 / 1024)} MiB`;

async function raw(image: string): Promise<number> {
  const t0 = performance.now();
  await run('sh', ['-c', `seq ${N} | xargs -P${P} -I{} docker run --rm --network none ${image} true`], { maxBuffer: 1 << 20 });
  return performance.now() - t0;
}

async function main(): Promise<void> {
  const home = await fs.promises.mkdtemp(path.join(os.tmpdir(), 'brig-fanout-'));
  const c = await compose(loadConfig({ BRIG_HOME: home }), {
    settings: { maxChildrenPerAgent: P, maxConcurrent: P, maxQueued: N, maxRunsPerTree: N + 10 },
    tickMs: 1000,
  });
  const sup = c.supervisor;
  try {
    await sup.start();
    const image = await new DockerJailDriver({ owner: ownerForHome(home) }).ensureImage();
    // warm-up both paths once
    await run('docker', ['run', '--rm', '--network', 'none', image, 'true']);
    await sup.spawn({ task: 'warm-up', kind: 'command', argv: ['true'] });
    global.gc?.();
    const idleRss = process.memoryUsage().rss;

    const raw1 = await raw(image);
    const t0 = performance.now();
    const res = await Promise.all(Array.from({ length: N }, (_, i) => sup.spawn({ task: `fan ${i}`, kind: 'command', argv: ['true'] })));
    const brig = performance.now() - t0;
    const raw2 = await raw(image);
    const completed = res.filter((r) => r.ok && r.value.endReason === 'completed').length;

    const busy = await Promise.all(Array.from({ length: P }, (_, i) => sup.spawn({ task: `busy ${i}`, kind: 'command', argv: ['sleep', '5'], async: true })));
    for (let i = 0; i < 100 && (await sup.list({ status: ['running'] })).length < P; i++) await new Promise((r) => setTimeout(r, 100));
    const busyRss = process.memoryUsage().rss;
    for (const b of busy) if (b.ok) await sup.wait(b.value.id);

    const rawMs = (raw1 + raw2) / 2;
    report.samples('raw xargs docker run, per child', [raw1 / N, raw2 / N]);
    report.value('brig supervisor, per child', brig / N, { floor: 'raw xargs docker run, per child', goal: { ratioMax: 1.2 }, headline: true });
    report.value('children completed', completed, { unit: 'of N', goal: { min: N } });
    report.value('supervisor RSS idle', idleRss / 2 ** 20, { unit: 'MiB' });
    report.value(`supervisor RSS, ${P} children running`, busyRss / 2 ** 20, { unit: 'MiB' });
    console.log(`fan-out of ${N} trivial children at concurrency ${P} (image ${image})`);
    console.log(`  raw xargs -P${P} docker run --rm --network none : ${Math.round(raw1)} ms, ${Math.round(raw2)} ms (mean ${Math.round(rawMs)} ms, ${Math.round(rawMs / N)} ms/child)`);
    console.log(`  brig supervisor                               : ${Math.round(brig)} ms (${Math.round(brig / N)} ms/child), ${completed}/${N} completed`);
    console.log(`  ratio brig / raw                              : ${(brig / rawMs).toFixed(2)}x  (target ≤ 1.20x)`);
    console.log(`  supervisor RSS idle ${mb(idleRss)}, with ${P} running children ${mb(busyRss)}`);
  } finally {
    await c.close();
    await new DockerJailDriver({ owner: ownerForHome(home) }).sweep(() => false).catch(() => {});
    await fs.promises.rm(home, { recursive: true, force: true });
  }
}

await main();

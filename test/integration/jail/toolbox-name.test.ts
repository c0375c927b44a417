/**
 * `toolbox` as an image name (issue 24 item 2): the driver resolves it to the toolbox recipe's
 * current tag; when that is not built, a spawn's own `--image toolbox` fails `image_missing`
 * saying how to build it, and an agent spec's `image: toolbox` (imageFallback) runs in brig's
 * child image with the verified record saying why — never silently elsewhere.
 */
import { test, after } from 'node:test';
import assert from 'node:assert/strict';
import fs from 'node:fs';
import path from 'node:path';
import { loadConfig } from '../../../src/config/index.js';
import { compose } from '../../../src/daemon/index.js';
import { DockerJailDriver, TOOLBOX_NAME } from '../../../src/jail/index.js';
import { BrigError } from '../../../src/util/errors.js';
import { requireEngine } from '../../helpers/engine.js';
import { mmdebstrapTool } from '../../helpers/foreign-images.js';
import { startModelServer, toolCallTurn } from '../../helpers/model-server.js';
import { freshHome, leftovers } from '../runs/fixture.js';
import { ROOT, spec, sweepOwn } from './helpers.js';

after(sweepOwn);

/** A driver whose toolbox recipe names a tag the engine does not hold (a machine that never built it). */
const noToolbox = new DockerJailDriver({ owner: ROOT, toolboxTag: 'brig-toolbox:never-built-0000' });

// req: jail:verified
test('[INV-2] --image toolbox when the toolbox is not built: image_missing with how to build it, nothing made', async (t) => {
  if (!(await requireEngine(t))) return;
  await assert.rejects(noToolbox.create(spec('tb-missing', ['true'], { image: TOOLBOX_NAME })), (e: unknown) => {
    assert.ok(e instanceof BrigError, String(e));
    assert.equal(e.code, 'image_missing');
    assert.match(e.message, /toolbox image brig-toolbox:never-built-0000 is not built/);
    assert.match(e.hint ?? '', /brig image toolbox/);
    return true;
  });
});

// req: jail:verified
test('[INV-2] an agent spec\'s toolbox, not built: the jail runs brig\'s child image and its verified record says why', async (t) => {
  if (!(await requireEngine(t))) return;
  const jail = await noToolbox.create(spec('tb-fallback', ['sh', '-c', 'echo ok'], { image: TOOLBOX_NAME, imageFallback: true }));
  try {
    assert.match(String(jail.verified?.image), /^brig-child:/, 'brig\'s child image');
    assert.deepEqual(jail.verified?.imageFallback?.asked, 'toolbox');
    assert.match(jail.verified?.imageFallback?.note ?? '', /toolbox image \(brig-toolbox:never-built-0000\) is not built.*brig image toolbox/);
  } finally {
    await jail.destroy();
  }
});

// req: jail:verified
test('[INV-2] an agent spec naming `image: toolbox` runs its agent in the toolbox (Debian\'s python3 and git there)', async (t) => {
  if (!(await requireEngine(t))) return;
  const tools = mmdebstrapTool();
  if (!tools.ok) return void t.skip(tools.why);
  const home = await freshHome(t);
  const { tag } = await new DockerJailDriver({ owner: ROOT }).buildToolbox();
  fs.mkdirSync(path.join(home, 'agents'), { recursive: true });
  fs.writeFileSync(path.join(home, 'agents', 'coder.md'), '---\nname: coder\ndescription: a worker in the toolbox\nimage: toolbox\ntools: [shell, finish]\n---\nDo the task.\n');
  const m = await startModelServer({ script: [toolCallTurn('shell', { command: 'python3 --version; git --version' }), toolCallTurn('finish', { answer: 'checked' })] });
  t.after(() => m.close());
  const cfg = loadConfig({ BRIG_HOME: home, BRIG_MODEL_BASE_URL: m.baseUrl, BRIG_MODEL: 'scripted-stand-in', BRIG_MODEL_CONTEXT_WINDOW: '20000' });
  const c = await compose(cfg, { tickMs: 200, reconcile: true });
  await c.supervisor.start();
  try {
    const r = await c.supervisor.spawn({ task: 'Which python is there?', kind: 'agent', agent: 'coder' });
    assert.ok(r.ok, r.ok ? '' : r.error.message);
    assert.equal(r.value.endReason, 'completed', `${r.value.stderrTail} ${JSON.stringify(r.value.error)}`);
    assert.equal(r.value.jail?.image, tag, 'the toolbox recipe\'s tag');
    assert.equal(r.value.jail?.imageFallback, undefined);
    const printed = String((m.requests[1]!.body.messages as { role: string; content: unknown }[]).filter((x) => x.role === 'tool').at(-1)?.content ?? '');
    assert.match(printed, /Python 3\.11\.\d+[\s\S]*git version 2\.\d+/, printed);
  } finally {
    await c.close();
  }
  assert.deepEqual(await leftovers(home, { released: true }), []);
});

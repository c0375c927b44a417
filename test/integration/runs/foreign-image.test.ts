/**
 * Script and agent children in foreign images through the whole supervisor (issue 24 items 1
 * and 3): brig's runtime comes from the read-only runtime bind, talks to its broker, writes
 * out/, and an agent's Workspace section is the image's truth, gathered inside the jail. The
 * agent is driven by a scripted model server on host loopback (a stand-in, not a real model).
 */
import { test } from 'node:test';
import assert from 'node:assert/strict';
import { loadConfig } from '../../../src/config/index.js';
import { compose } from '../../../src/daemon/index.js';
import { requireEngine } from '../../helpers/engine.js';
import { busyboxImage, debianImage, mmdebstrapTool, muslImage, muslTools } from '../../helpers/foreign-images.js';
import { startModelServer, toolCallTurn } from '../../helpers/model-server.js';
import { freshHome, leftovers, supervisorAt } from './fixture.js';

const SCRIPT = `import { writeFileSync, existsSync } from 'node:fs';
export default async function (brig) {
  writeFileSync('/workspace/out/from-script.txt', 'written by a script child');
  await brig.progress('wrote it');
  return { glibc: existsSync('/lib/x86_64-linux-gnu'), musl: existsSync('/lib/ld-musl-x86_64.so.1'), task: brig.packet.task };
}`;

// req: jail:verified
test('[INV-2] a script child runs in a musl image with no glibc: brig\'s runtime, its broker and out/ all work', async (t) => {
  if (!(await requireEngine(t))) return;
  const tools = muslTools();
  if (!tools.ok) return void t.skip(tools.why);
  const image = await muslImage();
  const home = await freshHome(t);
  const c = await supervisorAt(home);
  try {
    const r = await c.supervisor.spawn({ task: 'write a file', script: SCRIPT, image, caps: ['exec'] });
    assert.ok(r.ok, r.ok ? '' : r.error.message);
    assert.equal(r.value.endReason, 'completed', `${r.value.stderrTail} ${JSON.stringify(r.value.error)}`);
    assert.deepEqual(r.value.result, { glibc: false, musl: true, task: 'write a file' });
    assert.ok(r.value.outputs.some((o) => o.path === 'from-script.txt'), JSON.stringify(r.value.outputs));
    assert.equal(r.value.jail?.image, image);
    assert.ok(r.value.jail?.foreignImage, 'the record names the foreign image\'s terms');
  } finally {
    await c.close();
  }
  assert.deepEqual(await leftovers(home, { released: true }), []);
});

/** The shell tool's attack on the runtime (PID 1): each of its /proc files opened, or not. */
const ATTACK_PID1 = 'echo "pid1 $(tr \'\\0\' \' \' < /proc/1/cmdline)"; for f in environ mem maps; do (exec 3</proc/1/$f) 2>/dev/null && echo "$f OPENED" || echo "$f DENIED"; done; ls /proc/1/fd >/dev/null 2>&1 && echo "fd OPENED" || echo "fd DENIED"';

// req: jail:verified jail:runtime-unreadable
test('[INV-2] an agent child runs in a Debian image; its Workspace section is the image\'s truth, taken inside the jail', async (t) => {
  if (!(await requireEngine(t))) return;
  const tools = mmdebstrapTool();
  if (!tools.ok) return void t.skip(tools.why);
  const image = await debianImage();
  const home = await freshHome(t);
  const m = await startModelServer({
    script: [
      toolCallTurn('shell', { command: `echo "$(id -u) $(bash -c 'echo $BASH_VERSION')" > out/agent.txt; cat out/agent.txt; ${ATTACK_PID1}` }),
      toolCallTurn('finish', { answer: 'wrote out/agent.txt' }),
    ],
  });
  t.after(() => m.close());
  const cfg = loadConfig({ BRIG_HOME: home, BRIG_MODEL_BASE_URL: m.baseUrl, BRIG_MODEL: 'scripted-stand-in', BRIG_MODEL_CONTEXT_WINDOW: '20000' });
  const c = await compose(cfg, { tickMs: 200, reconcile: true });
  await c.supervisor.start();
  try {
    const r = await c.supervisor.spawn({ task: 'Write out/agent.txt.', kind: 'agent', image });
    assert.ok(r.ok, r.ok ? '' : r.error.message);
    assert.equal(r.value.endReason, 'completed', `${r.value.stderrTail} ${JSON.stringify(r.value.error)}`);
    const system = JSON.stringify(m.requests[0]!.body);
    assert.match(system, /image OS: Debian GNU\/Linux 12 \(bookworm\)/);
    assert.match(system, /installed \(dpkg\): \d+: [^"]*\bbash\b/, 'dpkg\'s list, read inside the jail');
    assert.match(system, /language versions: [^"]*perl v5\.\d+/, 'the image\'s perl answered its version');
    assert.match(system, /tools on PATH \(\/usr\/local\/sbin:[^)]*\): [^"]*\bbash\b/, 'the image\'s own PATH');
    const tool = JSON.stringify(m.requests[1]!.body);
    assert.match(tool, /65534 5\.2/, 'the shell tool ran the image\'s bash as the jail user');
    // The runtime here is brig's node started through the bundle's loader: the loader is
    // execute-only, so the runtime is non-dumpable as in the child image (jail:runtime-unreadable).
    const printed = String((m.requests[1]!.body.messages as { role: string; content: unknown }[]).filter((x) => x.role === 'tool').at(-1)?.content ?? '');
    assert.match(printed, /^pid1 \/opt\/brig\/node\/lib\/ld-[^ ]+ --library-path \/opt\/brig\/node\/lib \/opt\/brig\/node\/bin\/node /m, 'PID 1 is the runtime, started through the bundle\'s loader');
    for (const f of ['environ', 'mem', 'maps', 'fd']) assert.match(printed, new RegExp(`^${f} DENIED$`, 'm'), `/proc/1/${f} is closed to the shell in a foreign image: ${printed}`);
    assert.ok(r.value.outputs.some((o) => o.path === 'agent.txt'));
  } finally {
    await c.close();
  }
  assert.deepEqual(await leftovers(home, { released: true }), []);
});

// req: jail:verified
test('[INV-2] a command child in a busybox-only image writes out/ (the issue\'s Permission denied, fixed)', async (t) => {
  if (!(await requireEngine(t))) return;
  const image = await busyboxImage();
  const home = await freshHome(t);
  const c = await supervisorAt(home);
  try {
    const r = await c.supervisor.spawn({ task: 'echo', kind: 'command', argv: ['sh', '-c', 'echo hi > out/x.txt'], image, caps: ['exec'] });
    assert.ok(r.ok, r.ok ? '' : r.error.message);
    assert.equal(r.value.endReason, 'completed', r.value.stderrTail);
    assert.ok(r.value.outputs.some((o) => o.path === 'x.txt'));
  } finally {
    await c.close();
  }
  assert.deepEqual(await leftovers(home, { released: true }), []);
});

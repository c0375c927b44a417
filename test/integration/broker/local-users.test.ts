/**
 * Other local users (INV-2: the run's broker socket directory is its own jail's alone): no
 * uid but root and the run's own jail can connect to a run's broker socket. The socket and its directory belong to the jail's user (65534) with modes
 * 0600 / 0700, under a 0700 runtime directory of root's: a process of uid 1234 — or a host
 * process of uid 65534 — gets EACCES, and uid 1234 still does with every parent directory
 * opened up; meanwhile the jailed child's own broker calls go on. Needs root (setpriv).
 */
import { test } from 'node:test';
import assert from 'node:assert/strict';
import { execFile } from 'node:child_process';
import fs from 'node:fs';
import path from 'node:path';
import { promisify } from 'node:util';
import { brigPaths } from '../../../src/config/index.js';
import { requireEngine } from '../../helpers/engine.js';
import { freshHome, leftovers, STEERABLE, supervisorAt, until } from '../runs/fixture.js';

const run = promisify(execFile);
const CONNECT = `const s = require('node:net').connect(process.argv[1]);
s.on('connect', () => { console.log('connected'); s.destroy(); });
s.on('error', (e) => console.log(e.code));`;

/** Connects to `socket` as `uid:uid` with no supplementary groups; the errno code, or `connected`. */
async function connectAs(uid: number, socket: string): Promise<string> {
  const { stdout } = await run('setpriv', [`--reuid=${uid}`, `--regid=${uid}`, '--clear-groups', process.execPath, '-e', CONNECT, socket], { cwd: '/', timeout: 20_000 });
  return stdout.trim();
}

test('[INV-2] another local uid cannot connect to a live run\'s broker socket (EACCES), while the run\'s own jail is served', async (t) => {
  if (!(await requireEngine(t))) return;
  if (process.getuid?.() !== 0) return void t.skip('needs root: setpriv to another uid');
  const home = await freshHome(t);
  const c = await supervisorAt(home);
  const opened: [string, number][] = [];
  try {
    const r = await c.supervisor.spawn({ task: 'step until steered', script: STEERABLE, async: true, timeout: 120_000 });
    assert.ok(r.ok, r.ok ? '' : r.error.message);
    const id = r.value.id;
    await until(async () => ((await c.supervisor.get(id))?.stepsExecuted ?? 0) > 0, 'the child makes broker calls');
    const dir = path.join(brigPaths(home).brokers, id);
    const socket = path.join(dir, 'broker.sock');
    assert.ok(!socket.startsWith(home), 'the socket is not under the home');

    const [s, d, root] = [fs.statSync(socket), fs.statSync(dir), fs.statSync(path.dirname(dir))];
    assert.deepEqual([s.mode & 0o777, s.uid, s.gid], [0o600, 65534, 65534], 'socket: 0600, the jail user\'s');
    assert.deepEqual([d.mode & 0o777, d.uid, d.gid], [0o700, 65534, 65534], 'run dir: 0700, the jail user\'s');
    assert.deepEqual([root.mode & 0o777, root.uid], [0o700, 0], 'brokers dir: 0700, root\'s');

    assert.equal(await connectAs(1234, socket), 'EACCES');
    assert.equal(await connectAs(65534, socket), 'EACCES', 'a host process of the jail\'s uid is outside the root-only parent');
    // Even with every parent traversable, the run's own directory and socket refuse uid 1234.
    for (let p = path.dirname(dir); p !== '/'; p = path.dirname(p)) {
      const mode = fs.statSync(p).mode & 0o7777;
      if ((mode & 0o001) === 0) {
        opened.push([p, mode]);
        fs.chmodSync(p, mode | 0o001);
      }
    }
    assert.equal(await connectAs(1234, socket), 'EACCES', 'the run dir (0700, uid 65534) is the wall');
    for (const [p, mode] of opened.splice(0).reverse()) fs.chmodSync(p, mode);

    const before = (await c.supervisor.get(id))!.stepsExecuted;
    await until(async () => (await c.supervisor.get(id))!.stepsExecuted > before + 2, 'the jail keeps calling its broker');
    assert.ok((await c.supervisor.steer(id, 'done', { by: 'operator' })).ok);
    const w = await c.supervisor.wait(id, { timeoutMs: 60_000 });
    assert.ok(w.ok, w.ok ? '' : w.error.message);
    assert.equal(w.value.endReason, 'completed', w.value.stderrTail);
    assert.deepEqual((w.value.result as { steered: string[] }).steered, ['done'], 'the child\'s own broker calls succeed throughout');
  } finally {
    for (const [p, mode] of opened.reverse()) fs.chmodSync(p, mode);
    await c.close();
  }
  assert.deepEqual(await leftovers(home, { released: true }), []);
});

/**
 * A supervisor that fails to compose does not stay for its image check: the check starts at
 * once (beside the policy and the stores, compose.ts startDrivers), so a bad policy found after
 * it began must end the check's engine connection too, and keep it from asking later, or the
 * process waits on an engine that is slow to answer — or, on a fresh machine, on a whole image
 * build (before the driver's close was wired in, this child was killed by the bound). Real
 * process, real unix socket: an "engine" that accepts and never answers.
 */
import { test } from 'node:test';
import assert from 'node:assert/strict';
import { spawn } from 'node:child_process';
import fs from 'node:fs';
import net from 'node:net';
import os from 'node:os';
import path from 'node:path';

const COMPOSE = new URL('../../../src/daemon/compose.ts', import.meta.url).pathname;
const CONFIG = new URL('../../../src/config/index.ts', import.meta.url).pathname;

test('a home whose policy is broken fails to compose with invalid_policy, and the process exits on its own while the engine has not answered the image check', async (t) => {
  const dir = await fs.promises.mkdtemp(path.join(os.tmpdir(), 'brig-composefail-'));
  t.after(() => fs.promises.rm(dir, { recursive: true, force: true }));
  const home = path.join(dir, 'home');
  fs.mkdirSync(home, { mode: 0o700 });
  fs.writeFileSync(path.join(home, 'policy.yaml'), 'profiles: [unclosed\n');
  // The stalled engine: every connection accepted, held, never answered.
  const held: net.Socket[] = [];
  const sock = path.join(dir, 'engine.sock');
  const engine = net.createServer((c) => {
    held.push(c);
    c.on('error', () => {});
  });
  await new Promise<void>((r) => engine.listen(sock, r));
  t.after(() => {
    for (const c of held) c.destroy();
    engine.close();
  });
  const code = `import { compose } from ${JSON.stringify(COMPOSE)};
    import { loadConfig } from ${JSON.stringify(CONFIG)};
    try {
      await compose(loadConfig({ BRIG_HOME: ${JSON.stringify(home)}, DOCKER_HOST: ${JSON.stringify(`unix://${sock}`)} }), { reconcile: true });
      console.log(JSON.stringify({ composed: true }));
    } catch (e) {
      console.log(JSON.stringify({ code: e.code }));
    }`;
  const child = spawn(process.execPath, ['--import', 'tsx', '--input-type=module', '-e', code], { stdio: ['ignore', 'pipe', 'pipe'] });
  let out = '';
  let err = '';
  child.stdout.on('data', (d) => (out += String(d)));
  child.stderr.on('data', (d) => (err += String(d)));
  // Generous: the bound is only there so a process held by the engine fails the test instead of hanging it.
  const killer = setTimeout(() => child.kill('SIGKILL'), 60_000);
  const [exitCode, signal] = await new Promise<[number | null, string | null]>((r) => child.on('exit', (c, s) => r([c, s])));
  clearTimeout(killer);
  assert.equal(signal, null, `it exited on its own, not killed by the bound: ${err}`);
  assert.equal(exitCode, 0, err);
  assert.deepEqual(JSON.parse(out.trim().split('\n').pop()!), { code: 'invalid_policy' });
});

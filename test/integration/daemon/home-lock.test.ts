/**
 * One supervisor per brig home: a second process's supervisor is refused with a code and a
 * hint (it would otherwise reattach or ghost-sweep the first one's runs, INV-8); a lock left by
 * a dead process is taken over; a released lock is gone.
 */
import { test } from 'node:test';
import assert from 'node:assert/strict';
import { spawn } from 'node:child_process';
import fs from 'node:fs';
import os from 'node:os';
import path from 'node:path';
import { lockHome } from '../../../src/daemon/home-lock.js';
import { isBrigError } from '../../../src/util/errors.js';

const ROOT = path.resolve(import.meta.dirname, '../../..');

test('[INV-8] a second process cannot run a supervisor on the same home; a dead owner\'s lock is taken over', async (t) => {
  const home = fs.mkdtempSync(path.join(os.tmpdir(), 'brig-lock-'));
  t.after(() => fs.rmSync(home, { recursive: true, force: true }));
  // Another process takes the lock and holds it until told to stop.
  const holder = spawn(process.execPath, [...process.execArgv, '-e', `
    import(${JSON.stringify(path.join(ROOT, 'src/daemon/home-lock.ts'))}).then(async (m) => {
      await m.lockHome(${JSON.stringify(home)});
      process.stdout.write('held\\n');
      process.stdin.on('data', () => process.exit(0));
    });`], { stdio: ['pipe', 'pipe', 'inherit'] });
  await new Promise<void>((resolve, reject) => {
    holder.stdout!.once('data', () => resolve());
    holder.once('exit', (c) => reject(new Error(`holder exited ${c}`)));
  });
  const refused = await lockHome(home).catch((e: unknown) => e);
  assert.ok(isBrigError(refused, 'supervisor_running'), String(refused));
  assert.equal((refused as { data: Record<string, unknown> }).data.pid, holder.pid);
  assert.match((refused as { hint: string }).hint, /brig serve/);

  // The holder dies without releasing: its lock no longer binds.
  holder.kill('SIGKILL');
  await new Promise((r) => holder.once('exit', r));
  const release = await lockHome(home);
  assert.match(fs.readFileSync(path.join(home, 'supervisor.lock'), 'utf8'), new RegExp(`^${process.pid} `));
  await release();
  assert.equal(fs.existsSync(path.join(home, 'supervisor.lock')), false);
});

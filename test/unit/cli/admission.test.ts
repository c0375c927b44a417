import { test } from 'node:test';
import assert from 'node:assert/strict';
import { createHash } from 'node:crypto';
import fs from 'node:fs';
import os from 'node:os';
import path from 'node:path';
import { runCli } from '../../helpers/cli.js';
import { tempDir } from '../../helpers/temp-dir.js';

test('brig admission without a daemon: pause writes $BRIG_HOME/admission.json (what the next daemon starts in) and a ledger line; status reads it back, with no queue count; resume opens it', async () => {
  const home = tempDir('brig-adm-cli-');
  fs.chmodSync(home, 0o700);
  try {
    assert.match((await runCli(['admission', 'status'], { home })).out, /^admission open \(no daemon: the queue is not counted\)\n$/);
    const p = await runCli(['admission', 'pause', '--reason', 'disk swap', '--json'], { home });
    assert.equal(p.code, 0, p.err);
    const state = (JSON.parse(p.out) as { admission: { paused: boolean; queued: number | null; reasonHash: string } }).admission;
    assert.deepEqual([state.paused, state.queued, state.reasonHash], [true, null, createHash('sha256').update('disk swap').digest('hex')]);
    assert.equal((JSON.parse(fs.readFileSync(path.join(home, 'admission.json'), 'utf8')) as { paused: boolean }).paused, true);
    assert.match((await runCli(['admission', 'status'], { home })).out, /^admission paused since \S+ \(by \S+\) \(no daemon/);
    const ledger = fs.readdirSync(path.join(home, 'ledger')).map((f) => fs.readFileSync(path.join(home, 'ledger', f), 'utf8')).join('');
    assert.match(ledger, /"type":"admission\.paused"/);
    assert.doesNotMatch(ledger, /disk swap/);
    assert.equal((await runCli(['admission', 'resume'], { home })).code, 0);
    assert.match((await runCli(['admission', 'status'], { home })).out, /^admission open since /);
    const bad = await runCli(['admission', 'pause', 'now'], { home });
    assert.equal(bad.code, 2);
    assert.match(bad.err, /takes no arguments/);
  } finally {
    fs.rmSync(home, { recursive: true, force: true });
  }
});

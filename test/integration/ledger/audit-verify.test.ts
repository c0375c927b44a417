import { test } from 'node:test';
import assert from 'node:assert/strict';
import fs from 'node:fs';
import os from 'node:os';
import path from 'node:path';
import { brigPaths } from '../../../src/config/index.js';
import { FileLedger } from '../../../src/ledger/index.js';
import { brig } from '../../unit/lease/cli-io.js';

async function seeded(): Promise<{ home: string; seg: string }> {
  const home = await fs.promises.mkdtemp(path.join(os.tmpdir(), 'brig-audit-'));
  const l = new FileLedger({ dir: brigPaths(home).ledger });
  for (let i = 0; i < 5; i++) l.append({ type: 'broker.call', runId: `run_${i}`, method: 'progress', n: i });
  await l.close();
  return { home, seg: l.segment };
}

test('brig audit verify passes on an intact ledger', async () => {
  const { home } = await seeded();
  try {
    const r = await brig(home, 'audit', 'verify');
    assert.equal(r.code, 0);
    assert.match(r.out, /ledger ok: 6 line\(s\) in 1 segment/);
  } finally {
    await fs.promises.rm(home, { recursive: true, force: true });
  }
});

for (const [what, mutate, line] of [
  ['editing', (ls: string[]) => { ls[2] = ls[2]!.replace('"n":2', '"n":7'); }, 3],
  ['deleting', (ls: string[]) => { ls.splice(1, 1); }, 2],
] as const) {
  test(`[INV-7] ${what} one ledger line makes brig audit verify fail and name it`, async () => {
    const { home, seg } = await seeded();
    try {
      const ls = fs.readFileSync(seg, 'utf8').split('\n').filter(Boolean);
      mutate(ls);
      fs.writeFileSync(seg, ls.join('\n') + '\n');
      const r = await brig(home, 'audit', 'verify');
      assert.notEqual(r.code, 0);
      assert.match(r.err, new RegExp(`${path.basename(seg)}:${line}:`));
      assert.match(r.err, /ledger_corrupt/);
      const j = await brig(home, 'audit', 'verify', '--json');
      assert.equal(JSON.parse(j.out).error.data.line, line);
    } finally {
      await fs.promises.rm(home, { recursive: true, force: true });
    }
  });
}

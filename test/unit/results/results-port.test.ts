/**
 * The supervisor's results port as the daemon composes it: out/ files, the result value and
 * stdio become refs; retention's remove leaves no lookup pointer behind.
 */
import { test } from 'node:test';
import assert from 'node:assert/strict';
import fs from 'node:fs/promises';
import os from 'node:os';
import path from 'node:path';
import { resultsPort } from '../../../src/daemon/compose.js';
import { FsResultStore } from '../../../src/results/index.js';
import { isBrigError } from '../../../src/util/errors.js';

test('[INV-4] resultsPort: index makes refs of out/, the value and stdio; remove drops the run and every pointer', async (t) => {
  const home = await fs.mkdtemp(path.join(os.tmpdir(), 'brig-a5-port-'));
  t.after(() => fs.rm(home, { recursive: true, force: true }));
  const store = new FsResultStore({ dir: path.join(home, 'results') });
  const port = resultsPort(store);
  const out = port.outDir('r-root01', 'r-kid001');
  await fs.mkdir(out, { recursive: true });
  await fs.writeFile(path.join(out, 'rows.jsonl'), '{"a":1}\n');
  const n = await port.index('r-root01', 'r-kid001', out, { result: { ok: true }, stdout: 'hello\n', stderr: 'warn\n' });
  assert.equal(n, 4);
  const refs = await store.list('r-kid001');
  assert.deepEqual(refs.map((r) => [r.path, r.source]).sort(), [['out/rows.jsonl', 'out'], ['result.json', 'value'], ['stderr.txt', 'stderr'], ['stdout.txt', 'stdout']]);

  await port.remove('r-root01', 'r-kid001');
  await assert.rejects(fs.access(store.runDir('r-root01', 'r-kid001')));
  await assert.rejects(store.list('r-kid001'), (e: unknown) => isBrigError(e, 'run_not_found'), 'a swept run is not an empty listing');
  for (const r of refs) await assert.rejects(store.get(r.ref), (e: unknown) => isBrigError(e, 'ref_not_found'));
  assert.deepEqual(await fs.readdir(path.join(home, 'results', '.refs')), [], 'no ref pointer left');
  assert.deepEqual(await fs.readdir(path.join(home, 'results', '.runs')), [], 'no run pointer left');
});

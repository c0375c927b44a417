import { test } from 'node:test';
import assert from 'node:assert/strict';
import fs from 'node:fs';
import os from 'node:os';
import path from 'node:path';
import { brigPaths } from '../../../src/config/index.js';
import { FileLedger } from '../../../src/ledger/index.js';
import { brig } from '../../unit/lease/cli-io.js';

test('brig audit query runs a locked SELECT over every ledger segment and refuses anything else', async () => {
  const home = await fs.promises.mkdtemp(path.join(os.tmpdir(), 'brig-aq-'));
  try {
    const a = new FileLedger({ dir: brigPaths(home).ledger });
    a.append({ type: 'lease.issued', runId: 'r1', caps: ['llm'] });
    a.append({ type: 'broker.denied', runId: 'r1', code: 'capability_denied', method: 'spawn' });
    await a.close();
    const b = new FileLedger({ dir: brigPaths(home).ledger });
    b.append({ type: 'broker.denied', runId: 'r2', code: 'unauthenticated', count: 3 });
    await b.close();
    const ok = await brig(home, 'audit', 'query', "SELECT runId, code FROM ledger WHERE type = 'broker.denied' ORDER BY runId", '--json');
    assert.equal(ok.code, 0, ok.err);
    assert.deepEqual(JSON.parse(ok.out), { columns: ['runId', 'code'], rows: [['r1', 'capability_denied'], ['r2', 'unauthenticated']], truncated: false });
    const secret = path.join(home, 'secret.txt');
    fs.writeFileSync(secret, 'x');
    for (const sql of [`SELECT * FROM read_text('${secret}')`, `SELECT * FROM read_csv_auto('${secret}')`, "COPY ledger TO '/tmp/brig-x.csv'", 'INSTALL httpfs', 'SELECT 1; SELECT 2']) {
      const r = await brig(home, 'audit', 'query', sql);
      assert.equal(r.code, 3, `${sql}: ${r.err}`);
      assert.match(r.err, /query_refused/);
    }
    const ndjson = await brig(home, 'audit', 'query', `SELECT * FROM read_ndjson('${secret}')`);
    assert.equal(ndjson.code, 3);
    assert.match(ndjson.err, /may only read the ledger: query the view `ledger`/);
    assert.doesNotMatch(ndjson.err, /this ref/);
  } finally {
    await fs.promises.rm(home, { recursive: true, force: true });
  }
});

/**
 * [INV-3] The envelope a coordinator got is cast once and kept: asking again (RefService from
 * any face, `brig result`, `brig explain`) shows that envelope — a Level 2 summary is not
 * re-billed nor re-rolled. Fake OpenAI-compatible model on loopback (real HTTP).
 */
import { test } from 'node:test';
import assert from 'node:assert/strict';
import fs from 'node:fs/promises';
import http from 'node:http';
import type { AddressInfo } from 'node:net';
import os from 'node:os';
import path from 'node:path';
import { Readable } from 'node:stream';
import { OpenAICompatibleProvider } from '../../../src/models/index.js';
import { FsResultStore, loadEnvelope } from '../../../src/results/index.js';
import { RefService } from '../../../src/refs/index.js';
import { createRunRecord } from '../../../src/runs/record.js';
import type { RunRecord } from '../../../src/protocol/index.js';
import { Slicer } from '../../../src/slice/index.js';
import { runCli } from '../../helpers/cli.js';

async function fakeModel(t: import('node:test').TestContext) {
  let calls = 0;
  const server = http.createServer((req, res) => {
    req.resume();
    req.on('end', () => {
      calls++;
      const content = JSON.stringify({ summary: `Summary number ${calls}.`, conclusions: [], filePaths: [], actionableItems: [], errors: [], keyData: {} });
      res.writeHead(200, { 'content-type': 'application/json' });
      res.end(JSON.stringify({ model: 'fake-1', choices: [{ message: { role: 'assistant', content } }] }));
    });
  });
  await new Promise<void>((res) => server.listen(0, '127.0.0.1', res));
  t.after(() => new Promise<void>((res) => server.close(() => res())));
  const port = (server.address() as AddressInfo).port;
  return {
    baseUrl: `http://127.0.0.1:${port}/v1`,
    provider: new OpenAICompatibleProvider({ baseUrl: `http://127.0.0.1:${port}/v1`, apiKey: 'sk-test', model: 'fake-1', timeoutMs: 5000 }),
    calls: () => calls,
  };
}

const brig = (home: string, argv: string[], env: Record<string, string> = {}) => runCli(argv, { home, env });

test('[INV-3] a Level 2 envelope is cast once: the API/library, brig result and brig explain all show the one the coordinator got', async (t) => {
  const home = await fs.mkdtemp(path.join(os.tmpdir(), 'brig-a5-envkept-'));
  t.after(() => fs.rm(home, { recursive: true, force: true }));
  const model = await fakeModel(t);
  const store = new FsResultStore({ dir: path.join(home, 'results') });
  await store.writeStream('r-kept01', 'r-kept01', 'rows.jsonl', Readable.from([Buffer.from('{"a":1}\n{"a":2}\n')]));
  const record: RunRecord = {
    ...createRunRecord({
      id: 'r-kept01', parent: null, callerId: 'operator', agent: 'default', kind: 'script', label: 'big', task: 'big',
      requestHash: 'h', now: new Date('2026-01-01T00:00:00.000Z'), timeoutMs: 60_000, maxSteps: 10, async: false, expectedOutputs: [], resumeOf: null,
    }),
    status: 'ended', endReason: 'completed', startedAt: '2026-01-01T00:00:00.000Z', endedAt: '2026-01-01T00:00:01.000Z',
    result: 'a long answer line\n'.repeat(2000),
  };
  await fs.mkdir(path.join(home, 'runs', record.id), { recursive: true });
  await fs.writeFile(path.join(home, 'runs', record.id, 'run.json'), JSON.stringify(record));

  const refs = new RefService({ store, slicer: new Slicer(store), getRun: async (id) => (id === record.id ? record : undefined), model: model.provider });
  const first = await refs.result(record.id);
  assert.ok(first.ok, first.ok ? '' : first.error.message);
  assert.equal(first.value.condensed.level, 2);
  assert.match(first.value.envelope, /Summary: Summary number 1\./);
  assert.equal(model.calls(), 1);

  const again = await refs.result(record.id);
  assert.ok(again.ok);
  assert.equal(again.value.envelope, first.value.envelope, 'the same envelope, not a new summary');
  assert.equal(model.calls(), 1, 'the model is not asked again');
  assert.equal((await loadEnvelope(store, record.rootRunId, record.id))?.envelope, first.value.envelope);

  // The CLI, with the model configured, shows the kept envelope and does not call the model.
  const modelEnv = { BRIG_MODEL_BASE_URL: model.baseUrl, BRIG_MODEL_API_KEY: 'sk-test', BRIG_MODEL: 'fake-1' };
  const cli = await brig(home, ['result', record.id], modelEnv);
  assert.equal(cli.code, 0, cli.err);
  assert.equal(cli.out, first.value.envelope);
  assert.equal(model.calls(), 1);
  // An explicit --strategy is a fresh look: cast again, and not kept.
  const fresh = await brig(home, ['result', record.id, '--strategy', 'never', '--json'], modelEnv);
  assert.equal(fresh.code, 0, fresh.err);
  assert.equal(JSON.parse(fresh.out).level, 3);
  assert.equal((await loadEnvelope(store, record.rootRunId, record.id))?.envelope, first.value.envelope, 'a look does not replace the kept envelope');

  // explain measures savings against the kept (Level 2) envelope.
  const ex = JSON.parse((await brig(home, ['explain', record.id, '--json'])).out);
  assert.equal(ex.condensationLevel, 2);
  assert.deepEqual(ex.savings, first.value.savings);

  // A damaged file is "not cast yet", never a crash.
  await fs.writeFile(path.join(store.runDir(record.rootRunId, record.id), 'envelope.json'), '{not json');
  const recast = await refs.result(record.id);
  assert.ok(recast.ok);
  assert.equal(model.calls(), 2);
  assert.match(recast.value.envelope, /Summary number 2\./);
});

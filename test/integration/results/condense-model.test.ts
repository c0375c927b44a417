/**
 * Level 2 condensation against a fake OpenAI-compatible server on loopback (real HTTP), and
 * the fall back to Level 3 when its reply is malformed or it fails.
 */
import { test } from 'node:test';
import assert from 'node:assert/strict';
import http from 'node:http';
import type { AddressInfo } from 'node:net';
import { condense, renderEnvelope } from '../../../src/results/index.js';
import { OpenAICompatibleProvider } from '../../../src/models/index.js';

type Reply = { status: number; body: string };

async function fakeModel(t: import('node:test').TestContext, reply: (req: any) => Reply) {
  const seen: { auth?: string; body: any }[] = [];
  const server = http.createServer((req, res) => {
    let raw = '';
    req.on('data', (c) => (raw += c));
    req.on('end', () => {
      const body = JSON.parse(raw);
      seen.push({ auth: req.headers.authorization, body });
      const r = req.url === '/v1/chat/completions' ? reply(body) : { status: 404, body: '{}' };
      res.writeHead(r.status, { 'content-type': 'application/json' });
      res.end(r.body);
    });
  });
  await new Promise<void>((res) => server.listen(0, '127.0.0.1', res));
  t.after(() => new Promise<void>((res) => server.close(() => res())));
  const port = (server.address() as AddressInfo).port;
  const provider = new OpenAICompatibleProvider({ baseUrl: `http://127.0.0.1:${port}/v1`, apiKey: 'sk-test-KEY', model: 'fake-1', timeoutMs: 5000 });
  return { provider, seen };
}

const chat = (content: string): Reply => ({
  status: 200,
  body: JSON.stringify({ model: 'fake-1', choices: [{ message: { role: 'assistant', content } }], usage: { prompt_tokens: 100, completion_tokens: 20 } }),
});

const bigResult = () =>
  `Analysed 3 files.\nWrote out/report.csv and out/rows.jsonl\n${'detail line about the data\n'.repeat(2000)}ERROR: disk quota exceeded at step 7\n${'more lines\n'.repeat(500)}done`;

test('Level 2: a structured summary via real HTTP; dropped file paths are added back; the key is a bearer header', async (t) => {
  const { provider, seen } = await fakeModel(t, () =>
    chat(JSON.stringify({ summary: 'Three files analysed.', conclusions: ['all good'], filePaths: ['out/report.csv'], actionableItems: [], errors: [], keyData: { files: 3 } })),
  );
  const c = await condense(bigResult(), { model: provider, knownPaths: ['out/extra.parquet'] });
  assert.equal(c.level, 2);
  assert.equal(c.levelName, 'LLM summary');
  assert.ok(c.structured);
  assert.deepEqual(c.structured.filePaths.sort(), ['out/extra.parquet', 'out/report.csv', 'out/rows.jsonl']);
  assert.match(c.body, /ERROR: disk quota exceeded/, 'errorPreservation restores the error the model left out');
  assert.ok(c.condensedTokens <= 4000);
  assert.ok(c.ratio < 0.1);
  assert.equal(seen.length, 1);
  assert.equal(seen[0]!.auth, 'Bearer sk-test-KEY');
  assert.equal(seen[0]!.body.model, 'fake-1');
  assert.ok(!c.body.includes('sk-test-KEY'));
  const env = renderEnvelope({ label: 'analyse', status: 'completed', condensed: c, refs: [{ ref: 'ref_aaaaaaaaaaaaaaaaaaaaaaaaaa', bytes: 1234, kind: 'csv' }] });
  assert.match(env, /^\[Subagent Result: analyse\]\nStatus: Completed\nCondensation: Level 2 \(LLM summary\)\n\nSummary: Three files analysed\./);
});

test('a fenced JSON reply is accepted', async (t) => {
  const { provider } = await fakeModel(t, () => chat('```json\n{"summary":"ok","conclusions":[],"filePaths":[],"actionableItems":[],"errors":[],"keyData":{}}\n```'));
  const c = await condense(bigResult(), { model: provider });
  assert.equal(c.level, 2);
});

test('a malformed model reply falls back to Level 3', async (t) => {
  const { provider } = await fakeModel(t, () => chat('Sure! Here is a summary: it went fine.'));
  const c = await condense(bigResult(), { model: provider });
  assert.equal(c.level, 3);
  assert.equal(c.fallback, 'model reply was not the expected structure');
  assert.match(c.body, /omitted/);
  assert.ok(c.body.length <= 4000 * 4);
});

test('a wrong shape (summary missing) and an HTTP 500 both fall back to Level 3', async (t) => {
  const a = await fakeModel(t, () => chat(JSON.stringify({ conclusions: 'not a list' })));
  assert.equal((await condense(bigResult(), { model: a.provider })).level, 3);
  const b = await fakeModel(t, () => ({ status: 500, body: '{"error":"boom"}' }));
  const c = await condense(bigResult(), { model: b.provider });
  assert.equal(c.level, 3);
  assert.equal(c.fallback, 'model call failed');
});

test('strategy always asks the model even when the result fits; never does not', async (t) => {
  const { provider, seen } = await fakeModel(t, () => chat(JSON.stringify({ summary: 'short' })));
  const always = await condense('small result', { model: provider, strategy: 'always' });
  assert.equal(always.level, 2);
  const never = await condense(bigResult(), { model: provider, strategy: 'never' });
  assert.equal(never.level, 3);
  assert.equal(seen.length, 1);
});

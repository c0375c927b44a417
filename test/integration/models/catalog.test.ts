/**
 * The catalog end to end: config.yaml and the quick path resolved to clients that talk to the
 * scripted model server over real HTTP — the provider's settings applied (key header from
 * apiKeyEnv, retries), cost from the alias's price — and Level 2 condensation through
 * condensationModel on either wire format.
 */
import { test } from 'node:test';
import assert from 'node:assert/strict';
import fs from 'node:fs';
import os from 'node:os';
import path from 'node:path';
import { loadConfig } from '../../../src/config/index.js';
import { condensationModel, costOf, loadModelCatalog } from '../../../src/models/index.js';
import { condense } from '../../../src/results/index.js';
import { startModelServer, statusTurn, textTurn, type ModelServer } from '../../helpers/model-server.js';

async function fixture(t: import('node:test').TestContext, script: Parameters<typeof startModelServer>[0]['script']) {
  const m = await startModelServer({ script });
  const home = fs.mkdtempSync(path.join(os.tmpdir(), 'brig-cat-'));
  t.after(async () => {
    await m.close();
    fs.rmSync(home, { recursive: true, force: true });
  });
  return { m, home };
}

const yamlFor = (m: ModelServer) => `models:
  providers:
    claude:
      api: anthropic-messages
      baseUrl: ${m.origin}
      apiKeyEnv: TEST_ANTHROPIC_KEY
      maxRetries: 0
    local:
      api: openai-chat
      baseUrl: ${m.baseUrl}
  aliases:
    smart:
      provider: claude
      model: claude-test-1
      contextWindow: 200000
      maxOutputTokens: 8000
      price: { inputPerMTok: 3, outputPerMTok: 15, cacheReadPerMTok: 0.3, cacheWritePerMTok: 3.75 }
    cheap:
      provider: local
      model: qwen-test
      contextWindow: 32000
      maxOutputTokens: 2000
  default: smart
`;

test('catalog: config.yaml aliases talk over real HTTP with the provider settings; cost from the price', async (t) => {
  const { m, home } = await fixture(t, [
    textTurn('from claude', { usage: { input: 1_000_000, output: 100_000, cacheRead: 800_000, cacheWrite: 100_000 } }),
    textTurn('from qwen'),
    statusTurn(503),
  ]);
  fs.writeFileSync(path.join(home, 'config.yaml'), yamlFor(m));
  const cat = loadModelCatalog(loadConfig({ BRIG_HOME: home, TEST_ANTHROPIC_KEY: 'sk-ant-cat' }));
  assert.ok(cat.ok, cat.ok ? '' : cat.error.message);
  t.after(() => cat.value.close());
  const smart = cat.value.resolve();
  assert.ok(smart.ok);
  assert.equal(smart.value.alias, 'smart');
  const c = await smart.value.client.complete({ system: 's', messages: [{ role: 'user', content: 'hi' }] });
  assert.equal(c.message.content, 'from claude');
  // 100k fresh at $3, 800k cached reads at $0.3, 100k cache writes at $3.75, 100k out at $15 (per MTok).
  assert.ok(Math.abs(costOf(c.usage, smart.value.price)! - (0.3 + 0.24 + 0.375 + 1.5)) < 1e-9);
  assert.equal(m.requests[0]!.headers['x-api-key'], 'sk-ant-cat');
  assert.equal(m.requests[0]!.body.max_tokens, 8000);
  const cheap = cat.value.resolve('cheap');
  assert.ok(cheap.ok);
  const q = await cheap.value.client.complete({ system: 's', messages: [{ role: 'user', content: 'hi' }], maxTokens: 99_999 });
  assert.equal(q.message.content, 'from qwen');
  assert.equal(costOf(q.usage, cheap.value.price), null, 'no price: null, never 0');
  assert.equal(m.requests[1]!.body.max_tokens, 2000, 'clamped to the alias\'s maxOutputTokens');
  assert.equal(m.requests[1]!.headers.authorization, undefined);
  // maxRetries: 0 on the claude provider: one 503 is final.
  await assert.rejects(smart.value.client.complete({ system: 's', messages: [{ role: 'user', content: 'again' }] }), /HTTP 503/);
  assert.equal(m.requests.length, 3);
});

for (const api of ['openai-chat', 'anthropic-messages'] as const) {
  test(`Level 2 condensation through condensationModel and the quick path (${api})`, async (t) => {
    const summary = JSON.stringify({ summary: 'Three files analysed.', conclusions: ['fine'], filePaths: ['out/report.csv'], actionableItems: [], errors: [], keyData: { files: 3 } });
    const { m, home } = await fixture(t, [textTurn(summary)]);
    const cfg = loadConfig({ BRIG_HOME: home, BRIG_MODEL_BASE_URL: m.baseUrl, BRIG_MODEL_API: api, BRIG_MODEL: 'summariser', BRIG_MODEL_API_KEY: 'sk-l2' });
    const provider = condensationModel(cfg);
    assert.ok(provider.ok);
    assert.ok(provider.value);
    const big = `Wrote out/report.csv\n${'detail line\n'.repeat(3000)}done`;
    const c = await condense(big, { model: provider.value });
    assert.equal(c.level, 2);
    assert.match(c.body, /^Summary: Three files analysed\./);
    const r = m.requests[0]!;
    assert.equal(r.body.stream, true);
    assert.equal(r.body.model, 'summariser');
    if (api === 'openai-chat') {
      assert.equal(r.body.messages[0].role, 'system');
      assert.deepEqual(r.body.response_format, { type: 'json_object' });
      assert.equal(r.body.temperature, 0);
    } else {
      assert.match(r.body.system, /condense a sub-agent result/);
      assert.equal(r.body.temperature, 0);
    }
  });
}

test('condensationModel: nothing configured is undefined (Level 3), a broken config.yaml is an error value', (t) => {
  const home = fs.mkdtempSync(path.join(os.tmpdir(), 'brig-cat-'));
  t.after(() => fs.rmSync(home, { recursive: true, force: true }));
  const none = condensationModel(loadConfig({ BRIG_HOME: home }));
  assert.ok(none.ok && none.value === undefined);
  fs.writeFileSync(path.join(home, 'config.yaml'), 'models:\n  aliases:\n    a: { provider: nope, model: m, contextWindow: 10, maxOutputTokens: 5 }\n');
  const bad = condensationModel(loadConfig({ BRIG_HOME: home }));
  assert.ok(!bad.ok && /config\.yaml:3: alias "a" names unknown provider "nope"/.test(bad.error.message));
});

/**
 * Model configuration: config.yaml's `models` section is strict (unknown keys refused with the
 * nearest known one and the line; references checked; a pasted key refused unechoed), the
 * BRIG_MODEL_* quick path, which env variables loadConfig reads, and the catalog built from both.
 */
import { test } from 'node:test';
import assert from 'node:assert/strict';
import fs from 'node:fs';
import os from 'node:os';
import path from 'node:path';
import util from 'node:util';
import { loadConfig, parseModelsConfig, Secret } from '../../../src/config/index.js';
import { loadModelCatalog } from '../../../src/models/index.js';

const GOOD = `# brig config
models:
  providers:
    anthropic:
      api: anthropic-messages
      baseUrl: https://api.anthropic.com
      apiKeyEnv: ANTHROPIC_API_KEY
      idleTimeoutMs: 30000
    local:
      api: openai-chat
      baseUrl: http://127.0.0.1:11434/v1
  aliases:
    sonnet:
      provider: anthropic
      model: claude-sonnet-4-5
      contextWindow: 200000
      maxOutputTokens: 16000
      price: { inputPerMTok: 3, outputPerMTok: 15, cacheReadPerMTok: 0.3, cacheWritePerMTok: 3.75 }
    qwen:
      provider: local
      model: qwen3:8b
      contextWindow: 32768
      maxOutputTokens: 4096
  default: sonnet
`;

const problemsOf = (text: string) => {
  const r = parseModelsConfig(text, '/h/config.yaml');
  assert.equal(r.ok, false, 'expected a refusal');
  if (r.ok) return { message: '', hint: '', problems: [] as string[] };
  assert.equal(r.error.code, 'invalid_input');
  return { message: r.error.message, hint: r.error.hint, problems: r.error.data.problems as string[] };
};

test('config.yaml: a good models section parses', () => {
  const r = parseModelsConfig(GOOD, 'config.yaml');
  assert.ok(r.ok);
  assert.equal(r.value.default, 'sonnet');
  assert.equal(r.value.providers.anthropic!.apiKeyEnv, 'ANTHROPIC_API_KEY');
  assert.deepEqual(Object.keys(r.value.aliases).sort(), ['qwen', 'sonnet']);
  assert.ok(parseModelsConfig('', 'config.yaml').ok, 'an empty file is an empty config');
});

test('config.yaml: an unknown key is refused with its line and the nearest known key', () => {
  const e = problemsOf(GOOD.replace('      idleTimeoutMs: 30000', '      idleTimoutMs: 30000'));
  assert.equal(e.message, '/h/config.yaml:8: unknown key "models.providers.anthropic.idleTimoutMs"');
  assert.match(e.hint, /Did you mean "models\.providers\.anthropic\.idleTimeoutMs"\?/);
  const top = problemsOf(`modles:\n  providers: {}\n`);
  assert.equal(top.message, '/h/config.yaml:1: unknown key "modles"');
  assert.match(top.hint, /Did you mean "models"/);
  const price = problemsOf(GOOD.replace('cacheReadPerMTok: 0.3', 'cacheReedPerMTok: 0.3'));
  assert.match(price.message, /:18: unknown key "models\.aliases\.sonnet\.price\.cacheReedPerMTok"/);
});

test('config.yaml: a key pasted into the file is refused and never echoed', () => {
  const key = 'sk-ant-api03-REALLOOKINGKEY0123456789';
  const a = problemsOf(GOOD.replace('      apiKeyEnv: ANTHROPIC_API_KEY', `      apiKey: ${key}`));
  assert.match(a.message, /:7: unknown key "models\.providers\.anthropic\.apiKey"/);
  assert.match(a.hint, /never written in config\.yaml.*apiKeyEnv/);
  const b = problemsOf(GOOD.replace('apiKeyEnv: ANTHROPIC_API_KEY', `apiKeyEnv: ${key}`));
  assert.match(b.message, /:7: "models\.providers\.anthropic\.apiKeyEnv": the NAME of an environment variable/);
  for (const x of [a, b]) assert.ok(!JSON.stringify(x).includes(key), 'the value is not echoed');
});

test('config.yaml: a bad api is refused with the nearest one; a bad URL and a bad number name their lines', () => {
  const e = problemsOf(GOOD.replace('api: openai-chat', 'api: openai-chats'));
  assert.equal(e.message, '/h/config.yaml:10: "models.providers.local.api" is "openai-chats", not one of openai-chat, anthropic-messages, local');
  assert.match(e.hint, /Did you mean "openai-chat"/);
  assert.match(problemsOf(GOOD.replace('https://api.anthropic.com', 'ftp://x')).message, /:6: "models\.providers\.anthropic\.baseUrl": an http\(s\) URL/);
  assert.match(problemsOf(GOOD.replace('https://api.anthropic.com', 'https://u:p@x.example')).message, /:6: .*without credentials/);
  assert.match(problemsOf(GOOD.replace('contextWindow: 32768', 'contextWindow: lots')).message, /:22: "models\.aliases\.qwen\.contextWindow"/);
  assert.match(problemsOf(GOOD.replace('      maxOutputTokens: 4096\n', '')).message, /:19: missing key "models\.aliases\.qwen\.maxOutputTokens"/);
});

test('config.yaml: an alias naming an unknown provider, a default naming an unknown alias, output over the window', () => {
  const p = problemsOf(GOOD.replace('provider: local', 'provider: locl'));
  assert.equal(p.message, '/h/config.yaml:20: alias "qwen" names unknown provider "locl"');
  assert.match(p.hint, /Did you mean "local"/);
  const d = problemsOf(GOOD.replace('default: sonnet', 'default: sonet'));
  assert.equal(d.message, '/h/config.yaml:24: "models.default" names unknown alias "sonet"');
  assert.match(problemsOf(GOOD.replace('maxOutputTokens: 4096', 'maxOutputTokens: 40000')).message, /:23: alias "qwen": maxOutputTokens is over contextWindow/);
});

test('config.yaml: a YAML syntax error and a duplicate key give their lines', () => {
  assert.match(problemsOf('models:\n  providers: {\n').message, /^\/h\/config\.yaml:\d+: YAML /);
  assert.match(problemsOf('models:\n  default: a\n  default: b\n').message, /^\/h\/config\.yaml:3: YAML DUPLICATE_KEY/);
});

const home = (t: import('node:test').TestContext, yaml?: string) => {
  const dir = fs.mkdtempSync(path.join(os.tmpdir(), 'brig-cfg-'));
  t.after(() => fs.rmSync(dir, { recursive: true, force: true }));
  if (yaml !== undefined) fs.writeFileSync(path.join(dir, 'config.yaml'), yaml);
  return dir;
};

test('loadConfig reads only the env variables config.yaml names as apiKeyEnv, as Secrets that do not print', (t) => {
  const h = home(t, GOOD);
  const cfg = loadConfig({ BRIG_HOME: h, ANTHROPIC_API_KEY: 'sk-ant-xyz', OPENAI_API_KEY: 'sk-other', UNRELATED: 'v' });
  assert.deepEqual(Object.keys(cfg.models.keys), ['ANTHROPIC_API_KEY']);
  assert.equal(cfg.models.keys.ANTHROPIC_API_KEY!.reveal(), 'sk-ant-xyz');
  const printed = [JSON.stringify(cfg), util.inspect(cfg, { depth: 10 }), String(cfg.models.keys.ANTHROPIC_API_KEY), `${new Secret('s3')}`];
  for (const p of printed) assert.ok(!p.includes('sk-ant-xyz') && !p.includes('s3cret'), p);
  assert.equal(cfg.models.file, path.join(h, 'config.yaml'));
  assert.equal(cfg.models.env, undefined);
});

test('the quick path: BRIG_MODEL_* defines the alias default (openai-chat, 128k window by default); the key is optional', (t) => {
  const h = home(t);
  const cfg = loadConfig({ BRIG_HOME: h, BRIG_MODEL_BASE_URL: 'http://127.0.0.1:8080/v1', BRIG_MODEL: 'llama' });
  assert.deepEqual(cfg.models.envProblems, []);
  assert.equal(cfg.models.env!.api, 'openai-chat');
  assert.equal(cfg.models.env!.contextWindow, 128_000);
  assert.equal(cfg.models.env!.apiKey, undefined);
  assert.deepEqual({ ...cfg.model }, { baseUrl: 'http://127.0.0.1:8080/v1', model: 'llama' }, 'the deprecated field stays, its key not enumerable');
  assert.equal(cfg.model!.apiKey, '');
  const cat = loadModelCatalog(cfg);
  assert.ok(cat.ok);
  assert.deepEqual(cat.value.aliases(), ['default']);
  assert.equal(cat.value.defaultAlias, 'default');
  const m = cat.value.resolve();
  assert.ok(m.ok);
  assert.equal(m.value.client.api, 'openai-chat');
  assert.equal(m.value.client.model, 'llama');
  assert.equal(m.value.price, null, 'no price given: cost is null, never 0');
  void cat.value.close();
});

test('the quick path: anthropic api, window, max output and prices; invalid values refuse the catalog', (t) => {
  const h = home(t);
  const env = {
    BRIG_HOME: h, BRIG_MODEL_BASE_URL: 'https://api.anthropic.com', BRIG_MODEL_API: 'anthropic-messages', BRIG_MODEL: 'claude-x',
    BRIG_MODEL_API_KEY: 'sk-ant-q', BRIG_MODEL_CONTEXT_WINDOW: '200000', BRIG_MODEL_MAX_OUTPUT: '8000', BRIG_MODEL_PRICE_IN: '3', BRIG_MODEL_PRICE_OUT: '15',
  };
  const cfg = loadConfig(env);
  assert.equal(cfg.model, undefined, 'the deprecated openai-only field is absent for anthropic');
  const cat = loadModelCatalog(cfg);
  assert.ok(cat.ok);
  const m = cat.value.resolve('default');
  assert.ok(m.ok);
  assert.equal(m.value.client.api, 'anthropic-messages');
  assert.equal(m.value.contextWindow, 200_000);
  assert.equal(m.value.maxOutputTokens, 8000);
  assert.deepEqual(m.value.price, { inputPerToken: 3e-6, outputPerToken: 15e-6 });
  void cat.value.close();
  const bad = loadConfig({ ...env, BRIG_MODEL_API: 'anthropic-message', BRIG_MODEL_CONTEXT_WINDOW: 'big', BRIG_MODEL_PRICE_OUT: '' });
  assert.equal(bad.models.envProblems.length, 3, bad.models.envProblems.join(' | '));
  assert.match(bad.models.envProblems[0]!, /BRIG_MODEL_API is "anthropic-message".*did you mean "anthropic-messages"/);
  const r = loadModelCatalog(bad);
  assert.ok(!r.ok && r.error.code === 'invalid_input' && /BRIG_MODEL_/.test(r.error.message));
  const stray = loadConfig({ BRIG_HOME: h, BRIG_MODEL_API: 'openai-chat' });
  assert.match(stray.models.envProblems[0]!, /BRIG_MODEL_API set without BRIG_MODEL_BASE_URL/);
});

test('the catalog: file aliases plus the quick path; default resolution; unknown alias with nearest; unset key variable', (t) => {
  const h = home(t, GOOD);
  const cfg = loadConfig({ BRIG_HOME: h, BRIG_MODEL_BASE_URL: 'http://127.0.0.1:1/v1' });
  const cat = loadModelCatalog(cfg);
  assert.ok(cat.ok);
  t.after(() => cat.value.close());
  assert.deepEqual(cat.value.aliases(), ['default', 'qwen', 'sonnet']);
  assert.equal(cat.value.defaultAlias, 'sonnet', 'models.default wins over the quick path');
  const unset = cat.value.resolve();
  assert.ok(!unset.ok);
  assert.equal(unset.error.code, 'model_unavailable');
  assert.match(unset.error.message, /ANTHROPIC_API_KEY, which is not set/);
  const typo = cat.value.resolve('qwn');
  assert.ok(!typo.ok && typo.error.code === 'invalid_input' && /Did you mean "qwen"/.test(typo.error.hint));
  const q = cat.value.resolve('qwen');
  assert.ok(q.ok);
  assert.equal(q.value.price, null);
  const again = cat.value.resolve('qwen');
  assert.ok(again.ok && again.value.client === q.value.client, 'one client per alias');
  const withKey = loadModelCatalog(loadConfig({ BRIG_HOME: h, ANTHROPIC_API_KEY: 'k' }));
  assert.ok(withKey.ok);
  const s = withKey.value.resolve();
  assert.ok(s.ok);
  assert.deepEqual(s.value.price, { inputPerToken: 3e-6, outputPerToken: 15e-6, cacheReadPerToken: 0.3e-6, cacheWritePerToken: 3.75e-6 });
  void withKey.value.close();
});

test('the catalog: an alias `default` in the file and the quick path both is refused; nothing configured resolves to model_unavailable', (t) => {
  const h = home(t, GOOD.replace('    qwen:', '    default:').replace('default: sonnet', 'default: default'));
  const r = loadModelCatalog(loadConfig({ BRIG_HOME: h, BRIG_MODEL_BASE_URL: 'http://127.0.0.1:1/v1' }));
  assert.ok(!r.ok && /defined both by BRIG_MODEL_BASE_URL and by/.test(r.error.message));
  const empty = loadModelCatalog(loadConfig({ BRIG_HOME: home(t) }));
  assert.ok(empty.ok);
  assert.equal(empty.value.defaultAlias, null);
  const none = empty.value.resolve();
  assert.ok(!none.ok && none.error.code === 'model_unavailable' && /no model is configured/.test(none.error.message));
  const broken = loadModelCatalog(loadConfig({ BRIG_HOME: home(t, 'models:\n  provders: {}\n') }));
  assert.ok(!broken.ok && /config\.yaml:2: unknown key "models\.provders"/.test(broken.error.message));
});

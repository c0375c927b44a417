import { test } from 'node:test';
import assert from 'node:assert/strict';
import fs from 'node:fs';
import path from 'node:path';
import { loadConfig } from '../../../src/config/index.js';
import { compose, type Composed } from '../../../src/daemon/index.js';
import { requireEngine } from '../../helpers/engine.js';
import { startModelServer, textTurn, toolCallTurn, type ModelServer, type RecordedRequest, type ScriptEntry } from '../../helpers/model-server.js';
import { freshHome, leftovers } from '../runs/fixture.js';

/**
 * An LLM agent child end to end, against a scripted model server on host loopback (not a
 * real model): the whole tool loop runs in the child's jail, its model calls go through the
 * broker to the supervisor, which streams from the server with the key, meters the tokens,
 * keeps the transcript. What the jail saw is what the model server received back as tool
 * results — so the proofs about the jail are read from those requests.
 */

const KEY = 'sk-brig-test-7f3a9c1e5b2d4f6a8c0e1b3d5f7a9c1e';

async function agentSupervisor(home: string, m: ModelServer, api: 'openai-chat' | 'anthropic-messages', extraEnv: Record<string, string> = {}): Promise<Composed> {
  const cfg = loadConfig({
    BRIG_HOME: home,
    BRIG_MODEL_BASE_URL: m.baseUrl,
    BRIG_MODEL: 'scripted-stand-in',
    BRIG_MODEL_API: api,
    BRIG_MODEL_API_KEY: KEY,
    BRIG_MODEL_CONTEXT_WINDOW: '32000',
    ...extraEnv,
  });
  const c = await compose(cfg, { tickMs: 200, reconcile: true });
  await c.supervisor.start();
  return c;
}

/** The text of every tool result the model server was sent (what the jail produced). */
function toolResults(reqs: readonly RecordedRequest[]): string {
  const last = reqs[reqs.length - 1]!.body as { messages: { role: string; content: unknown }[] };
  return last.messages.filter((x) => x.role === 'tool').map((x) => String(x.content)).join('\n');
}

const PROBE = [
  'id -u',
  "grep -E '^(CapEff|NoNewPrivs)' /proc/self/status",
  // The model server listens on the host's loopback: from the jail it must be unreachable.
  `node -e "require('http').get(process.argv[1],()=>console.log('NET-REACHED')).on('error',e=>console.log('NET-REFUSED',e.code))" "$MODEL_URL"`,
  'touch /etc/brig-probe 2>&1 || true',
  // The key must be nowhere the jail can look: its environment, any process's, any file.
  `(env; cat /proc/*/environ 2>/dev/null | tr '\\0' '\\n'; grep -rsl "$KEY_HINT" / --exclude-dir=proc --exclude-dir=sys 2>/dev/null) | grep -c "$KEY_HINT" || true`,
  "printf 'a\\nb\\nc\\n' > /workspace/out/data.txt && wc -l < /workspace/out/data.txt",
].join('; echo ---; ');

// req: jail:non-root jail:no-caps jail:no-new-privs jail:network-none jail:read-only-root secrets:keys-stay
test('[INV-6] [INV-2] an agent child runs its tool loop in its jail: shell is non-root, capless, offline; the key is nowhere inside; tokens metered; transcript kept', async (t) => {
  if (!(await requireEngine(t))) return;
  const home = await freshHome(t);
  let m!: ModelServer;
  const script: ScriptEntry[] = [
    () => toolCallTurn('shell', { command: PROBE.replace('$MODEL_URL', `${m.origin}/v1/models`).replace(/\$KEY_HINT/g, KEY.slice(3, 19)) }, { usage: { input: 900, output: 60 } }),
    toolCallTurn('read_file', { path: '/workspace/out/data.txt' }, { usage: { input: 1100, output: 30 }, argPieces: 4 }),
    toolCallTurn('finish', { answer: 'data.txt has 3 lines', files: ['/workspace/out/data.txt'] }, { usage: { input: 1200, output: 25 } }),
  ];
  m = await startModelServer({ script, expectKey: KEY });
  t.after(() => m.close());
  const c = await agentSupervisor(home, m, 'openai-chat');
  try {
    const r = await c.supervisor.spawn({ task: 'Count the lines of a small file you make.', kind: 'agent', agent: 'general', objective: 'report the line count' });
    assert.ok(r.ok, JSON.stringify(!r.ok && r.error));
    const run = r.value;
    assert.equal(run.endReason, 'completed', `${run.error?.message} ${run.stderrTail}`);
    assert.deepEqual(run.result, { answer: 'data.txt has 3 lines', files: ['/workspace/out/data.txt'] });
    assert.equal(run.tokens, 900 + 60 + 1100 + 30 + 1200 + 25, 'the sum of provider-reported input + output');
    assert.equal(run.costUsd, null, 'the stand-in has no price: cost unknown, never 0');
    assert.ok(run.stepsExecuted >= 2);
    assert.deepEqual(m.problems, [], 'every tool result paired with its call');
    assert.equal(m.requests.length, 3);
    for (const q of m.requests) assert.equal(q.headers.authorization, `Bearer ${KEY}`, 'the supervisor, not the jail, holds the key');
    const first = m.requests[0]!.body as { messages: { role: string; content: string }[]; tools: { function: { name: string } }[] };
    assert.equal(first.messages[0]!.role, 'system');
    assert.match(first.messages[0]!.content, /Count the lines of a small file/);
    const offered = first.tools.map((x) => x.function.name);
    assert.ok(offered.includes('shell') && offered.includes('finish'));
    assert.equal(m.requests[1]!.body.messages[0].content, first.messages[0]!.content, 'the system prompt is byte-stable');
    const seen = toolResults(m.requests.slice(1));
    assert.match(seen, /65534/, 'the shell runs as the jail user, not root');
    assert.match(seen, /CapEff:\t0000000000000000/, 'no capabilities');
    assert.match(seen, /NoNewPrivs:\t1/);
    assert.match(seen, /NET-REFUSED/, 'the model server on the host loopback is unreachable from the jail');
    assert.doesNotMatch(seen, /NET-REACHED/);
    assert.match(seen, /Read-only file system/, 'the root is read-only');
    assert.match(seen, /---\n0\n---/, 'the key appears nowhere in the jail (count 0)');
    assert.doesNotMatch(seen, new RegExp(KEY.slice(3, 19)), 'no key bytes came back out of the jail');
    // Outputs, transcript and envelope.
    assert.deepEqual(run.outputs.map((o) => o.path), ['data.txt']);
    const refs = await c.refs.list(run.id);
    assert.ok(refs.ok);
    const transcript = refs.value.find((x) => x.path === 'transcript.jsonl');
    assert.ok(transcript, 'the transcript is a ResultRef');
    assert.equal(transcript.source, 'transcript');
    const lines = await c.refs.grep(transcript.ref, '"t":"reply"', { maxMatches: 10 });
    assert.ok(lines.ok);
    assert.equal(lines.value.returned, 3, 'three model replies in the transcript');
    const env = await c.refs.result(run.id);
    assert.ok(env.ok);
    assert.match(env.value.envelope, /data\.txt has 3 lines/);
    assert.match(env.value.envelope, /Tokens: 3315/);
    assert.match(env.value.envelope, /Cost: unknown/);
    // The ledger stays content-free and never holds the key.
    const ledger = fs.readdirSync(path.join(home, 'ledger')).map((f) => fs.readFileSync(path.join(home, 'ledger', f), 'utf8')).join('\n');
    assert.doesNotMatch(ledger, /Count the lines|data\.txt has 3 lines/);
    assert.ok(!ledger.includes(KEY));
    assert.match(ledger, /"type":"run\.model_call"/);
    // The key is in no record or file under the home.
    for (const f of walk(home)) assert.ok(!fs.readFileSync(f).includes(KEY), `the key is in ${f}`);
  } finally {
    await c.close();
  }
  assert.deepEqual(await leftovers(home, { released: true }), []);
});

test('an agent on the Anthropic wire (streamed, fragmented tool input, a 429 first) that spends its token budget salvages, reports partial and ends failed (budget_exceeded)', async (t) => {
  if (!(await requireEngine(t))) return;
  const home = await freshHome(t);
  // A policy whose root grants a small token budget: the third call is refused budget_exceeded
  // (6601: what the first two calls leave, 1, is less than the third's input estimate, tool
  // schemas included; what the first leaves, 3401, still holds the second's — with room for the
  // tool list to grow: 2601 stopped holding it when graph_run joined root's tools).
  const pol = fs.readFileSync(path.resolve(import.meta.dirname, '../../../policies/default.yaml'), 'utf8').replace(/tokens: \d+/g, 'tokens: 6601');
  fs.writeFileSync(path.join(home, 'policy.yaml'), pol);
  const m = await startModelServer({
    script: [
      { fault: { kind: 'status', status: 429, retryAfterMs: 200 } },
      toolCallTurn('write_file', { path: '/workspace/out/notes.md', content: '# notes\nfirst finding\n' }, { usage: { input: 3000, output: 200 }, argPieces: 5 }),
      toolCallTurn('list_files', { path: '/workspace/out' }, { usage: { input: 3100, output: 300 }, argPieces: 3 }),
      textTurn('never reached'),
    ],
  });
  t.after(() => m.close());
  const c = await agentSupervisor(home, m, 'anthropic-messages');
  try {
    const r = await c.supervisor.spawn({ task: 'Take notes until told otherwise.', kind: 'agent' });
    assert.ok(r.ok, JSON.stringify(!r.ok && r.error));
    const run = r.value;
    // Budget-stopped is not completed (issue 22): failed, with the budget's code.
    assert.equal(run.endReason, 'failed', `${run.error?.message} ${run.stderrTail}`);
    assert.equal(run.terminalStatus, 'failed');
    assert.equal(run.error?.code, 'budget_exceeded');
    assert.equal(run.partial, true);
    const res = run.result as { answer: string; partial: boolean; endReason: string };
    assert.equal(res.partial, true);
    assert.equal(res.endReason, 'budget_exceeded');
    assert.equal(run.tokens, 6600, `metered up to the refusal, not past it: ${JSON.stringify({ e: run.error, req: m.requests.length, res: run.result })}`);
    assert.equal(m.requests.length, 3, 'the 429 was retried once; the budget refused the third turn before any request');
    assert.equal(m.requests[0]!.format, 'anthropic-messages');
    assert.equal(m.requests[1]!.headers['x-api-key'], KEY);
    assert.deepEqual(run.outputs.map((o) => o.path), ['notes.md']);
    const ledger = fs.readdirSync(path.join(home, 'ledger')).map((f) => fs.readFileSync(path.join(home, 'ledger', f), 'utf8')).join('\n');
    assert.match(ledger, /budget_exceeded/);
  } finally {
    await c.close();
  }
  assert.deepEqual(await leftovers(home, { released: true }), []);
});

function walk(dir: string): string[] {
  return fs.readdirSync(dir, { withFileTypes: true }).flatMap((e) => {
    const p = path.join(dir, e.name);
    if (e.isDirectory()) return walk(p);
    return e.isFile() ? [p] : [];
  });
}

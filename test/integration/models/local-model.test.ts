import { test } from 'node:test';
import assert from 'node:assert/strict';
import fs from 'node:fs';
import os from 'node:os';
import path from 'node:path';
import { loadConfig } from '../../../src/config/index.js';
import { compose } from '../../../src/daemon/index.js';
import { chatmlPrompt, LocalModelClient, LocalModelHost, promptText } from '../../../src/models/index.js';
import { openaiMessages } from '../../../src/models/openai-chat-wire.js';
import { buildSystemPrompt } from '../../../src/child/agent/prompt.js';
import { parseAgentPacket } from '../../../src/child/agent/packet.js';
import { offeredTools, toolSchemas } from '../../../src/child/agent/tools/registry.js';
import { requireEngine } from '../../helpers/engine.js';
import { LOCAL_GGUF, LOCAL_RUNTIME, loadTokenizer, requireLocalModel } from '../../helpers/local-model.js';
import { freshHome, leftovers } from '../runs/fixture.js';

/**
 * The one test against a REAL model (SmolLM2-135M-Instruct, served by brig's local provider),
 * not the scripted stand-in: an agent child in its own jail, its model calls through the
 * broker to the provider's helper process on the supervisor's side. It asserts the plumbing —
 * a grammar-forced tool call ran in the jail, the envelope was cast with the local cost line,
 * usage is the model's own tokenizer's count, nothing of the provider is inside the jail —
 * never what the model chose to write (a 135M model's choices are weak). A tiny tool set and
 * a short reply cap keep the prompt near 300 tokens; threads pinned at 1 (the default).
 */

const SPEC = `---
name: scribe
description: Writes one short text file and says which file holds it.
tools: [write_file, finish]
maxSteps: 2
---
Write the text the task asks for with write_file, then call finish with the file's path.
`;

type Event = { t: string; messages?: { role: string; content: string; toolCalls?: { id: string; name: string; input: unknown }[]; toolCallId?: string; isError?: boolean }[]; message?: { role: string; content: string; toolCalls: { id: string; name: string; input: unknown }[] }; usage?: { input: number; output: number; total: number } };

// req: secrets:keys-stay
test('[INV-6] a real local model drives an agent in its jail through the broker: a grammar-forced tool call runs, usage is the tokenizer\'s own count, the envelope says local, no provider address inside', async (t) => {
  if (!(await requireEngine(t)) || !requireLocalModel(t)) return;
  const home = await freshHome(t);
  fs.mkdirSync(path.join(home, 'agents'), { recursive: true });
  fs.writeFileSync(path.join(home, 'agents', 'scribe.md'), SPEC);
  const cfg = loadConfig({ BRIG_HOME: home, BRIG_MODEL_GGUF: LOCAL_GGUF, BRIG_MODEL_CONTEXT_WINDOW: '2048', BRIG_MODEL_MAX_OUTPUT: '96' });
  const c = await compose(cfg, { tickMs: 200, reconcile: true });
  await c.supervisor.start();
  let runId = '';
  try {
    const r = await c.supervisor.spawn({ task: 'Write the word hello into /workspace/out/hello.txt.', kind: 'agent', agent: 'scribe', timeout: 300_000 });
    assert.ok(r.ok, JSON.stringify(!r.ok && r.error));
    const run = r.value;
    runId = run.id;
    assert.equal(run.endReason, 'completed', `${run.error?.message} ${run.stderrTail}`);
    assert.equal(run.costUsd, 0, 'a local model is priced 0');
    assert.equal(run.modelLocal, true);

    // The transcript the supervisor kept: what the model was sent and answered.
    const transcript = fs.readFileSync(path.join(home, 'runs', run.id, 'transcript.jsonl'), 'utf8');
    const events = transcript.trim().split('\n').map((l) => JSON.parse(l) as Event);
    const replies = events.filter((e) => e.t === 'reply');
    assert.ok(replies.length >= 1);
    // Grammar-forced: the first step's reply is one well-formed call of an offered tool.
    const first = replies[0]!;
    assert.equal(first.message!.toolCalls.length, 1, `the first reply is one tool call: ${JSON.stringify(first.message)}`);
    const call = first.message!.toolCalls[0]!;
    assert.ok(['write_file', 'finish'].includes(call.name), call.name);
    assert.equal(typeof call.input, 'object');
    // …and it ran in the jail: its result came back from the child (appended by it), paired by id.
    const results = events.filter((e) => e.t === 'append').flatMap((e) => e.messages ?? []).filter((m) => m.role === 'tool');
    assert.ok(results.some((m) => m.toolCallId === call.id) || call.name === 'finish', 'the jail answered the call with its result');

    // Usage is the model's own tokenizer's count of what was sent: rebuild the first call's
    // request as the jail made it (its packet, the offered tools, the conversation so far).
    const packet = parseAgentPacket(JSON.parse(fs.readFileSync(path.join(home, 'runs', run.id, 'packet.json'), 'utf8')));
    const offered = offeredTools(packet.agent.tools);
    const system = buildSystemPrompt(packet, offered, null);
    const before = events.slice(0, events.indexOf(first)).filter((e) => e.t === 'append').flatMap((e) => e.messages ?? []);
    const wireTools = toolSchemas(offered).map((x) => ({ name: x.name, description: x.description, parameters: x.parameters }));
    // An agent step's tool choice reaches the local provider as `required` (its default).
    const sent = promptText(chatmlPrompt(openaiMessages(system, before as never), wireTools, 'required'));
    const tok = await loadTokenizer();
    try {
      assert.equal(first.usage!.input, tok.count(sent), 'input tokens: the tokenizer\'s count of the prompt the provider was sent');
      // What came back: at least the tokens of its text (a grammar may make the model spell a
      // word in more pieces than the tokenizer would), at most the reply cap; the sum is total.
      const replyText = JSON.stringify({ name: call.name, arguments: call.input });
      assert.ok(first.usage!.output >= tok.count(replyText) && first.usage!.output <= 96, `output ${first.usage!.output} vs text ${tok.count(replyText)}`);
      assert.equal(first.usage!.total, first.usage!.input + first.usage!.output);
    } finally {
      await tok.close();
    }
    assert.equal(run.tokens, replies.reduce((n, e) => n + e.usage!.total, 0), 'the run is metered with the sum of those counts');

    // The jail's only host binds are the run's broker directory (and none of the provider's).
    assert.ok(run.jail && run.jail.network === 'none');
    assert.deepEqual(run.jail.binds.map((b) => b.target), ['/run/brig']);

    // The envelope a coordinator gets: cast, with the local cost line.
    const env = await c.refs.result(run.id);
    assert.ok(env.ok, JSON.stringify(!env.ok && env.error));
    assert.match(env.value.envelope, /Cost: local \(\$0\)/);
    assert.match(env.value.envelope, /^\[Subagent Result: /);
  } finally {
    await c.close();
  }
  // Nothing of the provider went into the jail: its packet names no socket, path or model file.
  const packetText = fs.readFileSync(path.join(home, 'runs', runId, 'packet.json'), 'utf8');
  assert.doesNotMatch(packetText, /brig-llm-|llm\.sock|\.gguf|SmolLM2/i);
  assert.deepEqual(await leftovers(home, { released: true }), []);
  assert.deepEqual(helpersOf(process.pid), [], 'the model helper process ended with the supervisor');
});

/** Model helper processes (server-main) whose parent is `ppid`. */
function helpersOf(ppid: number): number[] {
  return fs
    .readdirSync('/proc')
    .filter((d) => /^\d+$/.test(d))
    .filter((d) => {
      try {
        const stat = fs.readFileSync(`/proc/${d}/stat`, 'utf8');
        const fields = stat.slice(stat.lastIndexOf(')') + 2).split(' ');
        return Number(fields[1]) === ppid && fs.readFileSync(`/proc/${d}/cmdline`, 'utf8').includes('server-main');
      } catch {
        return false;
      }
    })
    .map(Number);
}

test('the local helper: a file the runtime cannot load fails the call model_unavailable with its words; a helper killed mid-life is started again on the next call; closing stops it', async (t) => {
  if (!requireLocalModel(t)) return;
  const dir = fs.mkdtempSync(path.join(os.tmpdir(), 'brig-lh-'));
  t.after(() => fs.rmSync(dir, { recursive: true, force: true }));
  // A GGUF header and nothing behind it: brig's header check passes it, the runtime does not.
  const hollow = path.join(dir, 'hollow.gguf');
  const head = Buffer.alloc(4096);
  head.write('GGUF', 0, 'latin1');
  head.writeUInt32LE(3, 4);
  head.writeBigUInt64LE(1n, 8);
  fs.writeFileSync(hollow, head);
  const broken = new LocalModelHost({ gguf: hollow, runtimeDir: LOCAL_RUNTIME, threads: 1, contextSize: 512 });
  try {
    await assert.rejects(new LocalModelClient(broken, { model: 'hollow' }).complete({ system: '', messages: [{ role: 'user', content: 'hi' }] }), (e: Error & { code?: string; hint?: string }) => {
      assert.equal(e.code, 'model_unavailable');
      assert.match(e.message, /hollow\.gguf could not be started/);
      assert.match(e.hint ?? '', /brig model pull --gguf FILE/);
      return true;
    });
    assert.equal(broken.pid, undefined, 'no helper left running');
  } finally {
    await broken.close();
  }
  const host = new LocalModelHost({ gguf: LOCAL_GGUF, runtimeDir: LOCAL_RUNTIME, threads: 1, contextSize: 512 });
  const client = new LocalModelClient(host, { model: 'smol', maxOutputTokens: 4 });
  try {
    const a = await client.complete({ system: '', messages: [{ role: 'user', content: 'Say hi.' }] });
    assert.ok(a.usage.output >= 1 && a.usage.output <= 4);
    const first = host.pid!;
    process.kill(first, 'SIGKILL');
    for (let i = 0; i < 100 && host.pid !== undefined; i++) await new Promise((r) => setTimeout(r, 50));
    const b = await client.complete({ system: '', messages: [{ role: 'user', content: 'Say hi.' }] });
    assert.equal(b.message.content, a.message.content, 'greedy: the same answer from the new helper');
    assert.ok(host.pid !== undefined && host.pid !== first, 'a new helper');
  } finally {
    await host.close();
  }
  assert.deepEqual(helpersOf(process.pid), [], 'closed: no helper left');
});

import { test } from 'node:test';
import assert from 'node:assert/strict';
import fs from 'node:fs';
import path from 'node:path';
import { runAgent, NUDGE, START_MESSAGE, STEER_PREFIX } from '../../../src/child/agent/loop.js';
import { call, CodeError, FakeBroker, loopOptions, packet, tempRoots } from './fake-broker.js';
import type { LlmMessage } from '../../../src/child/agent/types.js';

const toolMessages = (b: FakeBroker) => b.conversation.filter((m) => m.role === 'tool') as { toolCallId: string; content: string; isError?: boolean }[];

test('a tool-call sequence ends in finish: one result per call, progress per step, a byte-stable system prompt', async (t) => {
  const r = tempRoots();
  t.after(r.cleanup);
  const b = new FakeBroker([
    () => ({ content: 'writing', toolCalls: [call('write_file', { path: 'out/a.txt', content: 'one\ntwo\nthree\n' })] }),
    () => ({ toolCalls: [call('shell', { command: 'wc -l < out/a.txt' })] }),
    () => ({ toolCalls: [call('read_file', { path: 'out/a.txt', offset: 2, limit: 1 })] }),
    () => ({ toolCalls: [call('finish', { answer: 'three lines', files: ['out/a.txt'] })] }),
  ]);
  const out = await runAgent(loopOptions(b, packet(), r));
  assert.deepEqual(b.violations, []);
  assert.equal(out.finished, true);
  assert.equal(out.steps, 4);
  assert.deepEqual(b.result, { value: { answer: 'three lines', files: [path.join(r.workspace, 'out/a.txt')] } });
  const results = toolMessages(b);
  assert.equal(results.length, 4);
  assert.match(results[1]!.content, /^\[exit 0\]\n\s*3/);
  assert.equal(results[2]!.content, '[out/a.txt: lines 2-2 of 3]\ntwo\n[more: 1 line left; continue with offset=3]');
  const completes = b.of('llm.complete');
  assert.deepEqual(completes.map((c) => [c.params.purpose, c.params.step]), [['step', 1], ['step', 2], ['step', 3], ['step', 4]]);
  assert.equal(new Set(completes.map((c) => c.params.system)).size, 1, 'the system prompt never changes within a run');
  assert.deepEqual(completes[0]!.params.tools.map((x: { name: string }) => x.name), ['shell', 'read_file', 'write_file', 'edit_file', 'list_files', 'grep_files', 'finish']);
  // finish ends the run before its step's progress: three steps reported, content-free.
  assert.deepEqual(b.of('progress').map((c) => c.params), [
    { line: 'step 1: write_file', tool: 'write_file' },
    { line: 'step 2: shell', tool: 'shell' },
    { line: 'step 3: read_file', tool: 'read_file' },
  ]);
});

test('malformed arguments and an unknown tool get error results and the loop goes on', async (t) => {
  const r = tempRoots();
  t.after(r.cleanup);
  const b = new FakeBroker([
    () => ({ toolCalls: [call('shell', {}, { inputError: 'Unexpected end of JSON input' }), call('rm_rf', { path: '/' }), call('list_files', {})] }),
    () => ({ toolCalls: [call('read_file', { offset: 'x' })] }),
    () => ({ toolCalls: [call('finish', { answer: 'ok' })] }),
  ]);
  const out = await runAgent(loopOptions(b, packet(), r));
  assert.deepEqual(b.violations, []);
  assert.equal(out.finished, true);
  const [bad, unknown, list, schema] = toolMessages(b);
  assert.equal(bad!.isError, true);
  assert.match(bad!.content, /not valid JSON \(Unexpected end of JSON input\)/);
  assert.equal(unknown!.isError, true);
  assert.match(unknown!.content, /no tool named "rm_rf"; the tools are: shell, read_file/);
  assert.equal(list!.isError, undefined);
  assert.match(schema!.content, /invalid arguments for read_file: (path is required|offset must be an integer)/);
});

test('the consecutive format-error cap (tool-less replies count) ends the run with one salvage', async (t) => {
  const r = tempRoots();
  t.after(r.cleanup);
  const b = new FakeBroker([
    () => ({ content: 'thinking aloud' }),
    () => ({ toolCalls: [call('shell', {}, { inputError: 'bad json' })] }),
    () => ({ toolCalls: [call('nope', {})] }),
    (p) => {
      assert.equal(p.purpose, 'salvage');
      assert.equal(p.tools, undefined);
      assert.ok(p.maxTokens! <= 1000);
      return { content: 'I found nothing; no files matter.' };
    },
  ]);
  const out = await runAgent(loopOptions(b, packet({ maxConsecutiveFormatErrors: 3 }), r));
  assert.deepEqual(b.violations, []);
  assert.equal(out.endReason, 'format_errors');
  assert.ok(b.conversation.some((m) => m.role === 'user' && m.content === NUDGE));
  const last = b.of('llm.append').at(-1)!.params.messages[0];
  assert.match(last.content, /report what you found and which files matter/);
  assert.deepEqual(b.result, { value: { answer: 'I found nothing; no files matter.', partial: true, endReason: 'format_errors' } });
  assert.equal(b.of('progress').length, 2);
});

test('a steer is delivered as a user turn at the next step boundary only, never between a call and its result', async (t) => {
  const r = tempRoots();
  t.after(r.cleanup);
  const b = new FakeBroker([
    () => ({ toolCalls: [call('shell', { command: 'echo one' }), call('shell', { command: 'echo two' })] }),
    () => ({ toolCalls: [call('finish', { answer: 'done' })] }),
  ]);
  b.steers.push('early word');
  let injected = false;
  b.before = (method) => {
    // The parent steers while step 1's model call and tools are under way.
    if (method === 'llm.complete' && !injected) {
      injected = true;
      b.steers.push('use fewer shells');
    }
  };
  await runAgent(loopOptions(b, packet(), r));
  assert.deepEqual(b.violations, []);
  const conv = b.conversation;
  const idx = (text: string) => conv.findIndex((m) => m.role === 'user' && m.content === `${STEER_PREFIX} ${text}`);
  assert.equal(idx('early word'), 1, 'a steer waiting at the start comes before the first model call');
  const steer = idx('use fewer shells');
  assert.deepEqual(conv.slice(2, 7).map((m) => m.role), ['assistant', 'tool', 'tool', 'user', 'assistant'], 'step 1, its two results, the steer, step 2');
  assert.equal(steer, 5);
  assert.equal(conv.filter((m) => m.content.includes('use fewer shells')).length, 1);
  // The broker saw it after step 1's progress, riding step 2's model call (its `append`).
  const order = b.calls.map((c) => (c.method === 'llm.complete' && c.params.append?.some((m: LlmMessage) => m.content.includes('fewer')) ? 'steer+complete' : c.method));
  assert.deepEqual(order.slice(order.indexOf('progress'), order.indexOf('steer+complete') + 1), ['progress', 'steer.poll', 'steer+complete']);
});

test('maxSteps: the loop stops itself after the last step and salvages', async (t) => {
  const r = tempRoots();
  t.after(r.cleanup);
  const b = new FakeBroker([
    () => ({ toolCalls: [call('shell', { command: 'true' })] }),
    () => ({ toolCalls: [call('shell', { command: 'true' })] }),
    () => ({ content: 'Partial: ran true twice. Files: none.' }),
  ]);
  const out = await runAgent(loopOptions(b, packet({ maxSteps: 2 }), r));
  assert.equal(out.endReason, 'max_steps');
  assert.equal(b.of('progress').length, 2);
  assert.deepEqual(b.of('llm.complete').map((c) => c.params.purpose), ['step', 'step', 'salvage']);
  assert.deepEqual(b.result.value, { answer: 'Partial: ran true twice. Files: none.', partial: true, endReason: 'max_steps' });
});

test('maxSteps: a step the supervisor refuses (timeout) ends the run as max_steps', async (t) => {
  const r = tempRoots();
  t.after(r.cleanup);
  const b = new FakeBroker([() => ({ toolCalls: [call('shell', { command: 'true' })] }), () => ({ content: 'salvaged' })]);
  b.maxSteps = 0;
  const out = await runAgent(loopOptions(b, packet({ maxSteps: 5 }), r));
  assert.equal(out.endReason, 'max_steps');
  assert.equal(b.result.value.partial, true);
});

test('budget_exceeded: the salvage call is refused too, so the answer is a head and tail of the last assistant text', async (t) => {
  const r = tempRoots();
  t.after(r.cleanup);
  const long = `HEAD-${'x'.repeat(20_000)}-TAIL`;
  const refuse = () => {
    throw new CodeError('budget_exceeded', 'the lease tokens are spent');
  };
  const b = new FakeBroker([() => ({ content: long, toolCalls: [call('shell', { command: 'true' })] }), refuse, refuse]);
  const out = await runAgent(loopOptions(b, packet(), r));
  assert.equal(out.endReason, 'budget_exceeded');
  const v = b.result.value;
  assert.equal(v.partial, true);
  assert.equal(v.endReason, 'budget_exceeded');
  assert.match(v.answer, /^\[No salvage report could be had; the run ended \(budget_exceeded\)/);
  assert.ok(v.answer.includes('HEAD-') && v.answer.endsWith('-TAIL'));
  assert.match(v.answer, /chars elided/);
  assert.ok(v.answer.length < 5000);
  assert.equal(b.of('llm.complete').filter((c) => c.params.purpose === 'salvage').length, 1, 'one salvage attempt');
});

test('a big tool output is spilled whole to .brig/spill/<n>.txt; the model gets the path, the head and the tail', async (t) => {
  const r = tempRoots();
  t.after(r.cleanup);
  const b = new FakeBroker([
    () => ({ toolCalls: [call('shell', { command: "printf 'FIRST'; i=0; while [ $i -lt 3000 ]; do printf '0123456789'; i=$((i+1)); done; printf 'LAST'" })] }),
    () => ({ toolCalls: [call('finish', { answer: 'ok' })] }),
  ]);
  await runAgent(loopOptions(b, packet({ toolResultMaxChars: 4000 }), r));
  const res = toolMessages(b)[0]!.content;
  const spill = path.join(r.workspace, '.brig/spill/1.txt');
  assert.ok(res.length <= 4000, `bounded: ${res.length}`);
  assert.ok(res.includes(spill), 'names the spill file');
  assert.ok(res.includes('FIRST') && res.trimEnd().endsWith('LAST'));
  const whole = fs.readFileSync(spill, 'utf8');
  assert.equal(whole.length, '[exit 0]\n'.length + 5 + 30_000 + 4);
  // head 60%, tail 40% of what is shown
  const [head, tail] = res.split(/\n\[… \d+ chars elided …\]\n/);
  assert.ok(Math.abs(head!.length / (head!.length + tail!.length) - 0.6) < 0.1);
});

test('a tool the packet does not allow is never offered, listed or run', async (t) => {
  const r = tempRoots();
  t.after(r.cleanup);
  const b = new FakeBroker([
    () => ({ toolCalls: [call('shell', { command: 'touch out/pwned' })] }),
    () => ({ toolCalls: [call('finish', { answer: 'ok' })] }),
  ]);
  await runAgent(loopOptions(b, packet({ tools: ['read_file', 'llm_complete', 'read_artifact'] }), r));
  const c = b.of('llm.complete')[0]!.params;
  assert.deepEqual(c.tools.map((x: { name: string }) => x.name), ['read_file', 'finish']);
  assert.ok(!/`shell`/.test(c.system));
  assert.match(toolMessages(b)[0]!.content, /no tool named "shell"/);
  assert.equal(fs.existsSync(path.join(r.workspace, 'out/pwned')), false);
});

test('finish naming a file that does not exist is refused with an error result, and the loop goes on', async (t) => {
  const r = tempRoots();
  t.after(r.cleanup);
  const b = new FakeBroker([
    () => ({ toolCalls: [call('finish', { answer: 'see file', files: ['out/missing.txt'] }), call('shell', { command: 'true' })] }),
    () => ({ toolCalls: [call('finish', { answer: 'no file' })] }),
  ]);
  const out = await runAgent(loopOptions(b, packet(), r));
  assert.equal(out.finished, true);
  assert.match(toolMessages(b)[0]!.content, /finish refused.*out\/missing.txt \(it does not exist\)/);
  assert.deepEqual(b.result, { value: { answer: 'no file', files: [] } });
});

test('calls after finish in the same reply get a not-run result (every call is answered)', async (t) => {
  const r = tempRoots();
  t.after(r.cleanup);
  const b = new FakeBroker([() => ({ toolCalls: [call('finish', { answer: 'a' }), call('shell', { command: 'touch out/late' })] })]);
  await runAgent(loopOptions(b, packet(), r));
  const [fin, late] = toolMessages(b);
  assert.equal(fin!.content, 'finished');
  assert.match(late!.content, /not run: `finish` ended the run/);
  assert.equal(fs.existsSync(path.join(r.workspace, 'out/late')), false);
});

test('results over ~48 KiB in total go in several appends, each line within 64 KiB', async (t) => {
  const r = tempRoots();
  t.after(r.cleanup);
  const big = "i=0; while [ $i -lt 1500 ]; do printf '0123456789'; i=$((i+1)); done";
  const b = new FakeBroker([
    () => ({ toolCalls: [1, 2, 3, 4, 5].map(() => call('shell', { command: big })) }),
    () => ({ toolCalls: [call('finish', { answer: 'ok' })] }),
  ]);
  await runAgent(loopOptions(b, packet(), r));
  assert.deepEqual(b.violations, []);
  const appends = b.of('llm.append').filter((c) => c.params.messages.some((m: { role: string }) => m.role === 'tool'));
  assert.ok(appends.length >= 2, `${appends.length} appends`);
  assert.equal(appends.slice(0, -1).flatMap((c) => c.params.messages).length, 5);
});

test('a big finish answer is spooled to .brig/result/value.json and sent as {spooled: {bytes}}', async (t) => {
  const r = tempRoots();
  t.after(r.cleanup);
  const answer = 'y'.repeat(60_000);
  const b = new FakeBroker([() => ({ toolCalls: [call('finish', { answer })] })]);
  await runAgent(loopOptions(b, packet(), r));
  const file = path.join(r.workspace, '.brig/result/value.json');
  assert.deepEqual(b.result, { spooled: { bytes: fs.statSync(file).size } });
  assert.deepEqual(JSON.parse(fs.readFileSync(file, 'utf8')), { answer, files: [] });
});

test('SIGTERM mid-tool: the tool is stopped and answered, then one salvage and a partial result', async (t) => {
  const r = tempRoots();
  t.after(r.cleanup);
  const stop = new AbortController();
  const b = new FakeBroker([
    () => ({ content: 'sleeping first', toolCalls: [call('shell', { command: 'touch .sleeping; sleep 20' }), call('shell', { command: 'touch out/never' })] }),
    () => ({ content: 'I slept; nothing to report.' }),
  ]);
  // SIGTERM once the tool runs (its shell says so), not after a guessed delay.
  const sleeping = path.join(r.workspace, '.sleeping');
  let over = false;
  void (async () => {
    while (!over && !fs.existsSync(sleeping)) await new Promise((res) => setTimeout(res, 10));
    stop.abort();
  })();
  const t0 = Date.now();
  const out = await runAgent({ ...loopOptions(b, packet(), r), stop: stop.signal });
  over = true;
  assert.ok(Date.now() - t0 < 5000);
  assert.deepEqual(b.violations, []);
  assert.equal(out.endReason, 'terminated');
  const [slept, never] = toolMessages(b);
  assert.match(slept!.content, /killed: stopped: the run is ending/);
  assert.match(never!.content, /not run: the run is stopping/);
  assert.deepEqual(b.result.value, { answer: 'I slept; nothing to report.', partial: true, endReason: 'terminated' });
});

test('SIGTERM while the model call hangs: after a short grace the loop salvages without the model', async (t) => {
  const r = tempRoots();
  t.after(r.cleanup);
  const stop = new AbortController();
  const b = new FakeBroker([() => new Promise(() => {})]);
  b.before = (method) => void (method === 'llm.complete' && setImmediate(() => stop.abort())); // SIGTERM while the call hangs
  const out = await runAgent({ ...loopOptions(b, packet(), r), stop: stop.signal });
  assert.equal(out.endReason, 'terminated');
  assert.equal(b.of('llm.complete').length, 1, 'no salvage call on a conversation in an unknown state');
  assert.match(b.result.value.answer, /before the agent wrote any text/);
});

test('a model_unavailable is retried once; a second one ends the run (model_error) with a salvage attempt', async (t) => {
  const r = tempRoots();
  t.after(r.cleanup);
  const down = () => {
    throw new CodeError('model_unavailable');
  };
  const ok = new FakeBroker([down, () => ({ toolCalls: [call('finish', { answer: 'a' })] })]);
  assert.equal((await runAgent(loopOptions(ok, packet(), r))).finished, true);
  const bad = new FakeBroker([down, down, () => ({ content: 'salvaged words' })]);
  const out = await runAgent(loopOptions(bad, packet(), r));
  assert.equal(out.endReason, 'model_error');
  assert.equal(bad.result.value.answer, 'salvaged words');
});

test('the bearer never reaches the model: tool outputs are scrubbed of it', async (t) => {
  const r = tempRoots();
  t.after(r.cleanup);
  fs.writeFileSync(path.join(r.workspace, 'leak.txt'), 'token=SECRET-BEARER-123\n');
  const b = new FakeBroker([
    () => ({ toolCalls: [call('shell', { command: 'cat leak.txt' }), call('read_file', { path: 'leak.txt' })] }),
    () => ({ toolCalls: [call('finish', { answer: 'ok' })] }),
  ]);
  await runAgent({ ...loopOptions(b, packet(), r), secrets: ['SECRET-BEARER-123'] });
  assert.ok(!JSON.stringify(b.calls).includes('SECRET-BEARER-123'));
  assert.match(toolMessages(b)[0]!.content, /token=\[redacted\]/);
});

test('the start message rides the first model call (its append): before it only the steer poll, and nothing appended on its own', async (t) => {
  const r = tempRoots();
  t.after(r.cleanup);
  const b = new FakeBroker([() => ({ toolCalls: [call('finish', { answer: 'ok' })] })]);
  const out = await runAgent(loopOptions(b, packet(), r));
  assert.equal(out.finished, true);
  assert.deepEqual(b.violations, []);
  const methods = b.calls.map((c) => c.method);
  assert.deepEqual(methods.slice(0, methods.indexOf('llm.complete') + 1), ['steer.poll', 'llm.complete']);
  assert.deepEqual(b.of('llm.complete')[0]!.params.append, [{ role: 'user', content: START_MESSAGE }]);
  assert.deepEqual(b.conversation.slice(0, 2).map((m) => m.role), ['user', 'assistant'], 'the supervisor holds the start message before the first turn');
});

test('a first model call that fails appends nothing: the salvage sends the start message before its request', async (t) => {
  const r = tempRoots();
  t.after(r.cleanup);
  const b = new FakeBroker([
    () => {
      throw new CodeError('invalid_input', 'the provider refused the request');
    },
    () => ({ content: 'nothing done yet' }),
  ]);
  const out = await runAgent(loopOptions(b, packet(), r));
  assert.equal(out.endReason, 'model_error');
  assert.deepEqual(b.violations, []);
  assert.deepEqual(b.conversation.map((m) => m.content.slice(0, 12)), [START_MESSAGE.slice(0, 12), '[Salvage] Th', 'nothing done'], 'once each, in order');
  assert.equal(b.of('llm.complete')[1]!.params.purpose, 'salvage');
  assert.equal(b.of('llm.complete')[1]!.params.append, undefined);
});

test('carried messages that do not fit beside the model call in one line go first as their own llm.append', async (t) => {
  const r = tempRoots();
  t.after(r.cleanup);
  const b = new FakeBroker([() => ({ toolCalls: [call('finish', { answer: 'ok' })] })]);
  // A long system prompt (the packet's fields near their caps) and a steer of tens of KiB waiting at the start.
  b.steers.push(...Array.from({ length: 12 }, (_, i) => `${i} ${'s'.repeat(3900)}`));
  const big = (c: string) => c.repeat(8000);
  const out = await runAgent(loopOptions(b, packet({ instructions: big('i') }, { task: big('t'), domainKnowledge: [big('d')], parentSummary: big('p') }), r));
  assert.equal(out.finished, true);
  assert.deepEqual(b.violations, [], 'no line over 64 KiB');
  const methods = b.calls.map((c) => c.method);
  assert.deepEqual(methods.slice(0, methods.indexOf('llm.complete') + 1), ['steer.poll', 'llm.append', 'llm.complete']);
  assert.equal(b.of('llm.complete')[0]!.params.append, undefined);
  assert.deepEqual(b.conversation.slice(0, 3).map((m) => m.role), ['user', 'user', 'assistant'], 'the start message, the steers, the turn');
});

test('a refused hello (ready) rejects run() before any model call: the set-up failed, nothing is salvaged', async (t) => {
  const r = tempRoots();
  t.after(r.cleanup);
  const b = new FakeBroker([() => ({ toolCalls: [call('finish', { answer: 'ok' })] })]);
  const ready = Promise.reject(new CodeError('unauthorized', 'bearer refused'));
  await assert.rejects(runAgent({ ...loopOptions(b, packet(), r), ready }), /bearer refused/);
  assert.equal(b.of('llm.complete').length, 0);
  assert.equal(b.of('result').length, 0);
});

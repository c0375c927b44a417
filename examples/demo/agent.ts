/**
 * `make demo`, the agent step: one LLM agent child at work in its own jail. Its whole tool
 * loop runs inside the jail; every model call goes through the broker to this process, which
 * holds the model endpoint (and the key, when there is one) — the jail never sees either.
 *
 * Which model drives it (the screen says which):
 * - by default, a REAL model: SmolLM2-135M-Instruct, a 135M GGUF brig serves itself on the
 *   supervisor's side (`make model` pulls it; BRIG_DEMO_GGUF or BRIG_MODEL_GGUF names it). Its
 *   answers are weak; the task is one it can finish through grammar-forced tool calls, and
 *   the demo prints what it really did (its calls, what the jail answered, what it wrote);
 * - with BRIG_MODEL_BASE_URL (and BRIG_MODEL) set, that model;
 * - with BRIG_DEMO_MODEL=scripted, a scripted stand-in model server on loopback — not a real
 *   model: it replays a fixed plan and quotes what the jail's tools really returned.
 */
import fs from 'node:fs';
import path from 'node:path';
import { loadConfig, openBrig, type Brig } from '../../src/index.js';
import { startModelServer, textTurn, toolCallTurn, type RecordedRequest } from '../../test/helpers/model-server.js';

const bold = (s: string) => (process.stdout.isTTY ? `\x1b[1m${s}\x1b[0m` : s);
const say = (s = '') => process.stdout.write(`${s}\n`);

const TASK = 'Make a file of the squares of 1..200 under /workspace/out, then tell me how many of them end in 6 and which file holds them.';

/** The last tool result the stand-in was sent: what the jail's shell printed. */
function lastToolResult(req: RecordedRequest): string {
  const msgs = (req.body?.messages ?? []) as { role: string; content: unknown }[];
  return String([...msgs].reverse().find((m) => m.role === 'tool')?.content ?? '');
}

/** The local model's part: a small spec (two tools keep its prompt short) and a task it can finish. */
const LOCAL = {
  spec: `---
name: scribe
description: Writes one short text file and says which file holds it.
tools: [write_file, finish]
maxSteps: 4
---
Do the task with write_file, then call finish with your answer and the file's path.
`,
  // Worded the way this model follows (measured: asked to "write a greeting … then call finish"
  // it calls finish first, naming a file it never wrote).
  task: 'Use write_file to write "Hello from a small model" into /workspace/out/greeting.txt.',
};

/** What the local model really did, read back from its transcript with the jq slicer. */
async function showLocalRun(brig: Brig, transcriptRef: string): Promise<void> {
  const calls = await brig.refs.jq(transcriptRef, 'select(.t == "reply") | .message.toolCalls[]? | .name + " " + (.input | tojson | .[0:160])');
  const results = await brig.refs.jq(transcriptRef, 'select(.t == "append") | .messages[] | select(.role == "tool") | (if .isError then "error: " else "ok: " end) + (.content | gsub("[[:space:]]+"; " ") | .[0:160])');
  say(bold('== what the model really did (from its transcript, with the jq slicer)'));
  const lines = (r: typeof calls) => (r.ok ? (r.value.text ?? '').trim().split('\n').filter(Boolean).map((l) => JSON.parse(l) as string) : [`(${r.error.message})`]);
  const c = lines(calls);
  const res = lines(results);
  c.forEach((call, i) => say(`  call ${i + 1}: ${call}\n          → ${res[i] ?? '(no result: the run ended here)'}`));
  if (c.length === 0) say('  (no tool call)');
}

async function main(): Promise<void> {
  const choice = process.env.BRIG_DEMO_MODEL === 'scripted' ? 'scripted' : process.env.BRIG_MODEL_BASE_URL ? 'endpoint' : 'local';
  if (choice === 'local') return mainLocal();
  const real = choice === 'endpoint';
  const standIn = real
    ? undefined
    : await startModelServer({
        script: [
          toolCallTurn('shell', { command: "seq 1 200 | awk '{print $1*$1}' > /workspace/out/squares.txt && grep -c '6$' /workspace/out/squares.txt" }, { usage: { input: 1400, output: 60 } }),
          (req) => {
            const count = (/(\d+)\s*$/.exec(lastToolResult(req).trim()) ?? [])[1] ?? '?';
            return toolCallTurn('finish', { answer: `${count} of the squares of 1..200 end in 6; they are listed in squares.txt.`, files: ['/workspace/out/squares.txt'] }, { usage: { input: 1600, output: 40 } });
          },
          textTurn('(the stand-in has no more turns)'),
        ],
      });
  say(bold('== one agent child: its tool loop runs inside its own jail; model calls go through the broker'));
  say(
    real
      ? `  model: ${process.env.BRIG_MODEL ?? '(BRIG_MODEL unset)'} at ${process.env.BRIG_MODEL_BASE_URL} (from BRIG_MODEL_*)`
      : '  model: a SCRIPTED STAND-IN on loopback (no BRIG_MODEL_* set) — not a real model: it replays a fixed plan and quotes the tool output',
  );
  const env = real ? process.env : { ...process.env, BRIG_MODEL_BASE_URL: standIn!.baseUrl, BRIG_MODEL: 'scripted-stand-in', BRIG_MODEL_API: 'openai-chat' };
  const brig = await openBrig({ mode: 'local', env });
  try {
    say(`  task: ${TASK}`);
    const r = await brig.spawn({ task: TASK, kind: 'agent', agent: 'general', objective: 'a count and the file that holds the squares', timeout: 300_000 });
    if (!r.ok) throw new Error(`${r.error.message} [${r.error.code}] → ${r.error.hint}`);
    const run = r.value;
    say(`  run ${run.id}: ${run.endReason}${run.partial ? ' (partial)' : ''}, ${run.stepsExecuted} steps, ${run.tokens ?? 0} tokens, cost ${run.costUsd === null || run.costUsd === undefined ? 'unknown (no price configured)' : `$${run.costUsd.toFixed(4)}`}`);
    if (run.endReason !== 'completed') throw new Error(`the agent did not complete: ${run.error?.message ?? ''} ${run.stderrTail}`);
    const env2 = await brig.refs.result(run.id);
    if (!env2.ok) throw new Error(env2.error.message);
    say();
    say(bold('== what the coordinator receives: the envelope'));
    say(env2.value.envelope);
    const transcript = env2.value.refs.find((x) => x.path === 'transcript.jsonl');
    if (transcript) say(`\n  the full transcript stays on disk as ResultRef ${transcript.ref} (${transcript.bytes} bytes): \`brig ref read ${transcript.ref}\``);
    if (standIn) say(`  the stand-in served ${standIn.requests.length} model calls; none came from inside the jail (it has no network)`);
  } finally {
    await brig.close();
    await standIn?.close();
  }
}

/** The default: the real 135M model brig serves itself. */
async function mainLocal(): Promise<void> {
  // `make model`'s cache, unless told otherwise.
  const gguf = process.env.BRIG_DEMO_GGUF || process.env.BRIG_MODEL_GGUF || path.resolve(import.meta.dirname, '../../.cache/models/SmolLM2-135M-Instruct.Q4_1.gguf');
  if (!gguf || !fs.existsSync(gguf)) throw new Error(`no local model${gguf ? ` at ${gguf}` : ''}: run \`make model\` (or set BRIG_DEMO_MODEL=scripted for the stand-in)`);
  const env = { ...process.env, BRIG_MODEL_GGUF: gguf, BRIG_MODEL_CONTEXT_WINDOW: '4096', BRIG_MODEL_MAX_OUTPUT: '160' };
  const home = loadConfig(env).home;
  fs.mkdirSync(path.join(home, 'agents'), { recursive: true, mode: 0o700 });
  fs.writeFileSync(path.join(home, 'agents', 'scribe.md'), LOCAL.spec);
  say(bold('== one agent child: its tool loop runs inside its own jail; model calls go through the broker'));
  say(`  model: ${path.basename(gguf)} — a REAL but tiny (135M-parameter) model that brig serves itself, outside the jail,`);
  say('         on one CPU thread; no key, no network. Its answers are weak: this shows the plumbing, not quality.');
  const brig = await openBrig({ mode: 'local', env });
  try {
    say(`  task: ${LOCAL.task}`);
    const t0 = Date.now();
    const r = await brig.spawn({ task: LOCAL.task, kind: 'agent', agent: 'scribe', timeout: 300_000 });
    if (!r.ok) throw new Error(`${r.error.message} [${r.error.code}] → ${r.error.hint}`);
    const run = r.value;
    say(`  run ${run.id}: ${run.endReason}${run.partial ? ' (partial)' : ''} in ${((Date.now() - t0) / 1000).toFixed(1)} s, ${run.stepsExecuted} steps, ${run.tokens ?? 0} tokens (the model's own tokenizer), cost ${run.modelLocal ? 'local ($0)' : String(run.costUsd)}`);
    const res = await brig.refs.result(run.id);
    if (!res.ok) throw new Error(res.error.message);
    const transcript = res.value.refs.find((x) => x.path === 'transcript.jsonl');
    say();
    if (transcript) await showLocalRun(brig, transcript.ref);
    say(`  files it left in /workspace/out: ${run.outputs.length ? run.outputs.map((o) => `${o.path} (${o.bytes} B)`).join(', ') : 'none (only what is written under /workspace/out comes back; where it wrote was the model\'s choice)'}`);
    for (const o of run.outputs.slice(0, 3)) {
      const ref = res.value.refs.find((x) => x.path === o.path);
      const text = ref ? await brig.refs.read(ref.ref, { offset: 0, length: 200 }) : undefined;
      if (text?.ok) say(`    ${o.path}: ${JSON.stringify(text.value.text ?? '')}`);
    }
    say();
    say(bold('== what the coordinator receives: the envelope'));
    say(res.value.envelope);
    if (transcript) say(`  the full transcript stays on disk as ResultRef ${transcript.ref} (${transcript.bytes} bytes): \`brig ref read ${transcript.ref}\``);
  } finally {
    await brig.close();
  }
}

main().catch((e: unknown) => {
  process.stderr.write(`agent demo failed: ${(e as Error).message}\n`);
  process.exit(1);
});

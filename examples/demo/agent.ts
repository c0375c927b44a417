/**
 * `make demo`, the agent step: reference 000's worked example, "Atlas". A coordinator agent
 * (Atlas) is asked for a brief on quantum computing; it delegates to two agents in jails of
 * their own — a collector that writes the sources, and a researcher that is handed the
 * collector's file as a ResultRef (read-only at /artifacts, never through Atlas) — receives
 * each child as a bounded envelope (the researcher's answer is over 100 KB: Atlas gets a
 * Level 2 summary), drills in with ref_grep and writes the brief. Every tool loop runs inside
 * its own jail; every model call goes through the broker to this process, which holds the
 * endpoint (and the key) — no jail sees either.
 *
 * Which model drives it (the screen says which):
 * - by default, a REAL model first: SmolLM2-135M-Instruct, a 135M GGUF brig serves itself on
 *   the supervisor's side (`make model` pulls it; BRIG_DEMO_GGUF or BRIG_MODEL_GGUF names
 *   it), in one agent child at a task it can finish — the plumbing, not quality. A model that
 *   small cannot coordinate, so Atlas then runs with the SCRIPTED STAND-IN, and says so;
 * - with BRIG_MODEL_BASE_URL (and BRIG_MODEL) set, that model drives Atlas's three agents (and
 *   condenses);
 * - with BRIG_DEMO_MODEL=scripted, the stand-in alone: a scripted model server on loopback —
 *   not a real model: it replays a fixed plan, and what it writes is built from what the
 *   jails' tools really returned (the rows the collector's shell wrote, the file the
 *   researcher read).
 */
import fs from 'node:fs';
import path from 'node:path';
import { loadConfig, openBrig, type Brig, type RunRecord } from '../../src/index.js';
import { startModelServer, textTurn, toolCallTurn, type RecordedRequest, type Turn } from '../../test/helpers/model-server.js';

const bold = (s: string) => (process.stdout.isTTY ? `\x1b[1m${s}\x1b[0m` : s);
const say = (s = '') => process.stdout.write(`${s}\n`);

const TASK = 'Compile a 500-word brief on the quantum-computing breakthroughs of the last 12 months. Delegate: one child collects the sources, one researches them.';

type Msg = { role: string; content: unknown };
const msgs = (r: RecordedRequest) => (r.body?.messages ?? []) as Msg[];
const sys = (r: RecordedRequest) => String(msgs(r)[0]?.content ?? '');
const isTask = (r: RecordedRequest, tag: string) => sys(r).includes(`# Task\n\n${tag}`);
const turns = (r: RecordedRequest) => msgs(r).filter((m) => m.role === 'assistant').length;
const lastTool = (r: RecordedRequest) => String([...msgs(r)].reverse().find((m) => m.role === 'tool')?.content ?? '');
const handle = (toolResult: string, p: string) =>
  ((JSON.parse(/\nHandles: (.*)$/.exec(toolResult)?.[1] ?? '{"refs":[]}') as { refs: { ref: string; path: string }[] }).refs.find((h) => h.path === p)?.ref ?? 'ref_missing');

const SOURCES = [
  'source,finding',
  'nature.com,Google showed below-threshold error correction on its Willow chip',
  'research.ibm.com,IBM unveiled the Heron R2 processor with 156 qubits',
  'caltech.edu,Caltech trapped 6100 neutral atoms in a tweezer array',
];

/** The stand-in's plan for all three agents and the condenser. Its words quote what the tools returned. */
function standInScript(req: RecordedRequest): Turn {
  const s = sys(req);
  const usage = (input: number, output: number) => ({ usage: { input, output } });
  if (s.startsWith('You condense a sub-agent result')) {
    // A summary of what it was fed: the bullets at the head of the result it was sent.
    const fed = String(msgs(req).at(-1)?.content ?? '');
    const bullets = fed.split('\n').filter((l) => /^- .*\(source: /.test(l)).slice(0, 3).map((l) => l.slice(2));
    return textTurn(JSON.stringify({ summary: `${bullets.length} breakthroughs with their sources, then supporting notes (stand-in summary of the text it was fed).`, conclusions: bullets, filePaths: [], actionableItems: [], errors: [], keyData: { breakthroughs: bullets.length } }), usage(30_000, 150));
  }
  if (isTask(req, 'COLLECT')) {
    if (turns(req) === 0) {
      const rows = SOURCES.map((l) => `'${l}'`).join(' ');
      return toolCallTurn('shell', { command: `printf '%s\\n' ${rows} > /workspace/out/sources.csv && wc -l < /workspace/out/sources.csv` }, usage(900, 90));
    }
    const lines = Number(/(\d+)\s*$/.exec(lastTool(req).trim())?.[1] ?? 0);
    return toolCallTurn('finish', { answer: `${lines - 1} sources (and a header) in sources.csv.`, files: ['/workspace/out/sources.csv'] }, usage(1000, 30));
  }
  if (isTask(req, 'RESEARCH')) {
    if (turns(req) === 0) return toolCallTurn('read_file', { path: '/artifacts/sources.csv' }, usage(1100, 30));
    // The answer is built from the rows the jail's read_file returned: three bullets, then ~150 KB of notes.
    const rows = lastTool(req).split('\n').filter((l) => /\.(com|edu),/.test(l)).map((l) => l.replace(/^\s*\d+\s*[:|]?\s*/, ''));
    const bullets = rows.map((r) => `- ${r.slice(r.indexOf(',') + 1)} (source: ${r.slice(0, r.indexOf(','))})`);
    const notes = Array.from({ length: 2000 }, (_, i) => (i === 1000 ? '- note 1000: the Heron R2 runs circuits of 5000 two-qubit gates (source: research.ibm.com)' : `- note ${i}: a supporting detail on coherence times, gate fidelities and fabrication yield`));
    return toolCallTurn('finish', { answer: ['## Three breakthroughs of the last 12 months', ...bullets, '## Supporting notes', ...notes].join('\n') }, usage(1500, 40_000));
  }
  switch (turns(req)) {
    case 0:
      return toolCallTurn('spawn', { agent: 'general', task: 'COLLECT the sources for a quantum-computing brief into out/sources.csv (source,finding).', objective: 'the sources the researcher will read' }, usage(2000, 60));
    case 1:
      return toolCallTurn('spawn', {
        agent: 'researcher',
        task: 'RESEARCH: read the sources and summarize the three biggest quantum-computing breakthroughs of the last 12 months as a Markdown bullet list with sources.',
        objective: 'Provide background facts for a 500-word brief.',
        artifact_refs: [handle(lastTool(req), 'out/sources.csv')],
      }, usage(2600, 90));
    case 2:
      return toolCallTurn('ref_grep', { ref: handle(lastTool(req), 'answer.txt'), pattern: 'Heron', maxMatches: 5 }, usage(3500, 40));
    default: {
      const hit = lastTool(req).split('\n').filter((l) => /^\d+:/.test(l)).at(-1)?.replace(/^\d+:- /, '') ?? '';
      return toolCallTurn('finish', { answer: `BRIEF (stand-in): three breakthroughs this year — error correction below threshold, IBM's Heron R2, a 6100-atom array. On Heron: "${hit}".` }, usage(4000, 300));
    }
  }
}

/** How many bytes of tool results each of Atlas's spawn calls put into its conversation (from its transcript ref). */
async function growthPerChild(brig: Awaited<ReturnType<typeof openBrig>>, atlas: RunRecord): Promise<number[]> {
  const refs = await brig.refs.list(atlas.id);
  const t = refs.ok ? refs.value.find((r) => r.path === 'transcript.jsonl') : undefined;
  if (!t) return [];
  const text = await brig.refs.read(t.ref, { offset: 0, length: 4 * 1024 * 1024 });
  if (!text.ok || text.value.text === undefined) return [];
  const spawnCalls = new Set<string>();
  const sizes: number[] = [];
  for (const line of text.value.text.split('\n').filter(Boolean)) {
    const ev = JSON.parse(line) as { t: string; message?: { toolCalls?: { id: string; name: string }[] }; messages?: { role: string; toolCallId?: string; content: string }[] };
    for (const c of ev.message?.toolCalls ?? []) if (c.name === 'spawn') spawnCalls.add(c.id);
    for (const m of ev.messages ?? []) if (m.role === 'tool' && m.toolCallId && spawnCalls.has(m.toolCallId)) sizes.push(Buffer.byteLength(m.content));
  }
  return sizes;
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

/** Atlas: with the configured endpoint (`real`), else with the scripted stand-in. */
async function runAtlas(real: boolean): Promise<void> {
  const standIn = real ? undefined : await startModelServer({ script: standInScript });
  say(bold('== Atlas: a coordinator agent delegates to two agents, each in its own jail (reference 000\'s worked example)'));
  say(
    real
      ? `  model: ${process.env.BRIG_MODEL ?? '(BRIG_MODEL unset)'} at ${process.env.BRIG_MODEL_BASE_URL} (from BRIG_MODEL_*) drives all three agents and condenses`
      : '  model: a SCRIPTED STAND-IN on loopback — not a real model: it replays a fixed plan for Atlas, the collector, the researcher and the condenser, quoting what the jails\' tools returned',
  );
  // The stand-in's env names no GGUF: the local model's step, if any, had its own.
  const { BRIG_MODEL_GGUF: _gguf, ...rest } = process.env;
  const env = real ? process.env : { ...rest, BRIG_MODEL_BASE_URL: standIn!.baseUrl, BRIG_MODEL: 'scripted-stand-in', BRIG_MODEL_API: 'openai-chat', BRIG_MODEL_CONTEXT_WINDOW: '64000' };
  const brig = await openBrig({ mode: 'local', env });
  try {
    say(`  Atlas's task: ${TASK}`);
    const r = await brig.spawn({ task: TASK, kind: 'agent', agent: 'coordinator', label: 'Atlas', timeout: 600_000 });
    if (!r.ok) throw new Error(`${r.error.message} [${r.error.code}] → ${r.error.hint}`);
    const atlas = r.value;
    const cost = (x: RunRecord) => (x.costUsd === null || x.costUsd === undefined ? 'cost unknown (no price configured)' : `$${x.costUsd.toFixed(4)}`);
    say(`  Atlas (run ${atlas.id}): ${atlas.endReason}${atlas.partial ? ' (partial)' : ''}, ${atlas.stepsExecuted} steps, ${atlas.tokens ?? 0} tokens, ${cost(atlas)}`);
    if (atlas.endReason !== 'completed') throw new Error(`Atlas did not complete: ${atlas.error?.message ?? ''} ${atlas.stderrTail}`);
    const children = await brig.list({ parentRunId: atlas.id });
    for (const child of children) {
      const e = await brig.refs.result(child.id);
      if (!e.ok) throw new Error(e.error.message);
      say();
      say(bold(`== what Atlas received from its ${child.agent} child (the envelope every face shows: brig result ${child.id})`));
      say(e.value.envelope.trimEnd());
    }
    const growth = await growthPerChild(brig, atlas);
    say();
    say(bold('== the brief Atlas wrote'));
    say((atlas.result as { answer?: string } | null)?.answer ?? '(no answer)');
    say();
    say(`  Atlas's context grew by ${growth.map((b) => `${b} bytes`).join(' and ')} for its ${growth.length} children (their envelopes and handles); the researcher's whole answer stays on disk as ResultRefs`);
    if (standIn) say(`  the stand-in served ${standIn.requests.length} model calls; none came from inside a jail (they have no network)`);
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

async function main(): Promise<void> {
  const choice = process.env.BRIG_DEMO_MODEL === 'scripted' ? 'scripted' : process.env.BRIG_MODEL_BASE_URL ? 'endpoint' : 'local';
  if (choice === 'local') {
    await mainLocal();
    say();
    say('  (a 135M model cannot coordinate: Atlas, next, runs with the scripted stand-in — set BRIG_MODEL_* to drive it with a real one)');
    say();
  }
  await runAtlas(choice === 'endpoint');
}

main().catch((e: unknown) => {
  process.stderr.write(`agent demo failed: ${(e as Error).message}\n`);
  process.exit(1);
});

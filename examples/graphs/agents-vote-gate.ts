/**
 * `npx tsx examples/graphs/agents-vote-gate.ts`: runs examples/graphs/agents-vote-gate.yaml — a
 * graph of agents, each in its own jail — with brig in this process (openBrig local), approves
 * its gate as the operator (in real use a person does: `brig graph approve GRAPH go`), and
 * prints the graph's one envelope and where its manifest is.
 *
 * Which model drives the agents (the screen says which):
 * - with BRIG_MODEL_BASE_URL (and BRIG_MODEL) set, that model;
 * - without, a SCRIPTED STAND-IN on loopback — not a real model: it replays a fixed plan per
 *   node (notes, a ballot, a release note), using the jails' real tools (write_file, read_file).
 */
import fs from 'node:fs';
import path from 'node:path';
import { openBrig } from '../../src/index.js';
import { startModelServer, toolCallTurn, type RecordedRequest, type Turn } from '../../test/helpers/model-server.js';

const say = (s = '') => process.stdout.write(`${s}\n`);
type Msg = { role: string; content: unknown };
const msgs = (r: RecordedRequest) => (r.body?.messages ?? []) as Msg[];
const head = (r: RecordedRequest) => JSON.stringify(msgs(r).slice(0, 2));
const turns = (r: RecordedRequest) => msgs(r).filter((m) => m.role === 'assistant').length;
const usage = { usage: { input: 1500, output: 120 } };

/** The stand-in's plan: each node writes its file with write_file, then finishes. */
function standIn(r: RecordedRequest): Turn {
  const h = head(r);
  const write = (file: string, content: string): Turn => (turns(r) === 0 ? toolCallTurn('write_file', { path: `out/${file}`, content }, usage) : toolCallTurn('finish', { answer: `wrote out/${file}`, files: [`out/${file}`] }, usage));
  if (h.includes('RESEARCH facts')) return write('facts.md', 'tests: 412 passed\nopen bugs: 2 minor\n');
  if (h.includes('RESEARCH risks')) return write('risks.md', 'risk: a migration step\n');
  if (h.includes('VOTE as bear')) return write('ballot.json', '{"verdict": "HOLD"}');
  if (h.includes('VOTE as')) return write('ballot.json', '{"verdict": "SHIP"}');
  if (h.includes('WRITE the release note')) {
    if (turns(r) === 0) return toolCallTurn('read_file', { path: '/artifacts/facts/facts.md' }, usage);
    const facts = String([...msgs(r)].reverse().find((m) => m.role === 'tool')?.content ?? '');
    if (turns(r) === 1) return toolCallTurn('write_file', { path: 'out/release-note.md', content: `Release note (stand-in, from the facts node's notes):\n${facts.slice(0, 400)}\n` }, usage);
    return toolCallTurn('finish', { answer: 'wrote out/release-note.md', files: ['out/release-note.md'] }, usage);
  }
  return toolCallTurn('finish', { answer: 'nothing to do' }, usage);
}

async function main(): Promise<void> {
  const real = Boolean(process.env.BRIG_MODEL_BASE_URL);
  const server = real ? undefined : await startModelServer({ script: standIn });
  say(
    real
      ? `model: ${process.env.BRIG_MODEL ?? '(BRIG_MODEL unset)'} at ${process.env.BRIG_MODEL_BASE_URL} drives every agent node`
      : 'model: a SCRIPTED STAND-IN on loopback — not a real model: it replays a fixed plan per node (notes, ballots, a release note) with the jails\' real tools',
  );
  const { BRIG_MODEL_GGUF: _gguf, ...rest } = process.env;
  const env = real ? process.env : { ...rest, BRIG_MODEL_BASE_URL: server!.baseUrl, BRIG_MODEL: 'scripted-stand-in', BRIG_MODEL_API: 'openai-chat', BRIG_MODEL_CONTEXT_WINDOW: '32000' };
  const brig = await openBrig({ mode: 'local', env });
  try {
    const text = fs.readFileSync(path.join(import.meta.dirname, 'agents-vote-gate.yaml'), 'utf8');
    const g = brig.graphs!;
    const started = await g.run(text, { source: 'agents-vote-gate.yaml', by: 'example' });
    if (!started.ok) throw new Error(`${started.error.message} → ${started.error.hint}`);
    const id = started.value.graphId;
    say(`graph ${id}: ${started.value.order.join(' → ')}`);
    // Wait for the gate to wait for a person; here the script approves it as the operator.
    for (;;) {
      const s = await g.status(id);
      if (!s.ok) throw s.error;
      const gate = s.value.nodes.find((n) => n.id === 'go')!;
      if (s.value.state !== 'running' || gate.state !== 'pending') {
        if (gate.state === 'running') {
          const tally = s.value.nodes.find((n) => n.id === 'panel')!.tally;
          say(`the panel counted: ${tally ? Object.entries(tally.counts).map(([k, v]) => `${k} ${v}`).join(' · ') : '?'} → ${tally?.winner ?? 'no decision'}`);
          say('the gate `go` waits for a person; this example approves it as the operator (in real use: brig graph approve GRAPH go)');
          const d = await g.decide(id, 'go', { decision: 'approve', by: 'operator', note: 'example run' });
          if (!d.ok) throw d.error;
        }
        break;
      }
      await new Promise((r) => setTimeout(r, 200));
    }
    const end = await g.wait(id, { timeoutMs: 600_000 });
    if (!end.ok) throw end.error;
    say();
    say(end.value.envelope ?? `(no envelope: ${end.value.state})`);
    if (server) say(`the stand-in served ${server.requests.length} model calls; none came from inside a jail (they have no network)`);
    if (end.value.state !== 'completed') process.exitCode = 1;
  } finally {
    await brig.close();
    await server?.close();
  }
}

main().catch((e: unknown) => {
  process.stderr.write(`${e instanceof Error ? e.message : String(e)}\n`);
  process.exitCode = 1;
});

/**
 * Reference 000's worked example, end to end on real jails — with a scripted model server on
 * host loopback standing in for the model (it replays a fixed plan; it is not a real model):
 *
 * Atlas, a coordinator lead, is asked for a brief on quantum computing. It spawns a collector
 * that gathers the sources, hands the collector's sources file (a ResultRef) to a researcher
 * with an objective, and gets back — from a researcher answer of over 100 KB — a Level 2
 * envelope with its footer and drill-in lines. It drills in with ref_grep and writes the
 * brief. Its context grows by at most 2 KB for the researcher.
 */
import { test } from 'node:test';
import assert from 'node:assert/strict';
import { loadConfig } from '../../../src/config/index.js';
import { compose } from '../../../src/daemon/index.js';
import { requireEngine } from '../../helpers/engine.js';
import { startModelServer, textTurn, toolCallTurn, type RecordedRequest } from '../../helpers/model-server.js';
import { freshHome, leftovers } from '../runs/fixture.js';

type Msg = { role: string; content: unknown };
const msgs = (r: RecordedRequest) => r.body.messages as Msg[];
const sys = (r: RecordedRequest) => String(msgs(r)[0]?.content ?? '');
const isTask = (r: RecordedRequest, tag: string) => sys(r).includes(`# Task\n\n${tag}`);
const lastTool = (r: RecordedRequest) => String([...msgs(r)].reverse().find((m) => m.role === 'tool')?.content ?? '');
const turnsOf = (r: RecordedRequest) => msgs(r).filter((m) => m.role === 'assistant').length;
const handles = (toolResult: string) => JSON.parse(/\nHandles: (.*)$/.exec(toolResult)?.[1] ?? '{"refs":[]}') as { runId: string; refs: { ref: string; path: string }[] };

const SOURCES = 'source,about\nnature.com,below-threshold error correction\nresearch.ibm.com,Heron R2\ncaltech.edu,6100-atom array\n';

/** The researcher's answer: three bullets, then ~120 KB of notes with one more Heron fact in the middle. */
function researchAnswer(): string {
  const notes = Array.from({ length: 2000 }, (_, i) =>
    i === 1000 ? '- note 1000: IBM Heron R2 runs circuits of 5000 two-qubit gates (source: research.ibm.com)' : `- note ${i}: a supporting detail about qubit coherence, error rates and fabrication yield`,
  );
  return [
    '## Quantum computing: three breakthroughs of the last 12 months',
    '- Google demonstrated below-threshold error correction on its Willow chip (source: nature.com)',
    '- IBM unveiled the Heron R2 processor with 156 qubits (source: research.ibm.com)',
    '- A team at Caltech reported a 6100-atom tweezer array (source: caltech.edu)',
    '## Supporting notes',
    ...notes,
  ].join('\n');
}

// req: envelope:no-transcript envelope:bounded
test('[INV-3] Atlas: a lead delegates to a collector and a researcher, hands over a ref, gets a Level 2 envelope for a >100 KB answer, drills in with ref_grep, writes the brief — its context grows ≤ 2 KB for the researcher', async (t) => {
  if (!(await requireEngine(t))) return;
  const home = await freshHome(t);
  const answer = researchAnswer();
  assert.ok(answer.length > 100_000);
  const m = await startModelServer({
    script: (req) => {
      const s = sys(req);
      if (s.startsWith('You condense a sub-agent result')) {
        return textTurn(JSON.stringify({
          summary: 'Three quantum-computing breakthroughs of the last 12 months, each with its source; 2000 supporting notes follow.',
          conclusions: ['Google: below-threshold error correction on Willow (nature.com)', 'IBM: Heron R2, 156 qubits (research.ibm.com)', 'Caltech: a 6100-atom tweezer array (caltech.edu)'],
          filePaths: [],
          actionableItems: [],
          errors: [],
          keyData: { breakthroughs: 3 },
        }), { usage: { input: 30_000, output: 120 } });
      }
      if (isTask(req, 'COLLECTOR')) {
        if (turnsOf(req) === 0) return toolCallTurn('write_file', { path: '/workspace/out/sources.csv', content: SOURCES }, { usage: { input: 600, output: 80 } });
        return toolCallTurn('finish', { answer: 'Three sources in sources.csv.', files: ['/workspace/out/sources.csv'] }, { usage: { input: 700, output: 20 } });
      }
      if (isTask(req, 'Search the sources')) {
        if (turnsOf(req) === 0) return toolCallTurn('read_file', { path: '/artifacts/sources.csv' }, { usage: { input: 800, output: 30 } });
        return toolCallTurn('finish', { answer }, { usage: { input: 1200, output: 30_000 } });
      }
      // Atlas, the lead.
      switch (turnsOf(req)) {
        case 0:
          return toolCallTurn('spawn', { agent: 'general', task: 'COLLECTOR: write the three sources for a quantum-computing brief to out/sources.csv', objective: 'the sources the researcher will read' }, { usage: { input: 1500, output: 60 } });
        case 1: {
          const sources = handles(lastTool(req)).refs.find((h) => h.path === 'out/sources.csv')?.ref ?? 'ref_missing';
          return toolCallTurn('spawn', {
            agent: 'researcher',
            task: 'Search the sources and summarize the three biggest quantum-computing breakthroughs of the last 12 months. Return a Markdown bullet list with sources.',
            objective: 'Provide background facts for a 500-word brief.',
            artifact_refs: [sources],
            include_parent_history: 'none',
          }, { usage: { input: 2500, output: 90 } });
        }
        case 2: {
          const text = handles(lastTool(req)).refs.find((h) => h.path === 'answer.txt')?.ref ?? 'ref_missing';
          return toolCallTurn('ref_grep', { ref: text, pattern: 'Heron', maxMatches: 5 }, { usage: { input: 3600, output: 40 } });
        }
        default: {
          const lines = lastTool(req).split('\n').filter((l) => /^\d+:/.test(l));
          return toolCallTurn('finish', { answer: `BRIEF: Quantum computing moved fast this year. Google showed error correction below threshold; IBM's Heron R2 arrived (${lines.length} lines on it in the research, e.g. "${lines.at(-1)?.replace(/^\d+:/, '') ?? ''}"); Caltech trapped 6100 atoms.` }, { usage: { input: 4000, output: 300 } });
        }
      }
    },
  });
  t.after(() => m.close());
  const c = await compose(loadConfig({ BRIG_HOME: home, BRIG_MODEL_BASE_URL: m.baseUrl, BRIG_MODEL: 'scripted-stand-in', BRIG_MODEL_CONTEXT_WINDOW: '64000' }), { tickMs: 200, reconcile: true });
  await c.supervisor.start();
  try {
    const r = await c.supervisor.spawn({ task: 'ATLAS: compile a 500-word brief on quantum computing', kind: 'agent', agent: 'coordinator', timeout: 300_000 });
    assert.ok(r.ok, JSON.stringify(!r.ok && r.error));
    const atlas = r.value;
    assert.equal(atlas.endReason, 'completed', `${atlas.error?.message} ${atlas.stderrTail}`);
    assert.deepEqual(m.problems, []);
    const kids = await c.supervisor.list({ parentRunId: atlas.id });
    assert.deepEqual(kids.map((k) => [k.agent, k.endReason]), [['general', 'completed'], ['researcher', 'completed']]);
    const researcher = kids[1]!;

    // The researcher read the collector's file through the hand-off, not through Atlas.
    const read = m.requests.find((q) => isTask(q, 'Search the sources') && turnsOf(q) === 1)!;
    assert.match(lastTool(read), /research\.ibm\.com,Heron R2/);

    // What Atlas received for the researcher: the Level 2 envelope, its footer, its drill-in lines, its handles.
    const atlasReqs = m.requests.filter((q) => isTask(q, 'ATLAS'));
    const envelope = lastTool(atlasReqs.find((q) => turnsOf(q) === 2)!);
    assert.match(envelope, /^\[Subagent Result: researcher\]\nStatus: Completed\nCondensation: Level 2 \(LLM summary\)\n\nSummary: Three quantum-computing breakthroughs/);
    assert.match(envelope, /Conclusions:\n- Google: below-threshold error correction on Willow \(nature\.com\)\n- IBM: Heron R2/);
    assert.match(envelope, /\n---\nRuntime: [\d.]+s \| Steps: 2 \| Tokens: 32030 \| Cost: unknown\nFull results \(drill in with read\/grep\/jq\/sql\/jsonpath\):\n/);
    assert.match(envelope, /\n- answer\.txt — ref_[a-z2-7]{26} text, \d{3} KB, [\d,]+ lines?\n/);
    assert.match(envelope, new RegExp(`\\nSession: ${atlas.id}/${researcher.id}\\nHandles: \\{`));
    const grown = Buffer.byteLength(envelope);
    t.diagnostic(`Atlas's context grew by ${grown} bytes for the researcher (an answer of ${Buffer.byteLength(answer)} bytes)`);
    const collectorGrowth = Buffer.byteLength(lastTool(atlasReqs.find((q) => turnsOf(q) === 1)!));
    t.diagnostic(`…and by ${collectorGrowth} bytes for the collector`);
    assert.ok(grown <= 2048, `≤ 2 KB for the researcher (${grown})`);
    assert.doesNotMatch(envelope, /note 1000/, 'the answer stayed on disk');

    // The drill-in: ref_grep over the answer's own lines found the fact buried in the middle.
    const grep = lastTool(atlasReqs.find((q) => turnsOf(q) === 3)!);
    assert.match(grep, /\n1006:- note 1000: IBM Heron R2 runs circuits of 5000 two-qubit gates/);
    const brief = (atlas.result as { answer: string }).answer;
    assert.match(brief, /^BRIEF: .*Heron R2 arrived \(2 lines on it in the research, e\.g\. "- note 1000: IBM Heron R2 runs circuits/);

    // The same envelope is what the operator's faces show for the researcher (cast once, kept).
    const kept = await c.refs.result(researcher.id);
    assert.ok(kept.ok);
    assert.ok(envelope.startsWith(kept.value.envelope.trimEnd()), 'the lead got the envelope `brig result` shows');
  } finally {
    await c.close();
  }
  assert.deepEqual(await leftovers(home, { released: true }), []);
});

/**
 * `make demo`, the agent step: one LLM agent child at work in its own jail. Its whole tool
 * loop runs inside the jail; every model call goes through the broker to this process, which
 * holds the model endpoint (and the key, when there is one) — the jail never sees either.
 *
 * With BRIG_MODEL_BASE_URL (and BRIG_MODEL) set, that model drives the agent. Without them,
 * a scripted stand-in model server on loopback drives it — not a real model: it replays a
 * fixed plan and quotes what the jail's tools really returned. The screen says which.
 */
import { openBrig } from '../../src/index.js';
import { startModelServer, textTurn, toolCallTurn, type RecordedRequest } from '../../test/helpers/model-server.js';

const bold = (s: string) => (process.stdout.isTTY ? `\x1b[1m${s}\x1b[0m` : s);
const say = (s = '') => process.stdout.write(`${s}\n`);

const TASK = 'Make a file of the squares of 1..200 under /workspace/out, then tell me how many of them end in 6 and which file holds them.';

/** The last tool result the stand-in was sent: what the jail's shell printed. */
function lastToolResult(req: RecordedRequest): string {
  const msgs = (req.body?.messages ?? []) as { role: string; content: unknown }[];
  return String([...msgs].reverse().find((m) => m.role === 'tool')?.content ?? '');
}

async function main(): Promise<void> {
  const real = Boolean(process.env.BRIG_MODEL_BASE_URL);
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

main().catch((e: unknown) => {
  process.stderr.write(`agent demo failed: ${(e as Error).message}\n`);
  process.exit(1);
});

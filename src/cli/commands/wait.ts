import { elapsedMs, type Brig, type RunRecord } from '../../light.js';
import { BrigError } from '../../util/errors.js';
import { JSON_FLAG, numberFlag, parseArgs, writeJson, type CliIO, type Command, durationFlag } from '../command.js';
import { openBrig } from '../connect.js';
import { exitForRuns } from '../exit-codes.js';
import { fmtMs, runBlock, runJsonOf } from '../run-view.js';

/** On a terminal: one status line per run, redrawn on every event (elapsed, steps, children). */
async function live(io: CliIO, sup: Brig, ids: string[], signal: AbortSignal): Promise<void> {
  const draw = async () => {
    const all = await sup.list();
    const lines = ids.map((id) => {
      const r = all.find((x) => x.id === id);
      if (!r) return `${id}  unknown`;
      const kids = all.filter((x) => x.parentRunId === id);
      const liveKids = kids.filter((x) => x.status !== 'ended').length;
      return `${id}  ${r.endReason ?? r.status}  ${fmtMs(elapsedMs(r, new Date()))}  steps ${r.stepsExecuted}  children ${liveKids}/${kids.length}`;
    });
    io.stdout.write(`\r\x1b[K${lines.join(' | ')}`);
  };
  const tick = setInterval(() => void draw().catch(() => {}), 1000);
  try {
    await draw();
    for await (const _ of sup.events({ signal })) await draw();
  } catch {
    // the stream ends when the waits end
  } finally {
    clearInterval(tick);
    io.stdout.write('\n');
  }
}

const command: Command = {
  name: 'wait',
  summary: 'Wait for runs to end; shows live progress on a terminal.',
  usage: 'brig wait RUN... [FLAGS]',
  flags: [{ name: 'timeout', value: 'DURATION', description: 'stop waiting after this long (the runs go on; exit 8) (90s, 10m; a bare number: seconds)' }, JSON_FLAG],
  examples: ['brig wait r-0123456789abcdef', 'brig wait RUN1 RUN2 --timeout 60', 'brig wait RUN --json'],
  async run(args, io) {
    const p = parseArgs(args, command.flags);
    if (p.positionals.length === 0) throw new BrigError('invalid_input', 'wait needs at least one RUN', { hint: '`brig list` shows run ids.' });
    const t = durationFlag(p, 'timeout', 's');
    const brig = await openBrig(io);
    const ac = new AbortController();
    try {
      const drawing = io.isTTY && !p.bools.has('json') ? live(io, brig, p.positionals, ac.signal) : Promise.resolve();
      const results: RunRecord[] = [];
      await Promise.all(
        p.positionals.map(async (id, i) => {
          const r = await brig.wait(id, t ? { timeoutMs: Math.round(t * 1000) } : {});
          if (!r.ok) throw r.error;
          results[i] = r.value;
        }),
      ).finally(() => ac.abort());
      await drawing;
      if (p.bools.has('json')) writeJson(io, { runs: await Promise.all(results.map((r) => runJsonOf(brig, r))) });
      else for (const r of results) io.stdout.write(runBlock(r));
      const code = exitForRuns(results, { notEnded: 'timedOut' });
      const going = results.filter((r) => r.status !== 'ended').map((r) => r.id);
      if (going.length > 0) io.stderr.write(`brig: wait timed out; still going: ${going.join(' ')}\n`);
      return code;
    } finally {
      await brig.close();
    }
  },
};
export default command;

import { BrigError } from '../../util/errors.js';
import { JSON_FLAG, flag, numberFlag, parseArgs, writeJson, type Command, durationFlag } from '../command.js';
import { openBrig } from '../connect.js';

const command: Command = {
  name: 'send',
  summary: 'Send a message to a running agent child; with --mode wait or ping-pong, print its next replies.',
  usage: 'brig send RUN MESSAGE [--mode fire-and-forget|wait|ping-pong] [--timeout DURATION] [--max-turns N] [--json]',
  flags: [
    { name: 'mode', value: 'MODE', description: 'fire-and-forget (default): queue it; wait: its next reply; ping-pong: up to --max-turns replies', choices: ['fire-and-forget', 'wait', 'ping-pong'] },
    { name: 'timeout', value: 'DURATION', description: 'how long wait / ping-pong wait for replies (at most 50) (90s, 10m; a bare number: seconds)' },
    { name: 'max-turns', value: 'N', description: 'ping-pong: replies to collect, 0–5 (default 3)' },
    JSON_FLAG,
  ],
  examples: ["brig send r-0123456789abcdef 'focus on the failing test first' --mode wait"],
  async run(args, io) {
    const p = parseArgs(args, command.flags);
    const [id, ...words] = p.positionals;
    if (!id || words.length === 0) throw new BrigError('invalid_input', 'send takes a RUN and a MESSAGE');
    const mode = flag(p, 'mode') as 'fire-and-forget' | 'wait' | 'ping-pong' | undefined;
    const timeout = durationFlag(p, 'timeout', 's');
    const turns = flag(p, 'max-turns');
    const brig = await openBrig(io);
    try {
      const r = await brig.send(id, words.join(' '), {
        ...(mode ? { mode } : {}),
        ...(timeout ? { timeoutMs: Math.round(timeout * 1000) } : {}),
        ...(turns !== undefined ? { maxTurns: Number(turns) } : {}),
      });
      if (!r.ok) throw r.error;
      const s = r.value;
      if (p.bools.has('json')) writeJson(io, { send: s });
      else {
        io.stdout.write(`sent to ${id} (delivered at its next step)\n`);
        for (const rep of s.replies) io.stdout.write(`--- reply at step ${rep.step}${rep.toolCalls.length ? ` (calls ${rep.toolCalls.join(', ')})` : ''}\n${rep.text}\n`);
        if (s.timedOut) io.stdout.write(`(no more replies within the timeout; the run is ${s.status})\n`);
        else if (s.status === 'ended') io.stdout.write(`(the run ended: ${s.endReason})\n`);
      }
      return 0;
    } finally {
      await brig.close();
    }
  },
};
export default command;

import { BrigError } from '../../util/errors.js';
import { JSON_FLAG, flag, numberFlag, parseArgs, writeJson, type Command, durationFlag } from '../command.js';
import { openBrig } from '../connect.js';

const command: Command = {
  name: 'send',
  summary: 'Send a message to a running agent child; --mode wait prints its next reply, ping-pong one round of a conversation.',
  usage: 'brig send RUN MESSAGE [--mode fire-and-forget|wait|ping-pong] [--timeout DURATION] [--max-turns N] [--conversation ID] [--json]',
  flags: [
    { name: 'mode', value: 'MODE', description: 'fire-and-forget (default): queue it; wait: its next reply; ping-pong: its reply and a conversation id to answer with --conversation', choices: ['fire-and-forget', 'wait', 'ping-pong'] },
    { name: 'timeout', value: 'DURATION', description: 'how long wait / ping-pong wait for the reply (at most 50 s) (90s, 10m; a bare number: seconds)' },
    { name: 'max-turns', value: 'N', description: 'ping-pong: turns of the conversation, 0–5 (default 3)' },
    { name: 'conversation', value: 'ID', description: 'ping-pong: MESSAGE answers the reply this conversation returned last' },
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
    const conversation = flag(p, 'conversation');
    const brig = await openBrig(io);
    try {
      const r = await brig.send(id, words.join(' '), {
        ...(mode ? { mode } : {}),
        ...(timeout ? { timeoutMs: Math.round(timeout * 1000) } : {}),
        ...(turns !== undefined ? { maxTurns: Number(turns) } : {}),
        ...(conversation !== undefined ? { conversation } : {}),
      });
      if (!r.ok) throw r.error;
      const s = r.value;
      if (p.bools.has('json')) writeJson(io, { send: s });
      else {
        io.stdout.write(`sent to ${id} (delivered at its next step)\n`);
        for (const rep of s.replies) io.stdout.write(`--- reply at step ${rep.step}${rep.toolCalls.length ? ` (calls ${rep.toolCalls.join(', ')})` : ''}\n${rep.text}\n`);
        if (s.timedOut) io.stdout.write(`(no more replies within the timeout; the run is ${s.status})\n`);
        else if (s.status === 'ended') io.stdout.write(`(the run ended: ${s.endReason})\n`);
        const c = s.conversation;
        if (c?.open) io.stdout.write(`conversation ${c.id}: turn ${c.turn} of ${c.maxTurns} -- answer with: brig send ${id} ANSWER --conversation ${c.id}\n`);
        else if (c) io.stdout.write(`(conversation ${c.id} ended at turn ${c.turn} of ${c.maxTurns})\n`);
      }
      return 0;
    } finally {
      await brig.close();
    }
  },
};
export default command;

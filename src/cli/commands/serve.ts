import { loadConfig } from '../../config/index.js';
import { startDaemon } from '../../daemon/index.js';
import { parseArgs, writeJson, type Command } from '../command.js';

const command: Command = {
  name: 'serve',
  summary: 'Run the supervisor as a daemon on $BRIG_HOME/brig.sock (HTTP API /v1, SSE events).',
  usage: 'brig serve [--json]',
  async run(args, io) {
    const p = parseArgs(args, { booleans: ['json'] });
    const d = await startDaemon(loadConfig(io.env));
    if (p.bools.has('json')) writeJson(io, { socket: d.socketPath, reconcile: d.report });
    else {
      io.stdout.write(`brig serving on ${d.socketPath}\n`);
      const r = d.report;
      io.stdout.write(`reconciled: ${r.reattached.length} reattached, ${r.ghostSwept.length} ghost-swept, ${r.swept.containers} containers and ${r.swept.volumes} volumes swept\n`);
    }
    await new Promise<void>((resolve) => {
      process.once('SIGINT', resolve);
      process.once('SIGTERM', resolve);
    });
    await d.close();
    return 0;
  },
};
export default command;

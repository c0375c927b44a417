import { loadConfig } from '../../config/index.js';
import { startDaemon } from '../../daemon/index.js';
import { DEFAULT_SETTINGS, type SupervisorSettings } from '../../runs/index.js';
import { numberFlag, parseArgs, writeJson, type Command, type ParsedArgs } from '../command.js';

/**
 * The daemon's tunables from its flags. `maxConcurrent` caps running children across the
 * whole daemon (default 5): raising `--max-children` past it alone would change nothing, so
 * it raises the global cap with it unless `--max-concurrent` says otherwise.
 */
export function serveSettings(p: ParsedArgs): Partial<SupervisorSettings> {
  const settings: Partial<SupervisorSettings> = {};
  const pi = numberFlag(p, 'progress-interval');
  if (pi) settings.progressIntervalMs = Math.round(pi * 1000);
  const sk = numberFlag(p, 'stuck-kill');
  if (sk) settings.stuckKillThresholdMs = Math.round(sk * 1000);
  const mc = numberFlag(p, 'max-children');
  if (mc) settings.maxChildrenPerAgent = Math.max(1, Math.round(mc));
  const mq = numberFlag(p, 'max-queued');
  if (mq) settings.maxQueued = Math.max(1, Math.round(mq));
  const all = numberFlag(p, 'max-concurrent');
  if (all) settings.maxConcurrent = Math.max(1, Math.round(all));
  else if (settings.maxChildrenPerAgent !== undefined) settings.maxConcurrent = Math.max(DEFAULT_SETTINGS.maxConcurrent, settings.maxChildrenPerAgent);
  if (p.bools.has('no-steer-inject')) settings.steerInject = false;
  return settings;
}

const command: Command = {
  name: 'serve',
  summary: 'Run the supervisor as a daemon on $BRIG_HOME/brig.sock (HTTP API /v1, SSE events).',
  usage: 'brig serve [--progress-interval SECONDS] [--stuck-kill SECONDS] [--max-children N] [--max-concurrent N] [--max-queued N] [--no-steer-inject] [--json]',
  async run(args, io) {
    const p = parseArgs(args, { valued: ['progress-interval', 'stuck-kill', 'max-children', 'max-queued', 'max-concurrent'], booleans: ['json', 'no-steer-inject'] });
    const settings = serveSettings(p);
    const d = await startDaemon(loadConfig(io.env), { settings });
    if (p.bools.has('json')) writeJson(io, { socket: d.socketPath, reconcile: d.report });
    else {
      io.stdout.write(`brig serving on ${d.socketPath}\n`);
      const r = d.report;
      io.stdout.write(`reconciled: ${r.reattached.length} reattached, ${r.ghostSwept.length} ghost-swept, ${r.swept.containers} containers and ${r.swept.volumes} volumes swept\n`);
      if (r.resumable?.length) io.stdout.write(`resumable: ${r.resumable.join(' ')}\n`);
      for (const o of r.orphaned ?? []) io.stdout.write(`no longer resumable: ${o.runId} (${o.reason})\n`);
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

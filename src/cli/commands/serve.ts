import { SUPERVISOR_DEFAULTS, loadConfig, startDaemon, type SupervisorSettings } from '../../index.js';
import fs from 'node:fs';
import path from 'node:path';
import { BrigError } from '../../util/errors.js';
import { createLog, LOG_LEVELS, type LogLevel } from '../../util/log.js';
import { readVersion } from './version.js';
import { JSON_FLAG, flag, numberFlag, parseArgs, writeJson, type Command, type ParsedArgs, durationFlag } from '../command.js';

/**
 * The daemon's tunables from its flags. `maxConcurrent` caps running children across the
 * whole daemon (default 5): raising `--max-children` past it alone would change nothing, so
 * it raises the global cap with it unless `--max-concurrent` says otherwise.
 */
export function serveSettings(p: ParsedArgs): Partial<SupervisorSettings> {
  const settings: Partial<SupervisorSettings> = {};
  const pi = durationFlag(p, 'progress-interval', 's');
  if (pi) settings.progressIntervalMs = Math.round(pi * 1000);
  const sk = durationFlag(p, 'stuck-kill', 's');
  if (sk) settings.stuckKillThresholdMs = Math.round(sk * 1000);
  const mc = numberFlag(p, 'max-children');
  if (mc) settings.maxChildrenPerAgent = Math.max(1, Math.round(mc));
  const mq = numberFlag(p, 'max-queued');
  if (mq) settings.maxQueued = Math.max(1, Math.round(mq));
  const all = numberFlag(p, 'max-concurrent');
  if (all) settings.maxConcurrent = Math.max(1, Math.round(all));
  else if (settings.maxChildrenPerAgent !== undefined) settings.maxConcurrent = Math.max(SUPERVISOR_DEFAULTS.maxConcurrent, settings.maxChildrenPerAgent);
  if (p.bools.has('no-steer-inject')) settings.steerInject = false;
  const minFree = flag(p, 'min-free-mb');
  if (minFree !== undefined) {
    const mb = Number(minFree);
    if (!(Number.isFinite(mb) && mb >= 0)) throw new BrigError('invalid_input', `--min-free-mb takes a number of MB from 0, not ${JSON.stringify(minFree.slice(0, 40))}`, { hint: 'The space kept free in $BRIG_HOME: `brig serve --min-free-mb 256` (0: no reserve).' });
    settings.minFreeBytes = Math.round(mb * 1024 * 1024);
  }
  const drain = durationFlag(p, 'drain', 's');
  if (drain !== undefined) settings.drainMs = Math.max(0, Math.round(drain * 1000));
  return settings;
}

const DRAIN_QUEUE = ['keep', 'kill'] as const;

/**
 * Where the log goes: `--log-file PATH`; `-` for stderr; without the flag stderr, unless stderr
 * is a terminal — `brig serve &` would write over the operator's prompt — then
 * $BRIG_HOME/brig.log (said once on stdout).
 */
export function logFileFor(given: string | undefined, io: { stderr: NodeJS.WritableStream }, home: string): string | undefined {
  if (given === '-') return undefined;
  if (given !== undefined) return path.resolve(given);
  if ((io.stderr as { isTTY?: boolean }).isTTY !== true) return undefined;
  fs.mkdirSync(home, { recursive: true, mode: 0o700 });
  return path.join(home, 'brig.log');
}

const command: Command = {
  name: 'serve',
  summary: 'Run the supervisor as a daemon on $BRIG_HOME/brig.sock (HTTP API /v1, SSE events).',
  usage: 'brig serve [FLAGS] [--ui [ADDR]]',
  flags: [
    { name: 'progress-interval', value: 'DURATION', description: 'how often a running child is asked for progress (90s, 10m; a bare number: seconds)' },
    { name: 'stuck-kill', value: 'DURATION', description: 'kill a child that has shown no progress for this long (90s, 10m; a bare number: seconds)' },
    { name: 'max-children', value: 'N', description: 'active children per parent (raises --max-concurrent with it)' },
    { name: 'max-concurrent', value: 'N', description: 'running children across the daemon (default 5)' },
    { name: 'max-queued', value: 'N', description: 'children waiting for a slot before spawns are refused' },
    { name: 'drain', value: 'DURATION', description: 'on SIGTERM/Ctrl-C, let running children finish this long before killing them (default 30) (90s, 10m; a bare number: seconds)' },
    { name: 'drain-queue', value: 'keep|kill', choices: DRAIN_QUEUE, description: 'on SIGTERM/Ctrl-C, what happens to queued runs: kept queued on disk for the next start (default), or killed' },
    { name: 'min-free-mb', value: 'MB', description: 'keep this much free in $BRIG_HOME: below it spawns are refused storage_full and collections skip what would not fit (default 64)' },
    { name: 'driver', value: 'docker|kubernetes', choices: ['docker', 'kubernetes'], description: 'where jails run (default docker, or BRIG_DRIVER / config.yaml `driver:`); kubernetes takes its cluster from KUBECONFIG, BRIG_K8S_IMAGE and BRIG_K8S_WORKSPACE_CLASS (docs/kubernetes.md)' },
    { name: 'warm', value: 'N', description: 'keep up to N started, verified jails ready per limit shape (single-use; N of the default spawn\'s, a shape asked for since from 1 doubling with use; default 0: each jail is made at spawn)' },
    { name: 'no-steer-inject', description: 'steer by kill + respawn instead of injecting at the next step' },
    { name: 'ui', description: 'also serve the web console on loopback behind a random token; prints `console: URL`' },
    { name: 'ui-addr', value: 'ADDR', description: 'the console\'s loopback address (default 127.0.0.1 and a free port)' },
    { name: 'log-level', value: 'LEVEL', choices: LOG_LEVELS, description: `the daemon's log level (${LOG_LEVELS.join(', ')}; default info)` },
    { name: 'log-file', value: 'PATH', description: 'log JSON lines to this file, rotated by size (default: stderr, or $BRIG_HOME/brig.log when stderr is a terminal; `-`: stderr always)' },
    { name: 'log-max-mb', value: 'MB', description: 'rotate --log-file past this size (default 10; 5 older files kept)' },
    JSON_FLAG,
  ],
  examples: ['brig serve &', 'brig serve --max-concurrent 8 --drain 60', 'brig serve --warm 4', 'brig serve --ui', 'brig serve --ui 127.0.0.1:8080', 'brig serve --log-file ~/.brig/brig.log --log-level debug'],
  async run(args, io) {
    const p = parseArgs(args, command.flags);
    const settings = serveSettings(p);
    const level = flag(p, 'log-level') ?? 'info';
    if (!(LOG_LEVELS as readonly string[]).includes(level)) throw new BrigError('invalid_input', `unknown log level ${level}`, { hint: `Known: ${LOG_LEVELS.join(', ')}.` });
    const driver = flag(p, 'driver');
    const cfg = loadConfig(driver ? { ...io.env, BRIG_DRIVER: driver } : io.env);
    const file = logFileFor(flag(p, 'log-file'), io, cfg.home);
    const maxMb = numberFlag(p, 'log-max-mb');
    if (maxMb !== undefined && !(maxMb > 0)) throw new BrigError('invalid_input', '--log-max-mb must be a positive number of MB');
    const log = createLog({
      level: level as LogLevel,
      ...(file ? { file } : {}),
      ...(maxMb !== undefined ? { maxBytes: Math.round(maxMb * 1024 * 1024) } : {}),
      // The process's own stderr is written synchronously by fd (no line lost on a crash); any
      // other (an in-process caller's) through its stream.
      ...(!file && (io.stderr as { fd?: number }).fd !== 2 ? { stream: { write: (line: string) => void io.stderr.write(line) } } : {}),
    });
    // `--ui [ADDR]`: an address right after --ui is the console's (or --ui-addr ADDR).
    if (p.positionals.length > 0 && !p.bools.has('ui')) throw new BrigError('invalid_input', `brig serve takes no argument ${JSON.stringify(p.positionals[0]!.slice(0, 40))}`, { hint: 'An address goes after --ui: `brig serve --ui 127.0.0.1:8080`.' });
    if (p.positionals.length > 1) throw new BrigError('invalid_input', 'give the console one address', { hint: '`brig serve --ui 127.0.0.1:8080`' });
    const uiAddr = flag(p, 'ui-addr') ?? p.positionals[0];
    const ui = p.bools.has('ui') || uiAddr !== undefined ? (uiAddr ?? '') : undefined;
    const warm = numberFlag(p, 'warm');
    if (warm !== undefined && !(Number.isInteger(warm) && warm >= 0 && warm <= 64)) {
      throw new BrigError('invalid_input', `--warm takes a whole number of jails from 0 to 64, not ${warm}`, { hint: 'Each warm jail holds its limits\' memory and a workspace disk while it waits: `brig serve --warm 4`.' });
    }
    const queue = flag(p, 'drain-queue') ?? 'keep';
    if (!(DRAIN_QUEUE as readonly string[]).includes(queue)) throw new BrigError('invalid_input', `--drain-queue takes keep or kill, not ${queue.slice(0, 40)}`, { hint: '`brig serve --drain-queue kill` ends queued runs at a stop; keep (the default) leaves them for the next start.' });
    const d = await startDaemon(cfg, { settings, log, version: readVersion(), ...(ui !== undefined ? { ui } : {}), ...(warm ? { warm } : {}) });
    // It serves now; what the start reconciled is said once the slow rest of it is done.
    if (!p.bools.has('json')) {
      io.stdout.write(`brig serving on ${d.socketPath}\n`);
      if (file) io.stdout.write(`log: ${file}\n`);
      if (d.consoleUrl) io.stdout.write(`console: ${d.consoleUrl}\n`);
    }
    void d.reconciled.then((r) => {
      if (p.bools.has('json')) return writeJson(io, { socket: d.socketPath, reconcile: r, ...(d.consoleUrl ? { console: d.consoleUrl } : {}) });
      if (d.composed.warm) io.stdout.write(`warm pool: ${d.composed.warm.size} jails per shape, filling\n`);
      io.stdout.write(`reconciled: ${r.reattached.length} reattached, ${r.requeued?.length ?? 0} queued again, ${r.ghostSwept.length} ghost-swept, ${r.swept.containers} containers and ${r.swept.volumes} volumes swept\n`);
      if (r.corrupt?.length) io.stdout.write(`unreadable run records (left as they are, ledgered run.corrupt): ${r.corrupt.slice(0, 10).join(' ')}${r.corrupt.length > 10 ? ` and ${r.corrupt.length - 10} more` : ''}\n`);
      if (r.resumable?.length) io.stdout.write(`resumable: ${r.resumable.join(' ')}\n`);
      for (const o of r.orphaned ?? []) io.stdout.write(`no longer resumable: ${o.runId} (${o.reason})\n`);
    });
    // SIGTERM or SIGINT: drain (running children may finish within --drain, default 30 s),
    // then kill the rest; queued runs are kept for the next start (--drain-queue kill: killed);
    // a second signal ends the drain at once.
    const cut = new AbortController();
    await new Promise<void>((resolve) => {
      const first = () => {
        process.off('SIGINT', first);
        process.off('SIGTERM', first);
        process.once('SIGINT', () => cut.abort());
        process.once('SIGTERM', () => cut.abort());
        resolve();
      };
      process.on('SIGINT', first);
      process.on('SIGTERM', first);
    });
    io.stderr.write('brig: shutting down: admitting nothing new (a second signal kills the running children now)\n');
    const rep = await d.shutdown({
      signal: cut.signal,
      queue: queue as (typeof DRAIN_QUEUE)[number],
      onWaiting: (runs, leftMs) => {
        const ids = runs.slice(0, 8).map((r) => `${r.id} (${r.status})`).join(', ');
        io.stderr.write(`brig: draining: waiting for ${runs.length} run(s), ${Math.ceil(leftMs / 1000)} s left: ${ids}${runs.length > 8 ? ', …' : ''}\n`);
      },
    });
    io.stderr.write(`brig: stopped: ${rep.drained.length} run(s) finished while draining, ${rep.killed.length} killed (killedBy system), ${rep.kept.length} queued run(s) kept for the next start\n`);
    if (rep.unfinished.length > 0) io.stderr.write(`brig: the engine did not answer: ${rep.unfinished.length} killed run(s) are recorded and will be collected and released at the next start: ${rep.unfinished.slice(0, 8).join(' ')}\n`);
    return 0;
  },
};
export default command;

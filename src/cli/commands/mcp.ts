import { format } from 'node:util';
import { loadConfig, openBrig, type Brig } from '../../index.js';
import { BrigError } from '../../util/errors.js';
import { parseArgs, type CliIO, type Command } from '../command.js';
import { readVersion } from './version.js';

/**
 * `brig mcp`: brig as an MCP server over stdio (src/mcp/). stdout is the protocol: nothing
 * else may be written there, so this command logs to stderr and sends console output there
 * too. It talks to the daemon when one answers; else it runs a supervisor in this process
 * that holds only the runs it spawns (like `brig spawn` without a daemon, so several
 * sessions can share a home) and kills those still going when the session ends.
 */
const command: Command = {
  name: 'mcp',
  summary: 'Serve brig to an MCP client (Claude Code, …) over stdio: spawn, wait, result and ref_* tools; ResultRefs as resources.',
  usage: 'brig mcp [--read-only | --allow-gate-decisions]',
  flags: [
    { name: 'read-only', description: 'offer only the tools that read (no spawn, steer or kill) and start no supervisor' },
    { name: 'allow-gate-decisions', description: "also offer graph_decide: the client may approve or reject a graph's waiting gate (as `mcp`); off by default — a model can be prompt-injected" },
  ],
  examples: ['brig mcp', 'claude mcp add brig -- brig mcp', 'brig mcp --read-only', 'brig mcp --allow-gate-decisions'],
  async run(args, io) {
    const p = parseArgs(args, command.flags);
    if (p.positionals.length > 0 || p.rest.length > 0) throw new BrigError('invalid_input', 'brig mcp takes no arguments', { hint: command.usage });
    const readOnly = p.bools.has('read-only');
    const gateDecisions = p.bools.has('allow-gate-decisions');
    if (readOnly && gateDecisions) throw new BrigError('invalid_input', '--read-only and --allow-gate-decisions exclude each other', { hint: command.usage });
    const log = (line: string) => io.stderr.write(`brig mcp: ${line}\n`);
    const restoreConsole = consoleToStderr(io);
    try {
      return await serve(io, readOnly, log, gateDecisions);
    } finally {
      restoreConsole();
    }
  },
};

async function serve(io: CliIO, readOnly: boolean, log: (line: string) => void, gateDecisions = false): Promise<number> {
  const { createMcpServer, serveStdio } = await import('../../mcp/index.js');
  const brig = await openBrig({ env: io.env, mode: 'auto', fallback: readOnly ? 'read' : 'local', reconcile: false, caller: 'mcp' });
  // A signal (or the client's SIGTERM after it closed stdin) ends the session; one that comes
  // while this process is still releasing its children is noted, not obeyed at once.
  let stopping = false;
  let stop!: () => void;
  const stopped = new Promise<void>((resolve) => (stop = resolve));
  const onSignal = () => (stopping ? log('still ending the session (SIGKILL stops it at once)') : stop());
  process.on('SIGINT', onSignal);
  process.on('SIGTERM', onSignal);
  io.hangup?.addEventListener('abort', () => stop(), { once: true });
  try {
    const server = createMcpServer(brig, { version: readVersion(), readOnly, gateDecisions });
    const session = await serveStdio(server, { stdin: process.stdin, stdout: io.stdout, onError: (e) => log(`transport: ${e.message}`) });
    log(`serving over stdio${readOnly ? ' (read-only)' : gateDecisions ? ' (graph gates decidable over MCP)' : ''}: ${describe(brig, io)}`);
    await Promise.race([session.closed, stopped]);
    stopping = true;
    await session.close();
  } finally {
    stopping = true;
    if (brig.mode === 'local') await endOwnRuns(brig, log);
    await brig.close();
    process.off('SIGINT', onSignal);
    process.off('SIGTERM', onSignal);
  }
  return 0;
}

function describe(brig: Brig, io: CliIO): string {
  const home = loadConfig(io.env).home;
  if (brig.mode === 'daemon') return `the daemon of ${home}`;
  if (brig.mode === 'read') return `the run records of ${home}, read-only`;
  return `an in-process supervisor on ${home} (no daemon answers; its children end with this session — run \`brig serve\` for ones that outlive it)`;
}

/**
 * An in-process supervisor ends with this process: a child it leaves running would have no
 * watchdog. Kill what it holds (the runs of other processes refuse, and are left alone) and
 * let each be collected, for a bounded time.
 */
async function endOwnRuns(brig: Brig, log: (l: string) => void): Promise<void> {
  const going = await brig.list({ status: ['queued', 'starting', 'running', 'materializing'] });
  const killed: string[] = [];
  for (const r of going) {
    const k = await brig.kill(r.id, { confirm: true, by: 'system' });
    if (k.ok) killed.push(r.id);
  }
  if (killed.length === 0) return;
  log(`session ended: killed ${killed.length} run(s) still going: ${killed.join(' ')}`);
  await Promise.all(killed.map((id) => brig.wait(id, { timeoutMs: 15_000 })));
}

/** stdout is the protocol: anything a library prints with console.log goes to stderr instead. */
function consoleToStderr(io: CliIO): () => void {
  const saved = { log: console.log, info: console.info, debug: console.debug };
  const toErr = (...a: unknown[]) => void io.stderr.write(`${format(...a)}\n`);
  console.log = toErr;
  console.info = toErr;
  console.debug = toErr;
  return () => Object.assign(console, saved);
}

export default command;

import { promises as fs } from 'node:fs';
import path from 'node:path';
import { loadConfig } from '../../config/index.js';
import { CAPABILITIES, loadPolicyFile, policyFileFor, profileOf, type Capability } from '../../lease/index.js';
import type { SpawnRequestInput } from '../../runs/index.js';
import { BrigError } from '../../util/errors.js';
import { nearest } from '../../util/nearest.js';
import { JSON_FLAG, flag, numberFlag, parseArgs, writeJson, type Command } from '../command.js';
import { connectSupervisor } from '../connect.js';
import { exitForRuns } from '../exit-codes.js';
import { spawnLive } from '../live-spawn.js';
import { runBlock, runJson } from '../run-view.js';

/**
 * `brig spawn`: one child through the supervisor (admission, lease, broker, jail, collect).
 * `-- ARGV...` runs a command; `--script FILE` runs an ES-module script with the brig SDK.
 * Without a daemon the command runs an in-process supervisor, which cannot outlive the
 * command: `--async` then needs `brig serve`.
 */
const command: Command = {
  name: 'spawn',
  summary: 'Run a child (a command or a script) in a fresh hardened jail through the supervisor.',
  usage: 'brig spawn [FLAGS] (--script FILE | -- ARGV...)',
  flags: [
    { name: 'script', value: 'FILE', description: 'run an ES-module script with the brig SDK (instead of `-- ARGV...`)' },
    { name: 'task', value: 'TEXT', description: 'what the child is asked to do (default: the command line or the script name)' },
    { name: 'objective', value: 'TEXT', description: "the goal the task serves (in the script's packet)" },
    { name: 'label', value: 'LABEL', description: 'a label to find the run by (`brig list --label`)' },
    { name: 'profile', value: 'NAME', description: "the lease profile from this home's policy (`brig policy check` lists them)" },
    { name: 'cap', value: 'CAP', repeatable: true, choices: CAPABILITIES, description: `ask for a capability (${CAPABILITIES.join(', ')})` },
    { name: 'expect', value: 'PATH', repeatable: true, description: 'a file that must be in out/ when the run ends (relative; exit 9 when missing)' },
    { name: 'max-steps', value: 'N', description: 'the step budget of a script child' },
    { name: 'timeout', value: 'SECONDS', description: 'end the run as watchdog_timeout after this long' },
    { name: 'memory', value: 'MB', description: 'memory limit of the jail' },
    { name: 'cpus', value: 'N', description: 'CPU limit of the jail (fractions allowed)' },
    { name: 'pids', value: 'N', description: 'process limit of the jail' },
    { name: 'artifact', value: 'PATH', repeatable: true, description: 'mount a host file or directory read-only at /artifacts/<basename>' },
    { name: 'image', value: 'TAG', description: 'the child image (default: the one `brig image build` made)' },
    { name: 'async', description: 'return once the run is admitted (needs `brig serve`); `brig wait RUN` later' },
    JSON_FLAG,
  ],
  examples: [
    `brig spawn -- sh -c 'echo hi > out/hello.txt'`,
    `brig spawn --script job.mjs --task 'count the errors' --expect report.json`,
    `brig spawn --async --label nightly --artifact ./src -- sh -c 'find /artifacts/src -type f | wc -l > out/files.txt'`,
    `brig spawn --json --timeout 60 --memory 256 -- node -e 'console.log(process.version)'`,
  ],
  async run(args, io) {
    const p = parseArgs(args, command.flags);
    const argv = [...p.positionals, ...p.rest];
    const scriptFile = flag(p, 'script');
    if (scriptFile && argv.length > 0) throw new BrigError('invalid_input', 'give either --script FILE or `-- ARGV...`, not both');
    if (!scriptFile && argv.length === 0) {
      throw new BrigError('invalid_input', 'spawn needs --script FILE or a command after `--`', { hint: 'e.g. `brig spawn -- sh -c "echo hi > out/a.txt"`' });
    }
    const caps = p.flags.get('cap') ?? [];
    for (const c of caps) {
      if (!(CAPABILITIES as readonly string[]).includes(c)) {
        const near = nearest(c, CAPABILITIES);
        throw new BrigError('invalid_input', `unknown capability ${c}`, { hint: `${near ? `Did you mean "${near}"? ` : ''}Known: ${CAPABILITIES.join(', ')}` });
      }
    }
    // An unknown profile is refused here, with the nearest name, before a run is created.
    // (The policy in force is the one the supervisor loads for this home.)
    const profile = flag(p, 'profile');
    if (profile !== undefined) {
      const pol = loadPolicyFile(policyFileFor(loadConfig(io.env).home));
      if (!pol.ok) throw pol.error;
      const prof = profileOf(pol.value, profile);
      if (!prof.ok) throw prof.error;
    }
    let script: string | undefined;
    if (scriptFile) {
      try {
        script = await fs.readFile(path.resolve(scriptFile), 'utf8');
      } catch {
        throw new BrigError('invalid_input', `cannot read the script ${scriptFile}`);
      }
    }
    const timeout = numberFlag(p, 'timeout');
    const maxSteps = numberFlag(p, 'max-steps');
    const memory = numberFlag(p, 'memory');
    const cpus = numberFlag(p, 'cpus');
    const pids = numberFlag(p, 'pids');
    const limits = { ...(memory ? { memoryMb: Math.round(memory) } : {}), ...(cpus ? { cpu: cpus } : {}), ...(pids ? { pids: Math.round(pids) } : {}) };
    const req: SpawnRequestInput = {
      task: flag(p, 'task') ?? (scriptFile ? `script ${path.basename(scriptFile)}` : argv.join(' ').slice(0, 1000)),
      kind: script !== undefined ? 'script' : 'command',
      ...(script !== undefined ? { script } : { argv }),
      ...(flag(p, 'objective') ? { objective: flag(p, 'objective')! } : {}),
      ...(flag(p, 'label') ? { label: flag(p, 'label')! } : {}),
      ...(flag(p, 'profile') ? { profile: flag(p, 'profile')! } : {}),
      ...(caps.length ? { caps: caps as Capability[] } : {}),
      ...(flag(p, 'image') ? { image: flag(p, 'image')! } : {}),
      ...(Object.keys(limits).length ? { limits } : {}),
      ...(timeout ? { timeout: Math.max(1, Math.round(timeout * 1000)) } : {}),
      ...(maxSteps ? { max_steps: Math.round(maxSteps) } : {}),
      artifact_refs: (p.flags.get('artifact') ?? []).map((a) => path.resolve(a)),
      expected_outputs: p.flags.get('expect') ?? [],
      async: p.bools.has('async'),
    };
    for (const e of req.expected_outputs ?? []) checkExpect(e);
    const conn = await connectSupervisor(io, { needsJail: true });
    // Ctrl-C (or SIGTERM) while waiting kills the child (killedBy operator) and collects it;
    // an in-process supervisor would otherwise leave its container running.
    const stop = new AbortController();
    const onSignal = () => stop.abort();
    process.once('SIGINT', onSignal);
    process.once('SIGTERM', onSignal);
    try {
      if (req.async && conn.mode === 'local') {
        throw new BrigError('daemon_unavailable', '--async needs a running daemon: an in-process supervisor ends with this command', { hint: 'Start `brig serve` first.' });
      }
      // Both faces kill on abort: in-process directly, over the daemon by the run id. On a
      // terminal the run id shows at once and a live line while it runs; else one print at the end.
      const live = io.isTTY && !req.async && !p.bools.has('json');
      const res = live ? await spawnLive(io, conn, req, stop.signal) : await conn.sup.spawn(req, { signal: stop.signal });
      if (!res.ok) throw res.error;
      const r = res.value;
      if (p.bools.has('json')) writeJson(io, await runJson(io, r));
      else if (r.status !== 'ended') io.stdout.write(`run ${r.id} ${r.status}\n`);
      else io.stdout.write(runBlock(r));
      if (r.status === 'ended' && r.missingOutputs.length > 0) io.stderr.write(`brig: missing expected output${r.missingOutputs.length > 1 ? 's' : ''}: ${r.missingOutputs.join(', ')}\n`);
      return exitForRuns([r], { notEnded: 'ok' });
    } finally {
      process.off('SIGINT', onSignal);
      process.off('SIGTERM', onSignal);
      await conn.close();
    }
  },
};

/** An expected output names a file under /workspace/out: relative, no `..`. */
function checkExpect(e: string): void {
  if (e.startsWith('/') || e.split('/').includes('..') || e.includes('\0')) {
    throw new BrigError('invalid_input', `--expect ${JSON.stringify(e)} must be a path relative to /workspace/out without \`..\``, { hint: 'e.g. --expect report.json or --expect logs/run.txt' });
  }
}

export default command;

import { promises as fs } from 'node:fs';
import path from 'node:path';
import { CAPABILITIES, REF_ID_RE, parseRepoSpec, type Capability, type SpawnRequestInput } from '../../light.js';
import type { EgressRuleAsk } from '../../protocol/index.js';
import { BrigError } from '../../util/errors.js';
import { JSON_FLAG, flag, numberFlag, parseArgs, writeJson, type Command, type ParsedArgs, durationFlag } from '../command.js';
import { openBrig } from '../connect.js';
import { exitForRuns } from '../exit-codes.js';
import { spawnLive } from '../live-spawn.js';
import { runBlock, runJsonOf } from '../run-view.js';
import { mark } from '../../util/timing.js';

/**
 * `brig spawn`: one child through the supervisor (admission, lease, broker, jail, collect).
 * `-- ARGV...` runs a command; `--script FILE` runs an ES-module script with the brig SDK;
 * `--agent AGENT --task TEXT` runs an agent spec (an LLM tool loop inside the jail, its model
 * calls through the broker). Without a daemon the command runs an in-process supervisor,
 * which cannot outlive the command: `--async` then needs `brig serve`.
 */
const command: Command = {
  name: 'spawn',
  summary: 'Run a child (a command, a script or an agent) in a fresh hardened jail through the supervisor.',
  usage: 'brig spawn [FLAGS] (--script FILE | --agent AGENT --task TEXT | -- ARGV...)',
  flags: [
    { name: 'script', value: 'FILE', description: 'run an ES-module script with the brig SDK (instead of `-- ARGV...`)' },
    { name: 'agent', value: 'AGENT', description: 'run an agent spec (`brig agents list`) on --task, instead of a script or `-- ARGV...`' },
    { name: 'model', value: 'ALIAS', description: "with --agent: the model alias to use (default: the spec's, else the configured default)" },
    { name: 'task', value: 'TEXT', description: 'what the child is asked to do (required with --agent; default: the command line or the script name)' },
    { name: 'objective', value: 'TEXT', description: "the goal the task serves (in the script's packet)" },
    { name: 'label', value: 'LABEL', description: 'a label to find the run by (`brig list --label`)' },
    { name: 'profile', value: 'NAME', description: "the lease profile from this home's policy (`brig policy check` lists them)" },
    { name: 'cap', value: 'CAP', repeatable: true, choices: CAPABILITIES, description: `ask for a capability (${CAPABILITIES.join(', ')})` },
    { name: 'egress', value: 'RULE', repeatable: true, description: 'reach a host through the egress gate: a rule id of the policy, or host[:port][,tls=inspect][,methods=GET|HEAD] inside one (never inherited; `brig policy check` lists the rules)' },
    { name: 'expect', value: 'PATH', repeatable: true, description: 'a file that must be in out/ when the run ends (relative; exit 9 when missing)' },
    { name: 'max-steps', value: 'N', description: 'the step budget of a script or agent child' },
    { name: 'timeout', value: 'DURATION', description: 'end the run as watchdog_timeout after this long (90s, 10m; a bare number: seconds)' },
    { name: 'memory', value: 'MB', description: 'memory limit of the jail' },
    { name: 'cpus', value: 'N', description: 'CPU limit of the jail (fractions allowed)' },
    { name: 'pids', value: 'N', description: 'process limit of the jail' },
    { name: 'disk', value: 'MB', description: 'size of the jail\'s /workspace (writes past it fail with ENOSPC)' },
    { name: 'tokens', value: 'N', description: "the child's token budget (at most the profile's)" },
    { name: 'cost', value: 'USD', description: "the child's cost budget in USD (at most the profile's)" },
    { name: 'artifact', value: 'PATH|REF', repeatable: true, description: 'mount read-only at /artifacts/<name>: a host file or directory, or a ResultRef id (ref_…) from the result store' },
    { name: 'knowledge', value: 'TEXT', repeatable: true, description: "a fact the child should know (its packet's domain knowledge; one per flag)" },
    { name: 'tool-group', value: 'GROUP', repeatable: true, description: "with --agent: offer only the tools of these policy groups (workspace, delegation, slicing, …: `brig policy check`) and finish" },
    { name: 'parent-summary', value: 'TEXT', description: "what the child should know of the work so far (include_parent_history summary; at most parentSummaryMaxTokens × 4 chars)" },
    { name: 'repo', value: 'PATH', description: 'clone this host git repository (PATH or PATH@REF, REF default HEAD) into /workspace/repo; the change comes back as the changes.patch ref (`brig apply RUN` makes it a branch)' },
    { name: 'image', value: 'TAG', description: 'a local image to run the child in, same hardened jail (default: brig\'s child image)' },
    { name: 'async', description: 'return once the run is admitted (needs `brig serve`); `brig wait RUN` later' },
    JSON_FLAG,
  ],
  examples: [
    `brig spawn -- sh -c 'echo hi > out/hello.txt'`,
    `brig spawn --script job.mjs --task 'count the errors' --expect report.json`,
    `brig spawn --agent general --task 'list the TODOs in /artifacts/src into out/todo.md' --artifact ./src --expect todo.md`,
    `brig spawn --async --label nightly --artifact ./src -- sh -c 'find /artifacts/src -type f | wc -l > out/files.txt'`,
    `brig spawn --repo .@main -- sh -c "sed -i s/teh/the/g README.md"   # then: brig apply RUN --branch fix-typo`,
    `brig spawn --json --timeout 60 --memory 256 -- node -e 'console.log(process.version)'`,
  ],
  async run(args, io) {
    const p = parseArgs(args, command.flags);
    const argv = [...p.positionals, ...p.rest];
    const scriptFile = flag(p, 'script');
    const agent = agentFlags(p, argv, scriptFile);
    if (scriptFile && argv.length > 0) throw new BrigError('invalid_input', 'give either --script FILE or `-- ARGV...`, not both');
    if (!agent && !scriptFile && argv.length === 0) {
      throw new BrigError('invalid_input', 'spawn needs --script FILE, --agent NAME or a command after `--`', { hint: 'e.g. `brig spawn -- sh -c "echo hi > out/a.txt"`' });
    }
    // The caps, the profile and the agent spec are checked by the supervisor's one pre-check
    // (runs/intake.ts checkSpawn) before any run exists, through a daemon or in this process.
    const caps = p.flags.get('cap') ?? [];
    const egress = (p.flags.get('egress') ?? []).map(parseEgressFlag);
    let script: string | undefined;
    if (scriptFile) {
      try {
        script = await fs.readFile(path.resolve(scriptFile), 'utf8');
      } catch {
        throw new BrigError('invalid_input', `cannot read the script ${scriptFile}`);
      }
    }
    const req = spawnRequestFromFlags(p, { argv, script, scriptFile, agent, caps, egress });
    for (const e of req.expected_outputs ?? []) checkExpect(e);
    const brig = await openBrig(io, { needsJail: true });
    // Ctrl-C (or SIGTERM) while waiting kills the child (killedBy operator) and collects it;
    // an in-process supervisor would otherwise leave its container running.
    const stop = new AbortController();
    const onSignal = () => stop.abort();
    process.once('SIGINT', onSignal);
    process.once('SIGTERM', onSignal);
    try {
      if (req.async && brig.mode === 'local') {
        throw new BrigError('daemon_unavailable', '--async needs a running daemon: an in-process supervisor ends with this command', { hint: 'Start `brig serve` first.' });
      }
      // Both faces kill on abort: in-process directly, over the daemon by the run id. On a
      // terminal the run id shows at once and a live line while it runs; else one print at the end.
      const live = io.isTTY && !req.async && !p.bools.has('json');
      const res = live ? await spawnLive(io, brig, req, stop.signal) : await brig.spawn(req, { signal: stop.signal });
      mark('spawn: envelope back');
      if (!res.ok) throw res.error;
      const r = res.value;
      if (p.bools.has('json')) writeJson(io, await runJsonOf(brig, r));
      else if (r.status !== 'ended') io.stdout.write(`run ${r.id} ${r.status}\n`);
      else io.stdout.write(runBlock(r));
      if (r.status === 'ended' && r.missingOutputs.length > 0) io.stderr.write(`brig: missing expected output${r.missingOutputs.length > 1 ? 's' : ''}: ${r.missingOutputs.join(', ')}\n`);
      return exitForRuns([r], { notEnded: 'ok' });
    } finally {
      process.off('SIGINT', onSignal);
      process.off('SIGTERM', onSignal);
      mark('spawn: printed');
      await brig.close();
      mark('spawn: closed');
    }
  },
};

/**
 * The spawn request these flags say (pure; protocol SPAWN_FIELDS names each flag's field,
 * test/unit/runs/spawn-faces.test.ts pins it). An `--artifact` that is a ResultRef id stays
 * one; any other is a host path, made absolute here.
 */
export function spawnRequestFromFlags(
  p: ParsedArgs,
  o: { argv: string[]; script?: string | undefined; scriptFile?: string | undefined; agent?: { name: string; model?: string } | undefined; caps?: string[]; egress?: EgressRuleAsk[] },
): SpawnRequestInput {
  const { argv, script, scriptFile, agent } = o;
  const caps = o.caps ?? p.flags.get('cap') ?? [];
  const egress = o.egress ?? (p.flags.get('egress') ?? []).map(parseEgressFlag);
  const timeout = durationFlag(p, 'timeout', 's');
  const maxSteps = numberFlag(p, 'max-steps');
  const memory = numberFlag(p, 'memory');
  const cpus = numberFlag(p, 'cpus');
  const pids = numberFlag(p, 'pids');
  const disk = numberFlag(p, 'disk');
  const tokens = numberFlag(p, 'tokens');
  const cost = numberFlag(p, 'cost');
  const limits = {
    ...(memory ? { memoryMb: Math.round(memory) } : {}),
    ...(cpus ? { cpu: cpus } : {}),
    ...(pids ? { pids: Math.round(pids) } : {}),
    ...(disk ? { diskMb: Math.round(disk) } : {}),
    ...(tokens !== undefined ? { tokens: Math.round(tokens) } : {}),
    ...(cost !== undefined ? { costUsd: cost } : {}),
  };
  const knowledge = p.flags.get('knowledge') ?? [];
  const groups = p.flags.get('tool-group') ?? [];
  const summary = flag(p, 'parent-summary');
  return {
    task: flag(p, 'task') ?? (scriptFile ? `script ${path.basename(scriptFile)}` : argv.join(' ').slice(0, 1000)),
    ...(agent
      ? { kind: 'agent' as const, agent: agent.name, ...(agent.model !== undefined ? { model: agent.model } : {}) }
      : script !== undefined
        ? { kind: 'script' as const, script }
        : { kind: 'command' as const, argv }),
    ...(flag(p, 'objective') ? { objective: flag(p, 'objective')! } : {}),
    ...(flag(p, 'label') ? { label: flag(p, 'label')! } : {}),
    ...(flag(p, 'profile') ? { profile: flag(p, 'profile')! } : {}),
    ...(caps.length ? { caps: caps as Capability[] } : {}),
    ...(egress.length ? { egress: { rules: egress } } : {}),
    ...(flag(p, 'image') ? { image: flag(p, 'image')! } : {}),
    ...(flag(p, 'repo') ? { repo: absoluteRepo(flag(p, 'repo')!) } : {}),
    ...(Object.keys(limits).length ? { limits } : {}),
    ...(timeout ? { timeout: Math.max(1, Math.round(timeout * 1000)) } : {}),
    ...(maxSteps ? { max_steps: Math.round(maxSteps) } : {}),
    ...(knowledge.length ? { domain_knowledge: knowledge } : {}),
    ...(groups.length ? { tool_groups: groups } : {}),
    ...(summary !== undefined ? { include_parent_history: 'summary' as const, parent_summary: summary } : {}),
    artifact_refs: (p.flags.get('artifact') ?? []).map((a) => (REF_ID_RE.test(a) ? a : path.resolve(a))),
    expected_outputs: p.flags.get('expect') ?? [],
    async: p.bools.has('async'),
  };
}

/** `--repo PATH[@REF]` with PATH made absolute against the working directory. */
function absoluteRepo(spec: string): string {
  const { path: p, ref } = parseRepoSpec(spec);
  return spec === p ? path.resolve(p) : `${path.resolve(p)}@${ref}`;
}

/**
 * `--agent NAME [--model ALIAS]`: the spec to run and the model; it takes no script and no
 * argv, and needs `--task` (an agent is asked something; there is no command line to default to).
 */
function agentFlags(p: ParsedArgs, argv: string[], scriptFile: string | undefined): { name: string; model?: string } | undefined {
  const name = flag(p, 'agent');
  const model = flag(p, 'model');
  if (name === undefined) {
    if (model !== undefined) throw new BrigError('invalid_input', '--model is for an agent child: give --agent NAME with it', { hint: 'e.g. `brig spawn --agent general --model fast --task "…"`' });
    return undefined;
  }
  if (name === '' || name.startsWith('-')) throw new BrigError('invalid_input', '--agent needs a NAME', { hint: '`brig agents list` shows the agent specs; e.g. `brig spawn --agent general --task "…"`' });
  if (scriptFile !== undefined) throw new BrigError('invalid_input', 'give either --agent NAME or --script FILE, not both');
  if (argv.length > 0) throw new BrigError('invalid_input', 'an agent child runs its spec, not a command: give --agent NAME or `-- ARGV...`, not both', { hint: `brig spawn --agent ${name} --task "…"` });
  if (model !== undefined && (model === '' || model.startsWith('-'))) throw new BrigError('invalid_input', '--model needs an ALIAS');
  const task = flag(p, 'task');
  if (task === undefined || task.trim() === '') throw new BrigError('invalid_input', 'an agent child needs --task: what it is asked to do', { hint: `brig spawn --agent ${name} --task "…"` });
  return { name, ...(model !== undefined ? { model } : {}) };
}

/** An expected output names a file under /workspace/out: relative, no `..`. */
function checkExpect(e: string): void {
  if (e.startsWith('/') || e.split('/').includes('..') || e.includes('\0')) {
    throw new BrigError('invalid_input', `--expect ${JSON.stringify(e)} must be a path relative to /workspace/out without \`..\``, { hint: 'e.g. --expect report.json or --expect logs/run.txt' });
  }
}

export default command;

/**
 * One `--egress` value: a policy rule id (`pypi`), or `host[:port][,tls=inspect][,methods=GET|HEAD]`
 * (an https rule the supervisor grants only inside one the lease's parent holds).
 */
export function parseEgressFlag(v: string): EgressRuleAsk {
  if (/^[a-z0-9][a-z0-9_-]{0,31}$/.test(v) && !v.includes('.')) return v;
  const [target, ...opts] = v.split(',');
  const m = /^(\*\.)?([^:\s,]+?)(?::(\d{1,5}))?$/.exec(target ?? '');
  if (!m) throw new BrigError('invalid_input', `--egress ${JSON.stringify(v.slice(0, 80))} is not a rule id or host[:port]`, { hint: 'e.g. --egress pypi, --egress api.example.com:443,tls=inspect,methods=GET|HEAD' });
  const rule: Exclude<EgressRuleAsk, string> = { hosts: [`${m[1] ?? ''}${m[2]}`], ...(m[3] ? { ports: [Number(m[3])] } : {}) };
  for (const o of opts) {
    const [k, val] = o.split('=');
    if (k === 'tls' && (val === 'inspect' || val === 'tunnel')) rule.tls = val;
    else if (k === 'methods' && val) rule.methods = val.split('|').map((x) => x.toUpperCase()) as NonNullable<typeof rule.methods>;
    else if (k === 'scheme' && (val === 'https' || val === 'http' || val === 'tcp')) rule.scheme = val;
    else throw new BrigError('invalid_input', `--egress: unknown option ${JSON.stringify(o.slice(0, 40))}`, { hint: 'Options: tls=tunnel|inspect, methods=GET|HEAD|…, scheme=https|http|tcp.' });
  }
  return rule;
}

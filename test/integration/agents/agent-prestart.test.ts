/**
 * Agent-ready warm slots (issue 26): a pooled agent child is served by an agent runtime that
 * its slot's waiter started before any run asked (jail/docker/pool-waiter.ts, child/agent/
 * prestart.ts), on a real engine with real supervisors and the scripted model server on host
 * loopback (a stand-in, not a real model).
 *
 * - It is the cold path's run: the same result, the same environment, workspace, descriptors
 *   and umask for what its tools start, the same system prompt, its runtime as unreadable to
 *   its shell as a cold one (INV-11), its end told by the reaper with the runtime's own status.
 * - Before its assignment a slot holds nothing of any run — read from the host as root, not
 *   through the engine: the runtime's environ, fds and memory, the jail's files, the slot's
 *   socket directory — though runs went before it (their task text, run id, lease id, bearer).
 * - A runtime that died before its run costs only its slot: discarded, the run served without it.
 * dist/ must be built (the child image's runtime is dist/child).
 */
import { test } from 'node:test';
import assert from 'node:assert/strict';
import crypto from 'node:crypto';
import { spawn } from 'node:child_process';
import fs from 'node:fs';
import path from 'node:path';
import { brigPaths, loadConfig } from '../../../src/config/index.js';
import { compose, type Composed } from '../../../src/daemon/index.js';
import { DockerJailDriver, ownerForHome } from '../../../src/jail/index.js';
import { PRESTART_ARGV } from '../../../src/jail/docker/pool-waiter.js';
import { cgroupFilesOf } from '../../../src/jail/docker/reaper.js';
import type { RunRecord } from '../../../src/runs/index.js';
import { requireEngine } from '../../helpers/engine.js';
import { startModelServer, textTurn, toolCallTurn, type ModelServer, type RecordedRequest } from '../../helpers/model-server.js';
import { freshHome, leftovers, until } from '../runs/fixture.js';

type Msg = { role: string; content: unknown };
const toolResults = (r: RecordedRequest): string[] => (r.body.messages as Msg[]).filter((x) => x.role === 'tool').map((x) => String(x.content));

/** What the agent's shell reports of its jail and of its runtime: identical between a pre-started and a cold runtime. */
const PROBE = [
  'env | sort | sed "s/^/env:/"',
  'ls -la /workspace /workspace/.brig | awk "NR>1 && \\$NF != \\".\\" && \\$NF != \\"..\\" && \\$NF != \\"spill\\" {print \\"ws:\\" \\$1, \\$3, \\$NF}"',
  'ls /proc/self/fd | sed "s/^/fd:/"',
  'echo "umask=$(umask)"',
  'ls -A /tmp | sed "s/^/tmp:/"',
  // The runtime is the shell's parent: non-dumpable, its environ root's and closed to the shell.
  'echo "rt-environ-owner=$(stat -c %u /proc/$PPID/environ)"',
  'cat /proc/$PPID/environ >/dev/null 2>&1 && echo rt-environ=READ || echo rt-environ=refused',
  'cat /proc/$PPID/mem >/dev/null 2>&1 && echo rt-mem=READ || echo rt-mem=refused',
  'ls /proc/$PPID/fd >/dev/null 2>&1 && echo rt-fds=READ || echo rt-fds=refused',
  'echo "rt-argv=$(tr "\\0" " " </proc/$PPID/cmdline)"',
].join('; ');

/** One shell turn with the probe, then finish with what it printed. */
function agentScript(): (req: RecordedRequest) => ReturnType<typeof toolCallTurn> {
  return (req) => {
    const done = toolResults(req);
    return done.length === 0 ? toolCallTurn('shell', { command: PROBE }, { usage: { input: 300, output: 20 } }) : toolCallTurn('finish', { answer: done.join('\n') }, { usage: { input: 400, output: 20 } });
  };
}

async function agentSupervisor(home: string, m: ModelServer, warm: number): Promise<Composed> {
  const cfg = loadConfig({ BRIG_HOME: home, BRIG_MODEL_BASE_URL: m.baseUrl, BRIG_MODEL: 'scripted-stand-in', BRIG_MODEL_CONTEXT_WINDOW: '32000' });
  const c = await compose(cfg, { tickMs: 200, reconcile: true, ...(warm > 0 ? { warm } : {}) });
  await c.supervisor.start();
  await c.warm?.start();
  return c;
}

async function agentRun(c: Composed, task: string): Promise<RunRecord> {
  const r = await c.supervisor.spawn({ task, kind: 'agent', agent: 'general' });
  assert.ok(r.ok, JSON.stringify(!r.ok && r.error));
  assert.equal(r.value.endReason, 'completed', `${r.value.error?.message} ${r.value.stderrTail}`);
  return r.value;
}

/** The probe's lines by key (`env:`, `ws:`, `fd:`, `tmp:` lists; `k=v` single values), the run id made neutral. */
function probeOf(r: RunRecord): Map<string, string[]> {
  const m = new Map<string, string[]>();
  const answer = String((r.result as { answer?: unknown } | null)?.answer ?? '');
  for (const line of answer.replaceAll(r.id, '<run>').split('\n').filter(Boolean)) {
    const list = /^(env|ws|fd|tmp):/.exec(line);
    const k = list ? list[1]! : line.slice(0, Math.max(0, line.indexOf('=')));
    m.set(k, [...(m.get(k) ?? []), line.slice(k.length + 1)]);
  }
  return m;
}

/** This home's idle pool slots in the engine, with the waiter's host pid. */
async function slots(home: string): Promise<{ key: string; pid: number }[]> {
  const d = new DockerJailDriver({ owner: ownerForHome(home) });
  const list = await d.docker.listContainers({ filters: { label: [`dev.brig.owner=${ownerForHome(home)}`] } });
  const out: { key: string; pid: number }[] = [];
  for (const c of list) {
    const name = (c.Names?.[0] ?? '').replace(/^\//, '');
    if (!name.startsWith('brig-run-pool-')) continue;
    const info = await d.docker.getContainer(c.Id).inspect();
    if (info.State.Running && info.State.Pid) out.push({ key: name.slice('brig-run-'.length), pid: info.State.Pid });
  }
  return out;
}

/** The waiter's children (host pids), from /proc. */
function childrenOf(pid: number): number[] {
  return fs.readdirSync('/proc').filter((d) => /^\d+$/.test(d)).map(Number).filter((p) => {
    try {
      const st = fs.readFileSync(`/proc/${p}/stat`, 'utf8');
      return Number(st.slice(st.lastIndexOf(')') + 2).split(' ')[1]) === pid;
    } catch {
      return false;
    }
  });
}

const cmdline = (pid: number) => fs.readFileSync(`/proc/${pid}/cmdline`, 'utf8').split('\0').slice(0, -1);

/** An agent-ready slot's waiter and pre-started runtime (host pids); undefined while there is none. */
async function agentSlot(home: string): Promise<{ key: string; pid: number; runtime: number } | undefined> {
  for (const s of await slots(home)) {
    const rt = childrenOf(s.pid).find((p) => cmdline(p).join(' ') === PRESTART_ARGV.join(' '));
    if (rt) return { ...s, runtime: rt };
  }
  return undefined;
}

/** The pool full with an agent-ready slot among it (primed at start: models are configured). */
async function agentReady(c: Composed, home: string): Promise<void> {
  await c.warm!.filled();
  await until(async () => (await agentSlot(home)) !== undefined, 'an agent-ready slot');
  await c.warm!.filled();
}

/** Every line of the home's ledger. */
function ledgerText(home: string): string {
  const dir = brigPaths(home).ledger;
  return fs.readdirSync(dir).map((f) => fs.readFileSync(path.join(dir, f), 'utf8')).join('');
}

/** Which of `needles` a process's readable memory holds (read as root through /proc/PID/mem). */
function memoryHolds(pid: number, needles: string[]): string[] {
  const found = new Set<string>();
  const bufs = needles.map((n) => Buffer.from(n));
  const fd = fs.openSync(`/proc/${pid}/mem`, 'r');
  try {
    for (const line of fs.readFileSync(`/proc/${pid}/maps`, 'utf8').split('\n')) {
      const m = /^([0-9a-f]+)-([0-9a-f]+) r/.exec(line);
      if (!m || line.endsWith('[vvar]') || line.endsWith('[vsyscall]')) continue;
      const end = parseInt(m[2]!, 16);
      // Chunks overlap by the longest needle, so none is missed at a boundary.
      const overlap = Math.max(...needles.map((n) => n.length));
      for (let at = parseInt(m[1]!, 16); at < end; ) {
        const len = Math.min(4 << 20, end - at);
        const buf = Buffer.alloc(len);
        let n = 0;
        try {
          n = fs.readSync(fd, buf, 0, len, at);
        } catch {
          break; // an unreadable range: the rest of the region
        }
        for (const [i, b] of bufs.entries()) if (buf.subarray(0, n).includes(b)) found.add(needles[i]!);
        if (at + len >= end) break;
        at += len - overlap;
      }
    }
  } finally {
    fs.closeSync(fd);
  }
  return [...found];
}

/** Every path under a directory (as root through /proc/PID/root), relative. */
function tree(dir: string, rel = ''): string[] {
  let names: string[] = [];
  try {
    names = fs.readdirSync(path.join(dir, rel));
  } catch {
    return [];
  }
  return names.flatMap((n) => {
    const r = rel ? `${rel}/${n}` : n;
    const st = fs.lstatSync(path.join(dir, r));
    return st.isDirectory() ? [r + '/', ...tree(dir, r)] : [r];
  });
}

// req: jail:runtime-unreadable
test('[INV-2] [INV-6] [INV-11] a pooled agent child is served by a pre-started runtime and is the cold path\'s run: result, tools\' environment, workspace, fds, prompt, an unreadable runtime', async (t) => {
  if (!(await requireEngine(t))) return;
  const [warmHome, coldHome] = [await freshHome(t), await freshHome(t)];
  const [mw, mc] = [await startModelServer({ script: agentScript() }), await startModelServer({ script: agentScript() })];
  t.after(() => Promise.all([mw.close(), mc.close()]));
  const warm = await agentSupervisor(warmHome, mw, 1);
  const cold = await agentSupervisor(coldHome, mc, 0);
  try {
    // Models are configured: the default shape's agent-ready flavour is primed with the pool, before any agent was asked for.
    await agentReady(warm, warmHome);
    const before = mw.requests.length;
    const pooled = await agentRun(warm, 'Report on your jail.');
    const c = await agentRun(cold, 'Report on your jail.');

    assert.equal(pooled.jail?.pooled?.prestarted, true, 'the run was served by a pre-started runtime');
    assert.equal(pooled.jailKey, pooled.jail?.pooled?.slot);
    assert.equal(c.jail?.pooled, undefined, 'the control is cold');
    assert.equal(pooled.exitCode, 0, 'the run\'s exit code is the runtime\'s, told by the reaper');
    const [p, k] = [probeOf(pooled), probeOf(c)];
    assert.deepEqual(p.get('env'), k.get('env'), 'what the agent\'s tools start sees exactly the cold path\'s environment');
    assert.deepEqual(p.get('env'), ['BRIG_RUN_ID=<run>', 'HOME=/workspace', 'HOSTNAME=brig', 'PATH=/bin:/usr/bin', 'PWD=/workspace', 'SHLVL=1']);
    assert.deepEqual(p.get('ws'), k.get('ws'), 'the same workspace: the packet, no bearer file, no env file, no assignment');
    assert.ok(!(p.get('ws') ?? []).some((x) => /token|env\.json|assign|nonce/.test(x)), JSON.stringify(p.get('ws')));
    assert.deepEqual(p.get('fd'), k.get('fd'), 'the shell holds the same descriptors');
    assert.deepEqual(p.get('umask'), k.get('umask'));
    assert.deepEqual(p.get('tmp'), k.get('tmp'), 'nothing of the pre-start is left in /tmp');
    for (const f of ['rt-environ', 'rt-mem', 'rt-fds']) assert.deepEqual(p.get(f), ['refused'], `${f}: the pre-started runtime is non-dumpable, as a cold one`);
    assert.deepEqual(p.get('rt-environ-owner'), ['0']);
    assert.deepEqual(k.get('rt-environ-owner'), ['0']);
    assert.deepEqual(p.get('rt-argv'), [`${PRESTART_ARGV.join(' ')} `], 'the shell\'s parent is the pre-started runtime');
    // The prompt's Workspace section: the image's facts gathered before the run are the cold path's.
    const sys = (r: RecordedRequest) => String((r.body.messages as Msg[])[0]!.content).replace(/disk free in \/workspace: .*/, 'disk free');
    assert.equal(sys(mw.requests[before]!), sys(mc.requests.at(-2)!), 'the same system prompt');
    // The same result: every line the probe printed, but the runtime's own argv (the pre-start flag).
    p.delete('rt-argv');
    k.delete('rt-argv');
    assert.deepEqual(p, k, 'the same result as the cold path');
    assert.deepEqual(Object.keys(pooled.result as object).sort(), Object.keys(c.result as object).sort());
  } finally {
    await warm.close();
    await cold.close();
  }
  assert.deepEqual(await leftovers(warmHome, { released: true }), [], 'every slot and run jail is gone after close');
});

test('[INV-6] an agent-ready slot before its assignment holds nothing of any run: its runtime\'s environ, fds and memory, its jail\'s files, its socket directory', async (t) => {
  if (!(await requireEngine(t))) return;
  const home = await freshHome(t);
  const m = await startModelServer({ script: agentScript() });
  t.after(() => m.close());
  const c = await agentSupervisor(home, m, 1);
  // The bearers the runs were handed (the lease store keeps only their hashes).
  const bearers: string[] = [];
  const issue = c.leases.issueRoot.bind(c.leases);
  c.leases.issueRoot = (a) => {
    const r = issue(a);
    if (r.ok) bearers.push(r.value.token);
    return r;
  };
  try {
    const marks = [0, 1].map(() => `task-marker-${crypto.randomBytes(8).toString('hex')}`);
    const runs: RunRecord[] = [];
    for (const mark of marks) {
      await c.warm!.filled();
      runs.push(await agentRun(c, `Report on your jail (${mark}).`));
    }
    assert.equal(runs[1]!.jail?.pooled?.prestarted, true, 'the second run was a pre-started runtime\'s');
    assert.equal(bearers.length, 2);
    // A slot made after both runs, not yet assigned.
    await until(async () => {
      const s = await agentSlot(home);
      return s !== undefined && !runs.some((r) => r.jailKey === s.key);
    }, 'a fresh agent-ready slot');
    await c.warm!.filled();
    const slot = (await agentSlot(home))!;
    const rt = slot.runtime;

    const environ = fs.readFileSync(`/proc/${rt}/environ`, 'utf8').split('\0').filter(Boolean).sort();
    assert.deepEqual(environ, ['HOME=/workspace', 'HOSTNAME=brig', 'PATH=/bin:/usr/bin'], 'the runtime\'s environment: three fixed variables, nothing of a run');
    assert.equal(fs.statSync(`/proc/${rt}/environ`).uid, 0, 'non-dumpable from its exec on (its /proc files are root\'s)');
    assert.match(fs.readFileSync(`/proc/${rt}/status`, 'utf8'), /^Uid:\s+65534\s/m, 'the jail user');
    const fds = fs.readdirSync(`/proc/${rt}/fd`).map((n) => fs.readlinkSync(`/proc/${rt}/fd/${n}`));
    assert.ok(fds.length > 0);
    assert.deepEqual(fds.filter((l) => /workspace|run\/brig|socket:|\.brig/.test(l)), [], `no descriptor of a run's file or socket: ${fds.join(', ')}`);
    assert.deepEqual(childrenOf(rt), [], 'the runtime started nothing that still runs');

    const files = tree(`/proc/${slot.pid}/root/workspace`);
    assert.deepEqual(files.filter((f) => f !== 'out/' && f !== 'lost+found/'), [], `the workspace holds only out/: ${files.join(', ')}`);
    assert.deepEqual(tree(`/proc/${slot.pid}/root/tmp`), [], '/tmp is empty');
    assert.deepEqual(fs.readdirSync(path.join(brigPaths(home).brokers, slot.key)).sort(), ['exit', 'go'], 'the socket directory holds the two FIFOs, no broker socket');

    const needles = [...marks, ...runs.map((r) => r.id), ...runs.map((r) => r.leaseId!), ...bearers];
    const positive = 'brig-agent: pre-started';
    const held = memoryHolds(rt, [...needles, positive]);
    assert.ok(held.includes(positive), 'the memory scan reads the runtime\'s memory (its own ready line is there)');
    assert.deepEqual(held.filter((x) => x !== positive), [], 'no earlier run\'s task text, run id, lease id or bearer in the runtime\'s memory');
  } finally {
    await c.close();
  }
});

test('a pre-started runtime that died, or a jail with anything beside it, before its run costs only its slot: discarded, the run served without it', async (t) => {
  if (!(await requireEngine(t))) return;
  const home = await freshHome(t);
  const m = await startModelServer({ script: agentScript() });
  t.after(() => m.close());
  const c = await agentSupervisor(home, m, 1);
  try {
    await agentReady(c, home);
    const victim = (await agentSlot(home))!;
    process.kill(victim.runtime, 'SIGKILL');
    const r = await agentRun(c, 'Report on your jail.');
    assert.notEqual(r.jailKey, victim.key, 'the slot whose runtime died was not handed out');
    assert.notEqual(r.jail?.pooled?.prestarted, true, 'the run went on without a pre-started runtime');
    await until(async () => !(await slots(home)).some((s) => s.key === victim.key), 'the victim slot destroyed');
    const ledger = ledgerText(home);
    // Its waiter notices first (its blocked open is interrupted by the child's end: exit 70, `exited`
    // or `not_running`); the take's check of the runtime (`runtime_gone`) is the backstop; a take
    // that looks while PID 1 is exiting (the engine still says running, its /proc entry gone)
    // finds `not_its_waiter`.
    assert.match(ledger, new RegExp(`"type":"jail.pool_discarded"[^\\n]*"slot":"${victim.key}"[^\\n]*"reason":"(exited -?\\d+|not_running|not_its_waiter|runtime_gone)"`), 'the discard is ledgered');

    // Something else running beside the runtime before its run (here a host process the test
    // moves into the jail's pids cgroup): the take's check finds the jail not as made.
    await until(async () => {
      const s = await agentSlot(home);
      return s !== undefined && s.key !== victim.key && s.key !== r.jailKey;
    }, 'a new agent-ready slot');
    await c.warm!.filled();
    const crowded = (await agentSlot(home))!;
    const cg = await cgroupFilesOf(crowded.pid);
    assert.ok(cg, 'the slot\'s pids cgroup is found');
    const stranger = spawn('/bin/sleep', ['60'], { stdio: 'ignore' });
    t.after(() => void stranger.kill('SIGKILL'));
    fs.writeFileSync(cg.procs, String(stranger.pid));
    const r2 = await agentRun(c, 'Report on your jail.');
    assert.notEqual(r2.jailKey, crowded.key, 'a slot with a stranger beside its runtime was not handed out');
    const ledger2 = ledgerText(home);
    assert.match(ledger2, new RegExp(`"type":"jail.pool_discarded"[^\\n]*"slot":"${crowded.key}"[^\\n]*"reason":"runtime_gone"`), 'discarded by the runtime check');
  } finally {
    await c.close();
  }
});

test('the reaper holds for a pre-started runtime: a kill reaches it as SIGTERM through PID 1, its one salvage call is made, the run is killed with that report', async (t) => {
  if (!(await requireEngine(t))) return;
  const home = await freshHome(t);
  const m = await startModelServer({
    script: (req) => {
      if (toolResults(req).length === 0 && req.body.tool_choice !== 'none') return toolCallTurn('shell', { command: 'echo found-a-clue > /workspace/out/clue.txt; sleep 60' }, { usage: { input: 400, output: 20 } });
      return textTurn(req.body.tool_choice !== 'none' ? 'unexpected: tools callable' : 'Salvage: found a clue in clue.txt', { usage: { input: 450, output: 30 } });
    },
  });
  t.after(() => m.close());
  const c = await agentSupervisor(home, m, 1);
  try {
    await agentReady(c, home);
    const before = m.requests.length;
    const r = await c.supervisor.spawn({ task: 'Look for clues.', kind: 'agent', async: true });
    assert.ok(r.ok);
    await until(() => m.requests.length > before, 'the first model call');
    await new Promise((res) => setTimeout(res, 1500));
    const k = await c.supervisor.kill(r.value.id, { confirm: true });
    assert.ok(k.ok);
    assert.equal(k.value.jail?.pooled?.prestarted, true, 'a pre-started runtime was killed');
    assert.equal(k.value.endReason, 'killed');
    assert.equal(k.value.partial, true, JSON.stringify({ result: k.value.result, err: k.value.stderrTail }));
    assert.match((k.value.result as { answer: string }).answer, /found a clue/, 'the runtime got SIGTERM (not a SIGKILL after the grace) and salvaged');
    assert.deepEqual(k.value.outputs.map((o) => o.path), ['clue.txt']);
    assert.equal(m.requests.length - before, 2, 'exactly one salvage call');
  } finally {
    await c.close();
  }
  assert.deepEqual(await leftovers(home, { released: true }), []);
});

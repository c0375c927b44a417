import { test } from 'node:test';
import assert from 'node:assert/strict';
import fs from 'node:fs';
import path from 'node:path';
import { loadConfig } from '../../../src/config/index.js';
import { compose, type Composed } from '../../../src/daemon/index.js';
import { requireEngine } from '../../helpers/engine.js';
import { startModelServer, toolCallTurn, type ModelServer, type RecordedRequest } from '../../helpers/model-server.js';
import { freshHome, leftovers } from '../runs/fixture.js';

/**
 * The tool surface is a bound (issue 22, item 6), proven on real jailed agents driven by a
 * scripted model server on host loopback (a stand-in, not a real model) whose `shell` tool is
 * the attacker: it goes for the runtime's memory, environment and fds, and — handed the run's
 * bearer as if it had leaked — for a broker method its spec's tools do not offer.
 */

async function agentSupervisor(home: string, m: ModelServer): Promise<Composed> {
  const cfg = loadConfig({ BRIG_HOME: home, BRIG_MODEL_BASE_URL: m.baseUrl, BRIG_MODEL: 'scripted-stand-in', BRIG_MODEL_CONTEXT_WINDOW: '20000' });
  const c = await compose(cfg, { tickMs: 200, reconcile: true });
  await c.supervisor.start();
  return c;
}

/** A spec offering only shell and finish, in the home's agents/. */
function shellOnlySpec(home: string): void {
  fs.mkdirSync(path.join(home, 'agents'), { recursive: true });
  fs.writeFileSync(path.join(home, 'agents', 'shell-only.md'), '---\nname: shell-only\ndescription: a worker with a shell and nothing else\ntools: [shell, finish]\n---\nRun what you are told.\n');
}

type Msg = { role: string; content: unknown };
/** The last tool result the model server was sent (what the jail's shell printed). */
const lastToolResult = (r: RecordedRequest) => String((r.body.messages as Msg[]).filter((x) => x.role === 'tool').at(-1)?.content ?? '');

/** The shell's command: a node script (through a heredoc) whose JSON verdict line the test reads back. */
const nodeScript = (js: string) => `cat > /tmp/probe.cjs <<'EOF'\n${js}\nEOF\nnode /tmp/probe.cjs; echo probe ended`;

const verdict = (text: string): Record<string, unknown> => {
  const line = text.split('\n').find((l) => l.startsWith('VERDICT '));
  assert.ok(line, `no verdict in the shell's output: ${text}`);
  return JSON.parse(line.slice('VERDICT '.length)) as Record<string, unknown>;
};

/** Everything a same-uid process could take from the runtime (PID 1) if it were dumpable. */
const ATTACK = `const fs = require('fs');
const out = { uid: process.getuid(), runtime: fs.readFileSync('/proc/1/cmdline', 'utf8').split('\\0').join(' ').trim() };
const open = (p) => { try { fs.closeSync(fs.openSync(p, 'r')); return 'OPENED'; } catch (e) { return e.code; } };
for (const f of ['environ', 'mem', 'maps', 'auxv', 'cwd', 'root']) out[f] = open('/proc/1/' + f);
try { out.fds = fs.readdirSync('/proc/1/fd'); } catch (e) { out.fds = e.code; }
out.fdLinks = [];
for (let n = 0; n < 64; n++) { try { out.fdLinks.push(fs.readlinkSync('/proc/1/fd/' + n)); } catch (e) { if (e.code !== 'ENOENT') { out.fdLinks = e.code; break; } } }
out.environOwner = fs.statSync('/proc/1/environ').uid;
out.tokenFile = fs.existsSync('/workspace/.brig/token');
// The fds of the shell the tool started: its stdio, nothing of the runtime's.
// (the shell stays, waiting for the probe: it is the probe's parent)
out.shellPid = process.ppid;
out.shellFds = fs.readdirSync('/proc/' + process.ppid + '/fd');
console.log('VERDICT ' + JSON.stringify(out));`;

// req: jail:runtime-unreadable
test('[INV-2] nothing an agent\'s shell starts can read the in-jail runtime: its /proc/1 mem, environ, maps and fds refuse, the bearer file is gone', async (t) => {
  if (!(await requireEngine(t))) return;
  const home = await freshHome(t);
  const m = await startModelServer({
    script: [
      toolCallTurn('shell', { command: nodeScript(ATTACK) }, { usage: { input: 300, output: 20 } }),
      (req) => toolCallTurn('finish', { answer: lastToolResult(req) }, { usage: { input: 400, output: 20 } }),
    ],
  });
  t.after(() => m.close());
  const c = await agentSupervisor(home, m);
  try {
    const r = await c.supervisor.spawn({ task: 'Look around.', kind: 'agent' });
    assert.ok(r.ok, JSON.stringify(!r.ok && r.error));
    assert.equal(r.value.endReason, 'completed', `${r.value.error?.message} ${r.value.stderrTail}`);
    const v = verdict(String((r.value.result as { answer: string }).answer));
    assert.equal(v.uid, 65534, 'the shell runs as the runtime\'s own uid: the kernel\'s dumpable flag is what holds');
    assert.match(String(v.runtime), /agent-runtime\.js/, 'PID 1 is the agent runtime');
    for (const f of ['environ', 'mem', 'maps', 'auxv', 'cwd', 'root']) assert.equal(v[f], 'EACCES', `/proc/1/${f} is closed to the shell`);
    assert.equal(v.fds, 'EACCES', 'the runtime\'s fd table cannot be listed');
    assert.equal(v.fdLinks, 'EACCES', 'nor any of its fds followed (the broker socket among them)');
    assert.equal(v.environOwner, 0, 'the kernel gave the non-dumpable runtime\'s /proc files to root');
    assert.equal(v.tokenFile, false, 'the bearer file was removed before any tool ran');
    const shellFds = v.shellFds as string[];
    assert.notEqual(v.shellPid, 1);
    assert.deepEqual(shellFds.sort(), ['0', '1', '2'], 'the shell inherited its stdio only: no fd of the runtime (its broker socket among them)');
  } finally {
    await c.close();
  }
  assert.deepEqual(await leftovers(home, { released: true }), []);
});

/** With a leaked bearer: what the broker says to a call on and off the run's surface. */
const brokerAttack = (token: string) => `const net = require('net');
const s = net.connect('/run/brig/broker.sock');
let buf = ''; const waiting = new Map(); let id = 0;
s.on('data', (d) => { buf += d; let i; while ((i = buf.indexOf('\\n')) >= 0) { const m = JSON.parse(buf.slice(0, i)); buf = buf.slice(i + 1); waiting.get(m.id)?.(m); } });
const call = (method, params) => new Promise((r) => { const n = ++id; waiting.set(n, r); s.write(JSON.stringify({ v: 1, id: n, method, token: ${JSON.stringify(token)}, params }) + '\\n'); });
(async () => {
  const out = {};
  const hello = await call('hello', {});
  out.hello = hello.ok ? hello.result.methods : hello.error.code;
  out.log = (await call('log', { message: 'the leaked bearer is valid' })).ok;
  const sp = await call('spawn', { request: { task: 'escape', kind: 'agent' } });
  out.spawn = sp.ok ? 'SPAWNED' : sp.error.code;
  out.spawnMessage = sp.ok ? '' : sp.error.message;
  const rl = await call('refs.list', {});
  out.refsList = rl.ok ? 'LISTED' : rl.error.code;
  s.end();
  console.log('VERDICT ' + JSON.stringify(out));
})();`;

// req: lease:tool-surface-binds
test('[INV-1] a spec with tools [shell, finish]: its bearer, leaked to the shell, is refused spawn `tool_not_offered` though the lease grants spawn; the lease is untouched', async (t) => {
  if (!(await requireEngine(t))) return;
  const home = await freshHome(t);
  shellOnlySpec(home);
  const tokens = new Map<string, string>();
  let c!: Composed;
  let runId = '';
  const m = await startModelServer({
    script: (req) => {
      const msgs = req.body.messages as Msg[];
      // A child the attack managed to spawn finishes at once (and is then counted below).
      if (String(msgs[0]?.content ?? '').includes('escape')) return toolCallTurn('finish', { answer: 'escaped' }, { usage: { input: 10, output: 2 } });
      // The bearer is handed in as if the shell had lifted it (the test above shows it cannot).
      if (!msgs.some((x) => x.role === 'tool')) return toolCallTurn('shell', { command: nodeScript(brokerAttack(tokens.get(runId) ?? 'none')) }, { usage: { input: 300, output: 20 } });
      return toolCallTurn('finish', { answer: lastToolResult(req) }, { usage: { input: 400, output: 20 } });
    },
  });
  t.after(() => m.close());
  c = await agentSupervisor(home, m);
  // Record the bearer the lease store issues (a spy on the real store: nothing is faked).
  const issueRoot = c.leases.issueRoot.bind(c.leases);
  c.leases.issueRoot = (a) => {
    const r = issueRoot(a);
    if (r.ok) tokens.set(a.runId, r.value.token);
    return r;
  };
  try {
    const r = await c.supervisor.spawn({ task: 'Do as told.', kind: 'agent', agent: 'shell-only', async: true });
    assert.ok(r.ok, JSON.stringify(!r.ok && r.error));
    runId = r.value.id;
    const done = await c.supervisor.wait(runId);
    assert.ok(done.ok);
    assert.equal(done.value.endReason, 'completed', `${done.value.error?.message} ${done.value.stderrTail}`);
    const offered = (m.requests[0]!.body.tools as { function: { name: string } }[]).map((x) => x.function.name);
    assert.deepEqual(offered, ['shell', 'finish']);
    const v = verdict(String((done.value.result as { answer: string }).answer));
    assert.equal(v.log, true, 'the bearer is valid: a method of the loop is served');
    assert.equal(v.spawn, 'tool_not_offered', String(v.spawnMessage));
    assert.match(String(v.spawnMessage), /outside this run's tool surface/);
    assert.equal(v.refsList, 'tool_not_offered');
    assert.ok(Array.isArray(v.hello) && !(v.hello as string[]).includes('spawn'), 'hello lists only the surface');
    assert.ok((v.hello as string[]).includes('llm.complete'));
    // The lease is the same it would be without the spec's narrowing: it still grants spawn.
    const lease = c.leases.get(done.value.leaseId!);
    assert.ok(lease?.caps.includes('spawn'), 'the lease grants spawn; the surface, not the lease, refused it');
    assert.deepEqual((await c.supervisor.list({})).map((x) => x.id), [runId], 'no child was spawned');
    const ledger = fs.readdirSync(path.join(home, 'ledger')).map((f) => fs.readFileSync(path.join(home, 'ledger', f), 'utf8')).join('\n');
    assert.match(ledger, /"type":"broker\.denied"[^\n]*"method":"spawn"[^\n]*"code":"tool_not_offered"|"code":"tool_not_offered"[^\n]*"method":"spawn"/, 'the refusal is ledgered');
  } finally {
    await c.close();
  }
  assert.deepEqual(await leftovers(home, { released: true }), []);
});

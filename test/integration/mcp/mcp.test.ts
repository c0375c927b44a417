/**
 * `brig mcp` end to end: the SDK's real Client over a real stdio transport spawning
 * `node dist/cli/main.js mcp` (build dist first: `npx tsc -p tsconfig.json`), on a real engine
 * and the real DuckDB helper — once with no daemon (the server runs its own supervisor) and
 * once against `brig serve` in the same home. One session each: list the tools, spawn a command
 * child, wait for its envelope, list, count, grep and read its refs (a tool and a resource),
 * a hostile query refused as a tool result, a sleeping child killed; nothing is left behind.
 */
import { test, type TestContext } from 'node:test';
import assert from 'node:assert/strict';
import path from 'node:path';
import { Client } from '@modelcontextprotocol/sdk/client/index.js';
import { StdioClientTransport } from '@modelcontextprotocol/sdk/client/stdio.js';
import type { CallToolResult } from '@modelcontextprotocol/sdk/types.js';
import { requireEngine } from '../../helpers/engine.js';
import { ApiClient } from '../../../src/client/index.js';
import { daemonHome, recordOnDisk } from '../daemon/serve-proc.js';
import { leftovers, until } from '../runs/fixture.js';

const ROOT = path.resolve(import.meta.dirname, '../../..');
const MAIN = path.join(ROOT, 'dist/cli/main.js');

type Structured = Record<string, unknown>;
interface Session {
  client: Client;
  stderr: () => string;
  /** Protocol-level errors the client saw (a stray line on stdout would be one). */
  transportErrors: Error[];
  call(name: string, args: Record<string, unknown>, o?: { onprogress?: (p: { progress: number; message?: string }) => void }): Promise<CallToolResult>;
  close(): Promise<void>;
}

async function openSession(t: TestContext, home: string): Promise<Session> {
  const env: Record<string, string> = {};
  for (const [k, v] of Object.entries(process.env)) if (v !== undefined && !k.startsWith('BRIG_')) env[k] = v;
  const transport = new StdioClientTransport({ command: process.execPath, args: [MAIN, 'mcp'], env: { ...env, BRIG_HOME: home }, cwd: ROOT, stderr: 'pipe' });
  let err = '';
  transport.stderr?.on('data', (c: Buffer) => (err += c.toString()));
  const transportErrors: Error[] = [];
  const client = new Client({ name: 'brig-mcp-test', version: '1' });
  client.onerror = (e) => void transportErrors.push(e);
  await client.connect(transport);
  let closed = false;
  const close = async () => {
    if (!closed) await client.close();
    closed = true;
  };
  t.after(close);
  return {
    client,
    stderr: () => err,
    transportErrors,
    call: async (name, args, o = {}) => {
      const r = (await client.callTool({ name, arguments: args }, undefined, { timeout: 60_000, ...(o.onprogress ? { onprogress: o.onprogress } : {}) })) as CallToolResult;
      t.diagnostic(`→ ${name} ${JSON.stringify(args)}\n← ${r.isError ? '[isError] ' : ''}${(r.content[0] as { text: string }).text.slice(0, 600)}`);
      return r;
    },
    close,
  };
}

const sc = <T = Structured>(r: CallToolResult) => r.structuredContent as T;
const text = (r: CallToolResult) => (r.content[0] as { text: string }).text;

/** Waits (tool calls of at most 20 s) until every run ended; returns the last wait's runs. */
async function waitEnded(s: Session, runIds: string[], progress: { message?: string }[] = []) {
  for (let i = 0; i < 10; i++) {
    const r = await s.call('wait', { runIds, timeoutMs: 20_000 }, { onprogress: (p) => void progress.push(p) });
    assert.equal(r.isError, undefined, text(r));
    const w = sc<{ runs: { runId: string; ended: boolean; endReason: string | null; killedBy: string | null; envelope?: string; refs?: { ref: string; path: string; uri: string }[] }[]; timedOut: boolean }>(r);
    if (!w.timedOut) return w.runs;
  }
  throw new Error(`runs never ended: ${runIds.join(' ')}`);
}

/** The session; returns the id of a run it left running when it closed. */
async function exercise(t: TestContext, home: string, expectMode: RegExp): Promise<string> {
  const s = await openSession(t, home);
  const { tools } = await s.client.listTools();
  t.diagnostic(`tools: ${tools.map((x) => `${x.name}${x.annotations?.readOnlyHint ? ' (ro)' : ''}${x.annotations?.destructiveHint ? ' (destructive)' : ''}`).join(', ')}`);
  assert.deepEqual(
    tools.map((x) => x.name).sort(),
    ['explain', 'graph_cancel', 'graph_define', 'graph_explain', 'graph_run', 'graph_status', 'graph_wait', 'history', 'kill', 'list', 'ref_grep', 'ref_jq', 'ref_jsonpath', 'ref_list', 'ref_read', 'ref_sql', 'result', 'send', 'spawn', 'status', 'steer', 'wait'],
  );
  const ann = Object.fromEntries(tools.map((x) => [x.name, x.annotations!]));
  assert.equal(ann.kill!.destructiveHint, true);
  assert.equal(ann.ref_sql!.readOnlyHint, true);
  assert.equal(ann.spawn!.readOnlyHint, false);
  assert.ok(tools.every((x) => x.annotations?.openWorldHint === false));
  assert.match(s.stderr(), expectMode, s.stderr());

  // A command child: spawn answers at once; wait gives its envelope with the ref handles.
  const sp = await s.call('spawn', { task: 'count to 1000', argv: ['sh', '-c', 'seq 1 1000 > out/n.txt; echo done'] });
  assert.equal(sp.isError, undefined, text(sp));
  const runId = sc<{ runId: string }>(sp).runId;
  const [ended] = await waitEnded(s, [runId]);
  assert.equal(ended!.endReason, 'completed', JSON.stringify(ended));
  const n = ended!.refs!.find((r) => r.path === 'out/n.txt');
  assert.ok(n, JSON.stringify(ended!.refs));
  assert.ok(ended!.envelope!.includes(n.ref), 'the envelope names the handle');

  const list = sc<{ refs: { ref: string; path: string; lines: number; bytes: number }[] }>(await s.call('ref_list', { runId }));
  assert.equal(list.refs.find((r) => r.ref === n.ref)?.lines, 1000);
  const count = await s.call('ref_sql', { ref: n.ref, query: 'SELECT count(*) AS n FROM ref' });
  assert.deepEqual(sc<{ rows: unknown[][] }>(count).rows, [[1000]], text(count));
  const grep = await s.call('ref_grep', { ref: n.ref, pattern: '^99[0-9]$' });
  assert.equal(sc<{ returned: number }>(grep).returned, 10, text(grep));
  assert.match(text(grep), /999/);
  const read = await s.call('ref_read', { ref: n.ref, line: 500, lines: 3 });
  assert.match(sc<{ text: string }>(read).text, /^500\n501\n502\n$/);

  // Hostile: a reader pointed at a host file is refused by the SQL guard, as a tool result.
  const hostile = await s.call('ref_sql', { ref: n.ref, query: "SELECT * FROM read_csv('/etc/passwd')" });
  assert.equal(hostile.isError, true);
  const herr = sc<{ error: { code: string; hint: string } }>(hostile).error;
  assert.equal(herr.code, 'query_refused');
  assert.ok(herr.hint.length > 0);
  assert.match(text(hostile), /\[query_refused\]/);
  assert.doesNotMatch(text(hostile), /root:/);

  // The same ref as a resource: listed, and read as its (here whole) head.
  const { resources } = await s.client.listResources();
  assert.ok(resources.some((r) => r.uri === n.uri), JSON.stringify(resources.map((r) => r.uri)));
  const res = await s.client.readResource({ uri: n.uri });
  const body = (res.contents[0] as { text: string }).text;
  assert.ok(body.startsWith('1\n2\n3\n') && body.endsWith('999\n1000\n'), body.slice(-40));

  const ex = await s.call('explain', { runId });
  assert.equal(ex.isError, undefined, text(ex));
  assert.ok(sc<{ leaseDecisions: string[] }>(ex).leaseDecisions.some((l) => l.startsWith('granted:')), text(ex));

  // A run with 120 files: wait, explain and ref_list stay bounded (pages, counts), never the whole list.
  const many = await s.call('spawn', { task: 'many files', argv: ['sh', '-c', 'i=0; while [ $i -lt 120 ]; do echo $i > out/f$i.txt; i=$((i+1)); done'] });
  const manyId = sc<{ runId: string }>(many).runId;
  const [manyEnded] = await waitEnded(s, [manyId]);
  assert.equal(manyEnded!.endReason, 'completed', JSON.stringify(manyEnded).slice(0, 300));
  const w = manyEnded as unknown as { refs: unknown[]; refsTotal?: number };
  assert.equal(w.refs.length, 20, 'wait lists the envelope\'s 20 handles');
  assert.ok((w.refsTotal ?? 0) >= 120, `and says how many there are: ${w.refsTotal}`);
  const page1 = await s.call('ref_list', { runId: manyId });
  const p1 = sc<{ refs: { path: string }[]; total: number; more: number }>(page1);
  assert.equal(p1.refs.length, 50);
  assert.equal(p1.more, p1.total - 50);
  assert.match(text(page1), /more refs .*offset 50/);
  const last = sc<{ refs: { path: string }[]; more: number }>(await s.call('ref_list', { runId: manyId, offset: 100, limit: 200 }));
  assert.equal(last.refs.length, p1.total - 100);
  assert.equal(last.more, 0);
  const manyEx = await s.call('explain', { runId: manyId });
  assert.equal(sc<{ refs: unknown[] }>(manyEx).refs.length, 50);
  assert.match(text(manyEx), /more refs/);

  // A sleeping child, killed: the call is the confirmation; it ends killed by operator.
  const sl = await s.call('spawn', { task: 'sleep', argv: ['sleep', '60'] });
  const sleeper = sc<{ runId: string }>(sl).runId;
  await until(async () => sc<{ status: string }>(await s.call('status', { runId: sleeper })).status === 'running', 'the sleeper runs', 300);
  // A wait that runs out: the run's status, timedOut, and progress notifications meanwhile.
  const progress: { progress: number; message?: string }[] = [];
  const short = await s.call('wait', { runIds: [sleeper], timeoutMs: 2500 }, { onprogress: (p) => void progress.push(p) });
  const sw = sc<{ runs: { ended: boolean; status: string }[]; timedOut: boolean }>(short);
  assert.equal(sw.timedOut, true);
  assert.deepEqual([sw.runs[0]!.ended, sw.runs[0]!.status], [false, 'running']);
  t.diagnostic(`progress notifications: ${JSON.stringify(progress)}`);
  assert.ok(progress.length >= 1, 'a progress notification every 2 s');
  assert.match(progress[0]!.message!, new RegExp(`^0/1 ended; ${sleeper} running`));
  const k = await s.call('kill', { runId: sleeper, confirm: true });
  assert.equal(k.isError, undefined, text(k));
  const [dead] = await waitEnded(s, [sleeper]);
  assert.equal(dead!.endReason, 'killed');
  assert.equal(dead!.killedBy, 'operator');
  const again = await s.call('kill', { runId: sleeper, confirm: true });
  assert.equal(sc<{ error: { code: string } }>(again).error.code, 'not_running');
  // An agent child with no model configured for the supervisor: refused before any run exists.
  const before = sc<{ total: number }>(await s.call('list', {})).total;
  const agent = await s.call('spawn', { task: 'summarize /artifacts', agent: 'general' });
  assert.equal(sc<{ error: { code: string } }>(agent).error.code, 'model_unavailable', text(agent));
  assert.equal(sc<{ total: number }>(await s.call('list', {})).total, before, 'no run was created');
  const unknown = await s.call('status', { runId: 'r-0000000000000000' });
  assert.equal(sc<{ error: { code: string } }>(unknown).error.code, 'run_not_found');

  // Left running when the session ends: an in-process supervisor kills it (killedBy system)
  // rather than leave it without a watchdog; the daemon keeps it (the next test kills it).
  const left = sc<{ runId: string }>(await s.call('spawn', { task: 'outlive the session?', argv: ['sleep', '60'] })).runId;
  await until(async () => sc<{ status: string }>(await s.call('status', { runId: left })).status === 'running', 'the last sleeper runs', 300);
  assert.deepEqual(s.transportErrors.map((e) => e.message), [], 'stdout carried the protocol only');
  await s.close();
  return left;
}

test('brig mcp without a daemon: its own supervisor serves a whole session over stdio; nothing is left', { timeout: 300_000 }, async (t) => {
  if (!(await requireEngine(t))) return;
  const h = await daemonHome(t);
  const left = await exercise(t, h.home, /in-process supervisor/);
  const rec = recordOnDisk(h.home, left);
  assert.equal(rec?.endReason, 'killed', JSON.stringify(rec));
  assert.equal(rec?.killedBy, 'system');
  assert.deepEqual(await leftovers(h.home, { released: true }), [], 'no container or volume left');
});

test('brig mcp with `brig serve` in the home: the same session through the daemon', { timeout: 300_000 }, async (t) => {
  if (!(await requireEngine(t))) return;
  const h = await daemonHome(t);
  const serve = await h.serve();
  const left = await exercise(t, h.home, /the daemon of/);
  const api = new ApiClient(serve.socket);
  try {
    assert.equal((await api.get(left))?.status, 'running', 'the daemon keeps a run the session left');
    const k = await api.kill(left, { confirm: true });
    assert.ok(k.ok);
    await api.wait(left, { timeoutMs: 30_000 });
  } finally {
    await api.close();
  }
  await serve.signal('SIGTERM');
  assert.deepEqual(await leftovers(h.home, { released: true }), [], 'no container or volume left');
});

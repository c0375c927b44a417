/**
 * The home's journal (util/write-journal.ts) across a crash of a real `brig serve`. A machine
 * crash cannot be pulled here, so what it would do to the files is done by hand after a
 * SIGKILL: the run's record torn, its manifest, pointer and envelope gone — the page cache the
 * journal's lines outlived. The next start must replay them before it reads anything: the run
 * ended as it did, its refs and its envelope as they were. dist/ must be built.
 */
import { test } from 'node:test';
import assert from 'node:assert/strict';
import fs from 'node:fs';
import path from 'node:path';
import { ApiClient } from '../../../src/client/index.js';
import { requireEngine } from '../../helpers/engine.js';
import { daemonHome, recordOnDisk } from '../daemon/serve-proc.js';

const segments = (dir: string) => (fs.existsSync(dir) ? fs.readdirSync(dir).filter((n) => n.endsWith('.log')) : []);
const lines = (dir: string) => segments(dir).reduce((n, s) => n + fs.readFileSync(path.join(dir, s), 'utf8').split('\n').filter(Boolean).length, 0);

// req: results:journal
test('[INV-4] a SIGKILL, then the files lost as a machine crash would lose them: the next start replays the journal — the run ended as it did, its refs and envelope as they were', async (t) => {
  if (!(await requireEngine(t))) return;
  const h = await daemonHome(t);
  const serve = await h.serve();
  const api = new ApiClient(serve.socket);
  const r = await api.spawn({ task: 'journal', kind: 'command', argv: ['sh', '-c', 'echo kept > /workspace/out/q.txt; echo said'] });
  assert.ok(r.ok, JSON.stringify(r));
  const id = r.value.id;
  assert.deepEqual([r.value.status, r.value.endReason], ['ended', 'completed']);
  const first = await api.route('result', { params: { run: id } });
  assert.ok(first.ok, JSON.stringify(first));
  const runDir = path.join(h.paths.runs, id);
  const resDir = path.join(h.paths.results, id, id);
  assert.ok(fs.existsSync(path.join(resDir, 'envelope.json')), 'the envelope was kept');
  assert.ok(lines(h.paths.journal) >= 6, `the run's writes are lines of the journal (${lines(h.paths.journal)})`);

  await serve.signal('SIGKILL');
  // What a lost page cache leaves: a torn record, a directory entry and files never flushed.
  const rec = fs.readFileSync(path.join(runDir, 'run.json'), 'utf8');
  fs.writeFileSync(path.join(runDir, 'run.json'), rec.slice(0, 40));
  fs.rmSync(path.join(resDir, 'refs.json'));
  fs.rmSync(path.join(resDir, 'envelope.json'));
  fs.rmSync(path.join(h.paths.results, '.runs', id));
  assert.equal(recordOnDisk(h.home, id), undefined, 'as left, the record does not even parse');

  const again = await h.serve();
  const api2 = new ApiClient(again.socket);
  assert.match(again.stderr(), /journal replayed after an unclean stop/, 'the operator is told the journal was replayed');
  const back = recordOnDisk(h.home, id);
  assert.deepEqual([back?.status, back?.endReason, back?.exitCode], ['ended', 'completed', 0], 'the record is the last one written');
  const m = await api2.route('manifest', { params: { run: id } });
  assert.ok(m.ok, JSON.stringify(m));
  assert.ok((m.value.refs as { path?: string }[]).some((x) => x.path === 'out/q.txt'), 'the manifest lists the output again');
  const env = await api2.route('result', { params: { run: id } });
  assert.ok(env.ok, JSON.stringify(env));
  assert.equal(env.value.envelope, first.value.envelope, 'the envelope is the one cast before the crash');
  assert.deepEqual(segments(h.paths.journal).length, 1, 'the replayed segment is gone, a fresh one open');

  // A clean stop checkpoints the journal: nothing is left to replay.
  await again.signal('SIGTERM');
  assert.deepEqual(segments(h.paths.journal), []);
});

test('a run record that is not what brig wrote is left as it is, and said: in the start report, the log and the ledger', async (t) => {
  if (!(await requireEngine(t))) return;
  const h = await daemonHome(t);
  const id = 'r-0123456789abcdef';
  fs.mkdirSync(path.join(h.paths.runs, id), { recursive: true, mode: 0o700 });
  fs.writeFileSync(path.join(h.paths.runs, id, 'run.json'), '{"not": "a run record"', { mode: 0o600 });
  const serve = await h.serve();
  assert.deepEqual(serve.report.corrupt, [id], 'the start report names it');
  await new Promise((r) => setTimeout(r, 200));
  assert.match(serve.stderr(), /run records not read \(state_corrupt\)/, 'the log says so');
  assert.equal(fs.readFileSync(path.join(h.paths.runs, id, 'run.json'), 'utf8'), '{"not": "a run record"', 'left as it is');
  await serve.signal('SIGTERM');
});

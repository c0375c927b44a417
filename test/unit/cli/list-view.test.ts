import { test } from 'node:test';
import assert from 'node:assert/strict';
import fs from 'node:fs';
import os from 'node:os';
import path from 'node:path';
import { runCli } from '../../helpers/cli.js';
import { brigPaths } from '../../../src/config/index.js';
import { RunStore, type RunRecord } from '../../../src/runs/index.js';
import { createRunRecord } from '../../../src/runs/record.js';
import { runJson } from '../../../src/cli/run-view.js';

function rec(id: string, at: string, p: Partial<RunRecord> = {}): RunRecord {
  const base = createRunRecord({
    id, parent: null, callerId: 'operator', agent: 'default', kind: 'command', label: null, task: `task ${id}`,
    requestHash: `h-${id}`, now: new Date(at), timeoutMs: 60_000, maxSteps: 10, async: false, expectedOutputs: [], resumeOf: null,
  });
  return { ...base, ...p };
}

async function homeWith(runs: RunRecord[]): Promise<string> {
  const home = fs.mkdtempSync(path.join(os.tmpdir(), 'brig-list-'));
  const store = new RunStore(brigPaths(home).runs);
  for (const r of runs) await store.save(r);
  return home;
}

test('brig list: a header row, one row per run oldest first, the live progress line; --limit keeps the newest N; --json has no header', async (t) => {
  const home = await homeWith([
    rec('r-000000000000000b', '2026-01-01T00:00:02Z', { status: 'running', startedAt: '2026-01-01T00:00:02Z', stepsExecuted: 3, progressLine: 'parsing logs', label: 'nightly' }),
    rec('r-000000000000000a', '2026-01-01T00:00:01Z', { status: 'ended', endReason: 'killed', killedBy: 'operator', startedAt: '2026-01-01T00:00:01Z', endedAt: '2026-01-01T00:00:03Z', partial: true }),
    rec('r-000000000000000c', '2026-01-01T00:00:03Z', { status: 'queued' }),
  ]);
  t.after(() => fs.rmSync(home, { recursive: true, force: true }));
  const r = await runCli(['list'], { home });
  assert.equal(r.code, 0, r.err);
  const lines = r.out.trimEnd().split('\n');
  assert.match(lines[0]!, /^RUN +STATUS +END +DEPTH +STEPS +ELAPSED +DETAILS$/);
  assert.deepEqual(lines.slice(1).map((l) => l.split(/\s+/)[0]), ['r-000000000000000a', 'r-000000000000000b', 'r-000000000000000c']);
  assert.match(lines[1]!, /ended +killed\(operator\) +1 +0 +2s +\(partial\)$/);
  assert.match(lines[2]!, /running +- +1 +3 +\S+ +\[nightly\]  “parsing logs”$/);
  // Columns line up: every row's STATUS starts where the header's does.
  const col = lines[0]!.indexOf('STATUS');
  for (const l of lines.slice(1)) assert.match(l.slice(col), /^(ended|running|queued)/);

  const two = await runCli(['list', '--limit', '2'], { home });
  assert.deepEqual(two.out.trimEnd().split('\n').slice(1).map((l) => l.split(/\s+/)[0]), ['r-000000000000000b', 'r-000000000000000c']);
  const json = JSON.parse((await runCli(['list', '--limit', '1', '--json'], { home })).out) as { runs: { id: string }[] };
  assert.deepEqual(json.runs.map((x) => x.id), ['r-000000000000000c']);
  const filtered = await runCli(['list', '--status', 'ended'], { home });
  assert.equal(filtered.out.trimEnd().split('\n').length, 2);
  const bad = await runCli(['list', '--limit', '1.5'], { home });
  assert.equal(bad.code, 2);
  assert.match(bad.err, /--limit must be a whole number/);
});

test('brig list says "no runs" when there are none (and --json gives an empty list)', async (t) => {
  const home = await homeWith([]);
  t.after(() => fs.rmSync(home, { recursive: true, force: true }));
  const r = await runCli(['list'], { home });
  assert.equal(r.code, 0, r.err);
  assert.equal(r.out, 'no runs\n');
  assert.deepEqual(JSON.parse((await runCli(['list', '--json'], { home })).out), { runs: [] });
});

test('spawn --json carries the result, the tails, the outputs and the error once; `run` is the rest of the record', async () => {
  const marker = 'RESULT-MARKER-' + 'x'.repeat(50);
  const r = rec('r-00000000000000aa', '2026-01-01T00:00:00Z', {
    status: 'ended', endReason: 'completed', exitCode: 0, result: { text: marker }, stdoutTail: 'STDOUT-MARKER\n', stderrTail: 'STDERR-MARKER\n',
    outputs: [{ path: 'a.txt', bytes: 1 }], leaseId: 'ls_00000000000000000000',
  });
  const env = runJson(r);
  const text = JSON.stringify(env);
  assert.equal(text.split(marker).length - 1, 1, 'the result once');
  assert.equal(text.split('STDERR-MARKER').length - 1, 1, 'stderr once');
  for (const k of ['runId', 'exitCode', 'endReason', 'stdoutTail', 'stderrTail', 'outputs', 'outputDir', 'status', 'files', 'resultDir', 'stdoutPreview', 'refs', 'result', 'missingOutputs']) assert.ok(k in env, k);
  const run = env.run as Record<string, unknown>;
  assert.equal(run.leaseId, 'ls_00000000000000000000');
  for (const k of ['result', 'stdoutTail', 'stderrTail', 'outputs', 'error', 'id']) assert.ok(!(k in run), `run.${k} is said at the top`);
});

test("a child's text reaches the operator's terminal with its control characters shown, not obeyed: labels, tails, errors", async () => {
  const { runLine, runTable, runBlock, termText } = await import('../../../src/cli/run-view.js');
  const OSC52 = '\x1b]52;c;ZWNobyBwd25lZA==\x07';
  const CSI = '\x9b2J';
  const r = rec('r-000000000000000c', '2026-01-01T00:00:01Z', {
    status: 'ended', endReason: 'failed', label: `evil${OSC52}`, stdoutTail: `out\r${CSI}\n`, stderrTail: `err\x1b[2J\n`,
    error: { code: 'child_failed', message: `boom\x1b[31m` } as RunRecord['error'],
  });
  for (const text of [runLine(r), runTable([r]), runBlock(r)]) {
    assert.doesNotMatch(text, /[\x1b\x07\x9b\r]/, JSON.stringify(text));
  }
  assert.match(runLine(r), /\\x1b\]52;c;/, 'shown as text');
  assert.equal(termText('line 1\n\tline 2'), 'line 1\n\tline 2', 'newlines and tabs stay');
});

test('spawn --json says oomKilled from the record\'s flag, never from the error text', () => {
  const failed = { status: 'ended', endReason: 'failed', exitCode: 137 } as const;
  const oom = rec('r-00000000000000ab', '2026-01-01T00:00:00Z', { ...failed, oomKilled: true, error: { code: 'child_failed', message: 'the child exited with code 137' } });
  const text = rec('r-00000000000000ac', '2026-01-01T00:00:00Z', { ...failed, error: { code: 'child_failed', message: 'the child ran out of memory' } });
  assert.equal(runJson(oom).oomKilled, true);
  assert.equal(runJson(text).oomKilled, false, 'a message that mentions memory is only text');
  assert.ok(!('oomKilled' in (runJson(oom).run as Record<string, unknown>)), 'said once, at the top');
});

test('brig list --json pages like the table: the newest 50 and `more`, how many older runs were left out; --all gives every run', async (t) => {
  const runs = Array.from({ length: 55 }, (_, i) => rec(`r-${(0x100 + i).toString(16).padStart(16, '0')}`, new Date(Date.UTC(2026, 0, 1, 0, 0, i)).toISOString(), { status: 'ended', endReason: 'completed' }));
  const home = await homeWith(runs);
  t.after(() => fs.rmSync(home, { recursive: true, force: true }));
  const page = JSON.parse((await runCli(['list', '--json'], { home })).out) as { runs: { id: string }[]; more?: number; hint?: string };
  assert.equal(page.runs.length, 50);
  assert.equal(page.runs.at(-1)!.id, runs.at(-1)!.id, 'the newest is in the page');
  assert.equal(page.runs[0]!.id, runs[5]!.id, 'the five oldest are left out');
  assert.equal(page.more, 5, 'how many older runs were left out');
  assert.match(page.hint!, /5 older runs left out: --limit N or --all/);
  const table = (await runCli(['list'], { home })).out;
  assert.match(table, /\(the newest 50 shown; 5 older runs left out: --limit N or --all\)\n$/, 'the table says how many too');
  const all = JSON.parse((await runCli(['list', '--json', '--all'], { home })).out) as { runs: unknown[]; more?: number };
  assert.equal(all.runs.length, 55);
  assert.equal(all.more, undefined);
});

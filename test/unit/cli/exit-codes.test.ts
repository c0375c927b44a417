import { test } from 'node:test';
import assert from 'node:assert/strict';
import fs from 'node:fs';
import path from 'node:path';
import { EXIT, exitForRuns, exitTable } from '../../../src/cli/exit-codes.js';
import { exitCodeFor, type ErrorKind } from '../../../src/util/errors.js';
import { ERROR_CODES } from '../../../src/protocol/error-codes.js';
import type { RunRecord } from '../../../src/runs/index.js';

const DOC = path.resolve(import.meta.dirname, '../../../docs/cli.md');

/** The rows of the markdown table under `## Exit codes` in docs/cli.md. */
function documented(): { code: number; name: string; when: string }[] {
  const text = fs.readFileSync(DOC, 'utf8');
  const section = text.slice(text.indexOf('\n## Exit codes\n'));
  assert.ok(section.length > 0, 'docs/cli.md has an "Exit codes" section');
  const lines = section.split('\n');
  const head = lines.findIndex((l) => /^\|\s*code\s*\|\s*name\s*\|/.test(l));
  assert.ok(head > 0, 'a | code | name | … | table');
  const rows = [];
  for (const l of lines.slice(head + 2)) {
    if (!l.startsWith('|')) break;
    const cells = l.split('|').slice(1, -1).map((c) => c.trim());
    rows.push({ code: Number(cells[0]), name: cells[1]!, when: cells[2] ?? '' });
  }
  return rows;
}

test('docs/cli.md documents exactly the exit codes the CLI uses, in one table', () => {
  const doc = documented();
  assert.deepEqual(doc.map(({ code, name }) => ({ code, name })), exitTable().map(({ code, name }) => ({ code, name })));
  for (const r of doc) assert.ok(r.when.length > 10, `exit ${r.code} says when`);
});

test('every exit code is distinct: the outcomes and each error kind; only the run failing is 1', () => {
  const codes = exitTable().map((r) => r.code);
  assert.equal(new Set(codes).size, codes.length, `duplicates in ${codes.join(' ')}`);
  const kinds = [...new Set(Object.values(ERROR_CODES).map((c) => c.kind))] as ErrorKind[];
  for (const k of kinds) assert.ok(exitTable().some((r) => r.name === k && r.code === exitCodeFor(k)), `kind ${k} is in the table`);
  assert.equal(exitCodeFor('internal'), 70);
  assert.equal(exitCodeFor(ERROR_CODES.ledger_corrupt.kind), 10, 'a corrupt ledger is not a brig bug');
  assert.deepEqual([EXIT.runFailed, EXIT.waitTimedOut, EXIT.outputsMissing], [1, 8, 9]);
});

const rec = (p: Partial<RunRecord>): RunRecord => ({ id: 'r-0', status: 'ended', endReason: 'completed', missingOutputs: [], ...p }) as RunRecord;

test('exitForRuns: a known bad end wins over not knowing yet (1, then 9, then 8); --async not ended is 0', () => {
  const done = rec({});
  const failed = rec({ endReason: 'failed' });
  const missing = rec({ missingOutputs: ['a.txt'] });
  const going = rec({ status: 'running', endReason: null });
  assert.equal(exitForRuns([done], { notEnded: 'timedOut' }), 0);
  assert.equal(exitForRuns([failed, missing, going], { notEnded: 'timedOut' }), 1);
  assert.equal(exitForRuns([rec({ endReason: 'killed', missingOutputs: ['a'] })], { notEnded: 'timedOut' }), 1, 'a killed run is failed, whatever it left');
  assert.equal(exitForRuns([missing, going], { notEnded: 'timedOut' }), 9);
  assert.equal(exitForRuns([done, going], { notEnded: 'timedOut' }), 8);
  assert.equal(exitForRuns([going], { notEnded: 'ok' }), 0);
});

test('the commands return them: unknown flag 2, not found 4, `wait --timeout` before the end 8, a broken ledger 10', async (t) => {
  const { runCli } = await import('../../helpers/cli.js');
  const { brigPaths } = await import('../../../src/config/index.js');
  const { FileLedger } = await import('../../../src/ledger/index.js');
  const { RunStore } = await import('../../../src/runs/index.js');
  const { createRunRecord } = await import('../../../src/runs/record.js');
  const os = await import('node:os');
  const home = fs.mkdtempSync(path.join(os.tmpdir(), 'brig-exit-'));
  t.after(() => fs.rmSync(home, { recursive: true, force: true }));

  assert.equal((await runCli(['list', '--limt', '1'], { home })).code, 2);
  assert.equal((await runCli(['wait', 'r-0000000000000000'], { home })).code, 4);

  // A run another process supervises, still running: wait gives up at its timeout.
  const rec = createRunRecord({
    id: 'r-00000000000000ff', parent: null, callerId: 'operator', agent: 'default', kind: 'command', label: null, task: 't',
    requestHash: 'h', now: new Date(), timeoutMs: 60_000, maxSteps: 10, async: true, expectedOutputs: [], resumeOf: null,
  });
  await new RunStore(brigPaths(home).runs).save({ ...rec, status: 'running', startedAt: new Date().toISOString() });
  const w = await runCli(['wait', rec.id, '--timeout', '0.3'], { home });
  assert.equal(w.code, 8, w.err);
  assert.match(w.err, /wait timed out; still going: r-00000000000000ff/);
  assert.match(w.out, /^run r-00000000000000ff running/);

  const ledger = new FileLedger({ dir: brigPaths(home).ledger });
  for (let i = 0; i < 3; i++) ledger.append({ type: 'broker.call', runId: `run_${i}`, n: i });
  await ledger.close();
  const lines = fs.readFileSync(ledger.segment, 'utf8').split('\n');
  const i = lines.findIndex((l) => l.includes('"n":1'));
  lines[i] = lines[i]!.replace('"n":1', '"n":7');
  fs.writeFileSync(ledger.segment, lines.join('\n'));
  const v = await runCli(['audit', 'verify'], { home });
  assert.equal(v.code, 10, v.err);
  assert.match(v.err, /\[ledger_corrupt\]/);
});

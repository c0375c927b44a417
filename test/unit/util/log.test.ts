import { test } from 'node:test';
import assert from 'node:assert/strict';
import fs from 'node:fs';
import os from 'node:os';
import path from 'node:path';
import { createLog, RotatingFile } from '../../../src/util/log.js';

test('the log: JSON lines with a level name, secrets and text censored wherever they appear, levels filter', () => {
  const lines: string[] = [];
  const log = createLog({ level: 'info', stream: { write: (s) => void lines.push(s) } });
  const deep = { a: { b: { c: [{ token: 'tok-SECRET' }, { d: { Authorization: 'Bearer SECRET', keep: 7 } }] } } };
  log.info({ runId: 'r-1', token: 'tok-SECRET', apiKey: 'sk-SECRET', task: 'the task TEXT', nested: { authorization: 'Bearer SECRET', text: 'a steer TEXT' }, deep }, 'run spawned');
  log.debug({ runId: 'r-2' }, 'not at info');
  assert.equal(lines.length, 1);
  const j = JSON.parse(lines[0]!) as Record<string, unknown>;
  assert.equal(j.level, 'info');
  assert.equal(j.msg, 'run spawned');
  assert.equal(j.runId, 'r-1');
  assert.match(String(j.time), /^\d{4}-\d\d-\d\dT/);
  assert.doesNotMatch(lines[0]!, /SECRET|TEXT/);
  assert.equal(j.token, '[redacted]');
  assert.deepEqual(j.deep, { a: { b: { c: [{ token: '[redacted]' }, { d: { Authorization: '[redacted]', keep: 7 } }] } } }, 'censored at any depth, the rest kept');
  assert.equal(deep.a.b.c[0]!.token, 'tok-SECRET', "the caller's object is not changed");
  // A cycle or a structure deeper than a log line should be is cut, never walked forever.
  const cyclic: Record<string, unknown> = { runId: 'r-3' };
  cyclic.self = cyclic;
  let nest: Record<string, unknown> = { token: 'tok-SECRET' };
  for (let i = 0; i < 20; i++) nest = { n: nest };
  log.info({ cyclic, nest }, 'odd shapes');
  assert.equal(lines.length, 2);
  assert.doesNotMatch(lines[1]!, /SECRET/);
  assert.match(lines[1]!, /"self":"\[cut\]"/);
  // An error is still serialized by pino (its message and stack), not walked as a plain object.
  log.error({ err: new Error('boom') }, 'failed');
  assert.equal((JSON.parse(lines[2]!) as { err: { message: string } }).err.message, 'boom');
});

test('a rotating log file: rotates past maxBytes, keeps `keep` older files, newest is .1', () => {
  const dir = fs.mkdtempSync(path.join(os.tmpdir(), 'brig-log-'));
  try {
    const file = path.join(dir, 'brig.log');
    const f = new RotatingFile(file, 100, 2);
    for (let i = 0; i < 20; i++) f.write(`${JSON.stringify({ i, pad: 'x'.repeat(20) })}\n`);
    f.close();
    assert.deepEqual(fs.readdirSync(dir).sort(), ['brig.log', 'brig.log.1', 'brig.log.2']);
    for (const n of ['brig.log', 'brig.log.1', 'brig.log.2']) assert.ok(fs.statSync(path.join(dir, n)).size <= 100, n);
    const last = fs.readFileSync(file, 'utf8').trim().split('\n').map((l) => (JSON.parse(l) as { i: number }).i);
    const prev = fs.readFileSync(`${file}.1`, 'utf8').trim().split('\n').map((l) => (JSON.parse(l) as { i: number }).i);
    assert.equal(last.at(-1), 19);
    assert.equal(prev.at(-1)! + 1, last[0], '.1 holds the lines just before the current file');
    assert.equal((fs.statSync(file).mode & 0o777).toString(8), '600');
  } finally {
    fs.rmSync(dir, { recursive: true, force: true });
  }
});

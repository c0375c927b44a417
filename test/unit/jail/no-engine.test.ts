import { test } from 'node:test';
import assert from 'node:assert/strict';
import { DockerJailDriver, gatherDoctorFacts, judgeDoctor } from '../../../src/jail/index.js';
import { isBrigError } from '../../../src/util/errors.js';

const gone = () => new DockerJailDriver({ dockerHost: 'unix:///nonexistent/brig-test/docker.sock', owner: 'unit' });

test('a missing engine is engine_unavailable everywhere, with the hint to start it', async () => {
  const d = gone();
  await assert.rejects(d.info(), (e) => isBrigError(e, 'engine_unavailable'));
  await assert.rejects(d.listLabelled(), (e) => isBrigError(e, 'engine_unavailable'));
  await assert.rejects(
    d.create({ runId: 'r1', leaseId: 'l1', rootRunId: 'r1', argv: ['true'], env: {}, limits: { memoryMb: 64, cpu: 1, pids: 16, tmpfsMb: 4, diskMb: 64 }, artifacts: [] }),
    (e) => isBrigError(e, 'engine_unavailable') && /make engine/.test(e.hint),
  );
});

test('doctor without an engine reports one failing check that says how to start it', async () => {
  const checks = judgeDoctor(await gatherDoctorFacts(gone()));
  assert.equal(checks.length, 1);
  assert.equal(checks[0]!.ok, false);
  assert.match(checks[0]!.hint ?? '', /make engine/);
});

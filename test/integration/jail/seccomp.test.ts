/**
 * [INV-2] brig's own seccomp profile, proven from inside a real jail with a static probe
 * (syscall-probe.c, built by syscall-probe.ts with gcc -static on the host and put into
 * /workspace as an input): what the profile removes fails, what children use works. The same
 * probe in a container with the engine's default profile shows each of those calls succeed —
 * the probe is real, and the jail without brig's profile would not pass this test.
 */
import { test, after } from 'node:test';
import assert from 'node:assert/strict';
import fs from 'node:fs';
import os from 'node:os';
import path from 'node:path';
import { PassThrough } from 'node:stream';
import { requireEngine } from '../../helpers/engine.js';
import { renderCreateBody } from '../../../src/jail/index.js';
import { verifyInspect, type InspectView } from '../../../src/jail/docker/verify.js';
import { driver, ROOT, runToEnd, spec, sweepOwn } from './helpers.js';
import { hostI386, syscallProbe } from './syscall-probe.js';

after(sweepOwn);

type Probe = Record<string, string>;
const REFUSED = ['EPERM', 'ENOSYS'];

/** Calls brig's profile refuses (each also succeeds under the engine's default below). */
const REMOVED = ['io_uring_setup', 'io_setup', 'mq_open', 'shmget', 'msgget', 'sync', 'personality_uname26', 'modify_ldt', 'socket_netlink_uevent', 'socket_vsock', 'ptrace_traceme'];

// req: jail:seccomp
test('[INV-2] from inside a real jail: io_uring_setup and the other removed syscalls fail; what children use still works', async (t) => {
  if (!(await requireEngine(t))) return;
  const probe = await syscallProbe(t);
  if (!probe) return;
  const inputs = [{ path: 'syscall-probe', data: probe, mode: 0o755 }];
  const { exit, tails } = await runToEnd(spec('seccomp', ['/workspace/syscall-probe'], { inputs }));
  assert.equal(exit.exitCode, 0, tails.stderrTail);
  const r = JSON.parse(tails.stdoutTail) as Probe;

  assert.ok(REFUSED.includes(r.io_uring_setup!), `io_uring_setup: ${r.io_uring_setup}`);
  for (const k of REMOVED) assert.ok(REFUSED.includes(r[k]!), `${k} answered ${r[k]} inside the jail`);
  // AF_ALG: refused by the filter before the kernel looks for the family (EAFNOSUPPORT without it).
  assert.equal(r.socket_alg, 'EPERM');
  assert.equal(r.socket_packet, 'EPERM');
  // The i386 syscall table (int 0x80) is not in the filter's architectures: killed or refused,
  // never served. On a kernel without IA32 emulation it faults for every process (the host
  // probe says so): the table is not there to serve, which is the same property.
  const host = await hostI386(probe);
  const i386 = r.i386_getpid!;
  if (host.served) assert.ok(['SIGSYS', 'EPERM', 'ENOSYS', 'refused'].includes(i386), `i386 getpid answered ${i386} inside the jail`);
  else assert.ok(['SIGSYS', 'EPERM', 'ENOSYS', 'refused', 'SIGSEGV'].includes(i386), `i386 getpid answered ${i386} inside the jail (${host.why})`);
  t.diagnostic(`i386 getpid inside the jail: ${i386} (${host.why})`);
  // clone3 says ENOSYS so libc falls back to clone(2), whose namespace flags stay filtered.
  assert.equal(r.clone3, 'ENOSYS');
  for (const k of ['socket_unix', 'socket_inet', 'socket_inet6', 'socket_netlink_route', 'personality_query']) assert.equal(r[k], 'ok', `${k} must keep working`);
});

// req: jail:verified
test('[INV-2] the same probe under the engine\'s default seccomp profile: every removed call succeeds, and verify calls that container drift', async (t) => {
  if (!(await requireEngine(t))) return;
  const probe = await syscallProbe(t);
  if (!probe) return;
  const dir = await fs.promises.mkdtemp(path.join(os.tmpdir(), 'brig-seccomp-'));
  t.after(() => fs.rmSync(dir, { recursive: true, force: true }));
  await fs.promises.chmod(dir, 0o755); // the jail user must reach it
  const bin = path.join(dir, 'syscall-probe');
  await fs.promises.writeFile(bin, probe, { mode: 0o755 });
  const image = await driver.ensureImage();
  const s = spec('default-seccomp', ['/probe/syscall-probe']);
  const rendered = renderCreateBody(s, image);
  assert.ok(rendered.ok);
  // brig's body with the engine's default profile (no seccomp= option) and the probe bound in
  // read-only instead of the workspace volume: the control.
  const weak = structuredClone(rendered.value) as unknown as { HostConfig: Record<string, unknown> };
  weak.HostConfig.SecurityOpt = ['no-new-privileges'];
  weak.HostConfig.Mounts = [{ Type: 'bind', Source: dir, Target: '/probe', ReadOnly: true }];
  weak.HostConfig.ReadonlyPaths = undefined;
  const c = await driver.docker.createContainer({ name: `brig-run-${s.runId}`, ...(weak as object), Labels: { 'dev.brig.test-root': ROOT } });
  try {
    const drift = verifyInspect((await c.inspect()) as unknown as InspectView, rendered.value, s.limits).map((d) => d.field);
    assert.ok(drift.includes('HostConfig.SecurityOpt'), `the engine default profile was not drift: ${drift.join(', ')}`);
    const stream = await c.attach({ stream: true, stdout: true, stderr: true });
    const stdout = new PassThrough();
    const chunks: Buffer[] = [];
    stdout.on('data', (b: Buffer) => chunks.push(b));
    driver.docker.modem.demuxStream(stream, stdout, new PassThrough());
    const ended = new Promise((r) => stream.on('end', r));
    await c.start();
    await c.wait();
    await ended;
    const r = JSON.parse(Buffer.concat(chunks).toString()) as Probe;
    assert.equal(r.io_uring_setup, 'ok', 'io_uring is open under the engine default: the attack surface brig removes');
    for (const k of REMOVED) assert.equal(r[k], 'ok', `${k} under the engine default`);
    // The one row no profile can show on a kernel without a 32-bit table: skipped visibly, with why.
    const host = await hostI386(probe);
    await t.test('the i386 table is served under the engine default', (st) => {
      if (!host.served) return st.skip(`cannot be shown here: ${host.why}`);
      assert.equal(r.i386_getpid, 'ok', 'the i386 table is served under the engine default');
    });
  } finally {
    await c.remove({ force: true });
  }
});

/**
 * brig's seccomp profile (src/jail/docker/seccomp.ts) against the engine's default it is cut
 * from: test/unit/jail/fixtures/moby-seccomp-default-v20.10.24.json is moby's
 * profiles/seccomp/default.json at tag v20.10.24 (the engine this repo targets), verbatim.
 */
import { test } from 'node:test';
import assert from 'node:assert/strict';
import fs from 'node:fs';
import path from 'node:path';
import { ENGINE_DEFAULT_ALLOWLIST, SECCOMP_JSON, SECCOMP_PROFILE, SECCOMP_REMOVED, SECCOMP_RULES_REMOVED } from '../../../src/jail/docker/seccomp.js';

const MOBY = JSON.parse(fs.readFileSync(path.join(import.meta.dirname, 'fixtures/moby-seccomp-default-v20.10.24.json'), 'utf8')) as {
  syscalls: { names: string[]; action: string; args: unknown[] | null; includes: Record<string, unknown>; excludes: Record<string, unknown> }[];
};
const SHIPPED = path.resolve(import.meta.dirname, '../../../images/seccomp.json');

const allowedUnconditionally = () => SECCOMP_PROFILE.syscalls.filter((r) => r.action === 'SCMP_ACT_ALLOW' && !r.args?.length).flatMap((r) => r.names);
const allowedAnyhow = () => SECCOMP_PROFILE.syscalls.filter((r) => r.action === 'SCMP_ACT_ALLOW').flatMap((r) => r.names);

test('[INV-2] the shipped images/seccomp.json is the profile the create body carries (a diff there is reviewed)', () => {
  assert.deepEqual(JSON.parse(fs.readFileSync(SHIPPED, 'utf8')), SECCOMP_PROFILE);
  assert.deepEqual(JSON.parse(SECCOMP_JSON), SECCOMP_PROFILE);
  assert.ok(Object.isFrozen(SECCOMP_PROFILE) && Object.isFrozen(SECCOMP_PROFILE.syscalls[0]!.names));
});

test('[INV-2] the base list is the engine default\'s unconditional allowlist, verbatim', () => {
  const unconditional = MOBY.syscalls.find((r) => r.action === 'SCMP_ACT_ALLOW' && Object.keys(r.includes).length === 0 && !r.args?.length)!;
  assert.deepEqual([...ENGINE_DEFAULT_ALLOWLIST], unconditional.names);
});

test('[INV-2] brig allows nothing the engine default does not allow to a capability-less container', () => {
  // Every rule of brig's is one of the engine's, or narrower (socket by family).
  const mobyNames = new Set(MOBY.syscalls.filter((r) => r.action === 'SCMP_ACT_ALLOW').flatMap((r) => r.names));
  for (const n of allowedAnyhow()) assert.ok(mobyNames.has(n), `${n} is not in the engine default`);
  const capGated = new Set(MOBY.syscalls.filter((r) => r.includes.caps).flatMap((r) => r.names));
  const ungated = new Set(MOBY.syscalls.filter((r) => r.action === 'SCMP_ACT_ALLOW' && !r.includes.caps).flatMap((r) => r.names));
  for (const n of allowedAnyhow()) assert.ok(ungated.has(n) || !capGated.has(n), `${n} is open only to a capability in the engine default`);
});

// req: jail:seccomp
test('[INV-2] io_uring and every other removal is allowed by no rule, and each removal has a reason', () => {
  for (const n of ['io_uring_setup', 'io_uring_enter', 'io_uring_register']) assert.ok(!allowedAnyhow().includes(n), `${n} allowed`);
  for (const [name, why] of Object.entries(SECCOMP_REMOVED)) {
    assert.ok(ENGINE_DEFAULT_ALLOWLIST.includes(name), `${name} was never in the engine default: a stale reason`);
    assert.ok(!allowedUnconditionally().includes(name), `${name} still allowed`);
    assert.ok(why.length > 10 && !why.includes('\n'), `${name}: a one-line reason`);
  }
  for (const [rule, why] of Object.entries(SECCOMP_RULES_REMOVED)) assert.ok(why.length > 10 && !why.includes('\n'), `${rule}: a one-line reason`);
  for (const n of ['ptrace', 'modify_ldt']) assert.ok(!allowedAnyhow().includes(n), `${n} allowed`);
});

test('[INV-2] socket only for unix, inet, inet6 and netlink-route; personality only 0 and the query; clone without namespace flags; clone3 ENOSYS', () => {
  const rules = (n: string) => SECCOMP_PROFILE.syscalls.filter((r) => r.names.includes(n));
  assert.deepEqual(
    rules('socket').map((r) => r.args!.map((a) => `${a.index}=${a.value}`).join('&')),
    ['0=1', '0=2', '0=10', '0=16&2=0'],
  );
  assert.deepEqual(rules('personality').map((r) => r.args![0]!.value), [0, 0xffffffff]);
  assert.deepEqual(rules('clone').map((r) => r.args), [[{ index: 0, value: 0x7e020000, valueTwo: 0, op: 'SCMP_CMP_MASKED_EQ' }]]);
  assert.deepEqual(rules('clone3').map((r) => [r.action, r.errnoRet]), [['SCMP_ACT_ERRNO', 38]]);
  assert.equal(SECCOMP_PROFILE.defaultAction, 'SCMP_ACT_ERRNO');
  assert.deepEqual(SECCOMP_PROFILE.archMap, [
    { architecture: 'SCMP_ARCH_X86_64', subArchitectures: [] },
    { architecture: 'SCMP_ARCH_AARCH64', subArchitectures: [] },
  ]);
});

test('what node and busybox need at start is still allowed', () => {
  // A floor, not the full list: the integration tests running scripts, commands and agents in real jails are the proof.
  for (const n of ['read', 'write', 'openat', 'close', 'mmap', 'mprotect', 'brk', 'futex', 'epoll_ctl', 'epoll_wait', 'eventfd2', 'pipe2', 'clone', 'execve', 'wait4', 'rt_sigaction', 'getrandom', 'statx', 'newfstatat', 'prlimit64', 'sched_getaffinity', 'connect', 'arch_prctl', 'rseq', 'set_robust_list', 'madvise', 'fsync', 'mknodat']) {
    assert.ok(allowedAnyhow().includes(n), `${n} refused`);
  }
});

/**
 * How a DuckDB helper is launched: OS caps always, and — when the host allows it (root +
 * util-linux `unshare`, `setpriv`, `mount`) — its own locked-down world.
 *
 * Guarantees, for every helper: an address-space cap (RLIMIT_AS) and a CPU-time cap
 * (RLIMIT_CPU, SIGXCPU then SIGKILL) set by `prlimit` in the launch argv, no core dumps; once
 * it has loaded, and before it reads any request, the helper lowers its address-space cap to
 * its size plus the query budget (`capOwnAddressSpace`) and the pool reads it back from /proc. The kernel enforces them whatever the helper (or
 * DuckDB's buffer manager) thinks its budget is; without `prlimit` no helper starts. Isolated, in addition, once `enterIsolation` returned:
 *   - own network (only a down loopback), mount, PID and IPC namespaces: no network, no
 *     process outside to signal or trace, no shared SysV/POSIX IPC;
 *   - `/` and `/dev/shm` read-only; the only writable place a size-capped tmpfs (DuckDB spills);
 *   - uid/gid 65534, no supplementary groups, no capabilities (effective, permitted,
 *     inheritable, ambient all empty), `no_new_privs`: the launch keeps only CAP_SYS_ADMIN,
 *     CAP_SETUID and CAP_SETGID in the bounding set, enough to mount and then drop for good.
 *     It can read only world-readable files plus the files the pool bind-mounts for the query
 *     it serves (helper-mounts.ts), and write nothing of the host.
 * Verified, not assumed: writes as root next to the spill directory and in `/dev/shm` must fail
 * with EROFS, the spill tmpfs must take a write as the new uid, and /proc/self/status must show
 * the dropped credentials; the helper reports what it read in its first line and the pool
 * refuses a helper that kept a privilege.
 * Fails closed: a failed mount or drop ends the helper; the pool decides (auto → unisolated
 * helpers, said in SECURITY.md and by `pool.isolated`; require → no helper at all).
 * grep and jq (tool-runner.ts) get the same world from the same pieces here — the mount plan
 * (READ_ONLY_PLAN), the drop (DROP_TO_NOBODY), the check (privilegeLeft) — applied from
 * outside instead of in-process, since they are not ours to modify; and the same fallback.
 * The tools get a /proc of their own PID namespace (`--mount-proc`): the host's /proc would
 * show them every process, and let them read the /proc/<pid>/environ, fd and root of any other
 * uid-65534 process (another tool's, a jailed child's). The helper keeps the host's (see
 * helperArgv), and with it that exposure (SECURITY.md).
 */
import { execFileSync } from 'node:child_process';
import fs from 'node:fs';
import path from 'node:path';
import type { HelperSelf } from './helper-protocol.js';

const which = (...paths: string[]) => paths.find((p) => fs.existsSync(p));

/** The uid and gid an isolated helper (and grep, jq) runs as (nobody/nogroup). */
export const HELPER_UID = 65534;
export const HELPER_GID = 65534;
export const UNSHARE = which('/usr/bin/unshare', '/bin/unshare');
export const SETPRIV = which('/usr/bin/setpriv', '/bin/setpriv');
export const PRLIMIT = which('/usr/bin/prlimit', '/bin/prlimit');
export const MOUNT = which('/usr/bin/mount', '/bin/mount');
export const UMOUNT = which('/usr/bin/umount', '/bin/umount');
export const NSENTER = which('/usr/bin/nsenter', '/bin/nsenter');
/** coreutils nice: a lane's processes run at a lower CPU priority than the operator's. */
export const NICE = which('/usr/bin/nice', '/bin/nice');
const CAT = which('/usr/bin/cat', '/bin/cat') ?? '/bin/cat';

/**
 * `[cmd, args]` run at niceness `n` (and so every thread and process it starts): `nice` first
 * in the argv, so nothing runs before the priority is set. Without coreutils' nice, unchanged:
 * niceness is a share of the CPU, not a security boundary.
 */
export function niced([cmd, args]: [string, string[]], n: number | undefined): [string, string[]] {
  return n && n > 0 && NICE ? [NICE, ['-n', String(Math.min(19, Math.floor(n))), '--', cmd, ...args]] : [cmd, args];
}

/** The kernel's caps on one helper process. */
export interface HelperCaps {
  /**
   * Address space a helper may add once started: its RLIMIT_AS becomes its size after
   * loading plus this (the whole address space counts, so RSS can never pass it).
   */
  memoryBytes: number;
  /** RLIMIT_CPU in seconds over the helper's life (the pool retires a helper before it runs out). */
  cpuSeconds: number;
}

/** The address space a helper may take while it loads, before the pool sets its real cap. */
const START_BYTES = 8 * 1024 ** 3;

/** Can this process start isolated helpers (and grep/jq, which also need nsenter) at all? */
export function isolationAvailable(tools = false): boolean {
  return Boolean(UNSHARE && SETPRIV && MOUNT && UMOUNT && PRLIMIT && (!tools || NSENTER) && process.getuid?.() === 0);
}

/**
 * What makes a fresh mount namespace's view of the host read-only, in order; run in-process
 * by the helper (enterIsolation) and from outside into the tools' namespace (`mount -N`).
 * A target that does not exist on this host is skipped.
 */
export const READ_ONLY_PLAN: readonly { target: string; args: readonly string[]; why: string }[] = Object.freeze([
  // A new mount namespace holds copies of every mount: flagging our copy of `/` read-only
  // (MS_REMOUNT|MS_BIND|MS_RDONLY) leaves the host's untouched.
  { target: '/', args: ['-o', 'remount,bind,ro', '/'], why: 'nothing on the root filesystem is writable (world-writable /tmp included)' },
  // /dev/shm is the usual world-writable tmpfs shared with the host: cover it with an empty,
  // read-only one (nothing in node, DuckDB, grep or jq uses POSIX shared memory).
  { target: '/dev/shm', args: ['-t', 'tmpfs', '-o', 'ro,size=4k,mode=0755,nosuid,nodev,noexec', 'tmpfs', '/dev/shm'], why: 'no shared memory with the host' },
]);

/** The mount points of READ_ONLY_PLAN a mountinfo text shows writable (the last mount on each counts), or missing. */
export function writableLeft(mountinfo: string): string[] {
  const last = new Map<string, string>();
  for (const l of mountinfo.split('\n')) {
    const f = l.split(' ');
    if (f.length > 5) last.set(f[4]!, f[5]!);
  }
  return READ_ONLY_PLAN.filter((p) => fs.existsSync(p.target)).map((p) => p.target).filter((t) => !/(^|,)ro(,|$)/.test(last.get(t) ?? ''));
}

/**
 * setpriv's argv for the drop a tool gets before it runs: uid/gid 65534, no supplementary
 * groups, no capability in any set (the bounding set too), no_new_privs.
 */
export const DROP_TO_NOBODY: readonly string[] = Object.freeze([
  `--reuid=${HELPER_UID}`,
  `--regid=${HELPER_GID}`,
  '--clear-groups',
  '--no-new-privs',
  '--inh-caps=-all',
  '--bounding-set=-all',
]);

/**
 * The argv of the process that holds the tools' namespaces: a network namespace with only a
 * down loopback and a mount namespace (made read-only from outside, READ_ONLY_PLAN). It is
 * `cat` on a pipe of ours, dropped to nobody: it lives as long as we keep the pipe open and
 * ends with us.
 */
export function toolHolderArgv(): [string, string[]] {
  if (!UNSHARE || !SETPRIV) throw new Error('unshare and setpriv (util-linux) are needed to isolate grep and jq');
  return [UNSHARE, ['--net', '--mount', '--propagation', 'private', '--', SETPRIV, ...DROP_TO_NOBODY, '--', CAT]];
}

/**
 * `[cmd, args]` run inside the holder's network and mount namespaces, in fresh PID, IPC and
 * mount namespaces of its own with its own /proc (it is PID 1 there and alone), as nobody
 * (DROP_TO_NOBODY). Killing PID 1 (the tool: the child of `unshare`) ends its namespace.
 */
export function toolArgv(holderPid: number, [cmd, args]: [string, string[]]): [string, string[]] {
  if (!NSENTER || !UNSHARE || !SETPRIV) throw new Error('nsenter, unshare and setpriv (util-linux) are needed to isolate grep and jq');
  return [
    NSENTER,
    ['--target', String(holderPid), '--mount', '--net', '--', UNSHARE, '--pid', '--ipc', '--fork', '--kill-child', '--mount-proc', '--', SETPRIV, ...DROP_TO_NOBODY, '--', cmd, ...args],
  ];
}

/** The one child of `pid` (unshare --fork's), from /proc; undefined while there is none. */
export function childOf(pid: number | undefined): number | undefined {
  if (pid === undefined) return undefined;
  try {
    const kids = fs.readFileSync(`/proc/${pid}/task/${pid}/children`, 'utf8').trim().split(/\s+/).map(Number);
    return kids.length === 1 && Number.isInteger(kids[0]) && kids[0]! > 0 ? kids[0] : undefined;
  } catch {
    return undefined;
  }
}

/** Where an isolated helper's world lives: `spill` gets its tmpfs, `in` the pool's bind mounts. */
export function isolationLayout(dir: string): { spill: string; in: string } {
  return { spill: path.join(dir, 'spill'), in: path.join(dir, 'in') };
}

/**
 * argv that starts `node … entry`: under prlimit always; isolated (dir given) inside setpriv
 * (no_new_privs, a bounding set of three caps, no inheritable ones) and unshare (net, mount,
 * pid, ipc). Not `--mount-proc`: the pool's `umount -N` (helper-mounts.ts) reads
 * /proc/self/mountinfo inside the helper's mount namespace, and a /proc of the helper's PID
 * namespace has no `self` for it. `--disable-wasm-trap-handler` keeps V8 from reserving 10 GiB of address space per
 * WebAssembly memory (loaders such as tsx use one), which RLIMIT_AS would refuse.
 */
export function helperArgv(nodeArgs: string[], caps: HelperCaps, isolateDir?: string): [string, string[]] {
  if (!PRLIMIT) throw new Error('prlimit (util-linux) is needed to cap the DuckDB helper; see scripts/host-deps.sh');
  const cpu = Math.max(1, Math.ceil(caps.cpuSeconds));
  const limited = [
    PRLIMIT,
    `--as=${Math.floor(caps.memoryBytes) + START_BYTES}`,
    `--cpu=${cpu}:${cpu + 10}`,
    '--core=0',
    '--',
    process.execPath,
    '--disable-wasm-trap-handler',
    '--wasm-max-mem-pages=4096',
    ...nodeArgs,
    '--memory-bytes',
    String(Math.floor(caps.memoryBytes)),
  ];
  if (!isolateDir) return [limited[0]!, limited.slice(1)];
  if (!UNSHARE || !SETPRIV) throw new Error('unshare and setpriv (util-linux) are needed to isolate the DuckDB helper');
  return [
    SETPRIV,
    [
      '--no-new-privs',
      '--inh-caps=-all',
      '--bounding-set=-all,+sys_admin,+setuid,+setgid',
      '--',
      UNSHARE,
      '--net',
      '--mount',
      '--pid',
      '--ipc',
      '--propagation',
      'private',
      '--fork',
      '--kill-child',
      '--',
      ...limited,
      '--isolate',
      isolateDir,
    ],
  ];
}

/**
 * A process's address-space size, its peak size so far and its RLIMIT_AS (soft, hard), in
 * bytes, from /proc. The size moves both ways (a freed mapping, an exited thread's stack); the
 * peak only grows, so a cap set from some earlier size is checked against the peak.
 */
export function addressSpace(pid: number | 'self'): { size: number; peak: number; soft: number; hard: number } {
  const status = fs.readFileSync(`/proc/${pid}/status`, 'utf8');
  const kb = (field: string) => Number(new RegExp(`^${field}:\\s+(\\d+) kB$`, 'm').exec(status)?.[1]) * 1024;
  const size = kb('VmSize');
  const peak = kb('VmPeak');
  const row = /^Max address space\s+(\S+)\s+(\S+)\s+bytes/m.exec(fs.readFileSync(`/proc/${pid}/limits`, 'utf8'));
  const n = (v: string | undefined) => (v === 'unlimited' ? Infinity : Number(v));
  return { size, peak, soft: n(row?.[1]), hard: n(row?.[2]) };
}

/**
 * Run inside the helper once it has loaded: lowers its own RLIMIT_AS (soft and hard; lowering
 * needs no privilege) to its current size plus `bytes`, so the cap means the same with or
 * without a loader's reservations (tsx adds ≈ 1.3 GiB), and reads it back.
 */
export function capOwnAddressSpace(bytes: number): number {
  if (!PRLIMIT) throw new Error('prlimit (util-linux) is needed to cap the DuckDB helper');
  const { size } = addressSpace('self');
  if (!Number.isFinite(size) || size <= 0) throw new Error('the helper\'s own size could not be read');
  const limit = size + Math.floor(bytes);
  execFileSync(PRLIMIT, ['--pid', String(process.pid), `--as=${limit}:${limit}`], { env: {}, stdio: 'ignore' });
  const got = addressSpace('self');
  if (got.soft !== limit || got.hard !== limit) throw new Error('the helper\'s address-space cap did not take');
  return limit;
}

/** The credentials of this process as /proc/self/status shows them. */
export function readSelf(): HelperSelf {
  return parseStatus(fs.readFileSync('/proc/self/status', 'utf8'));
}

/** The credentials a /proc/<pid>/status text shows. */
export function parseStatus(status: string): HelperSelf {
  const field = (name: string) => new RegExp(`^${name}:[ \\t]*(.*)$`, 'm').exec(status)?.[1]?.trim() ?? '';
  const ids = (name: string) => field(name).split(/\s+/).filter(Boolean).map(Number);
  return {
    uid: ids('Uid'),
    gid: ids('Gid'),
    groups: ids('Groups'),
    capInh: field('CapInh'),
    capPrm: field('CapPrm'),
    capEff: field('CapEff'),
    capBnd: field('CapBnd'),
    capAmb: field('CapAmb'),
    noNewPrivs: Number(field('NoNewPrivs')),
  };
}

const ZERO_CAPS = /^0+$/;

/** Why a helper's credentials are not those of an isolated helper, or undefined. */
export function privilegeLeft(s: HelperSelf): string | undefined {
  if (s.uid.length !== 4 || s.uid.some((u) => u !== HELPER_UID)) return `uid ${s.uid.join(' ')}`;
  if (s.gid.length !== 4 || s.gid.some((g) => g !== HELPER_GID)) return `gid ${s.gid.join(' ')}`;
  if (s.groups.length > 0) return `supplementary groups ${s.groups.join(' ')}`;
  for (const [name, v] of [['CapInh', s.capInh], ['CapPrm', s.capPrm], ['CapEff', s.capEff], ['CapAmb', s.capAmb]] as const) {
    if (!ZERO_CAPS.test(v)) return `${name} ${v}`;
  }
  if (s.noNewPrivs !== 1) return 'no_new_privs is not set';
  return undefined;
}

/** As root (no DAC in the way), only a read-only mount stops this write. */
function mustBeReadOnly(dir: string): void {
  let wrote = true;
  try {
    fs.writeFileSync(path.join(dir, `.brig-ro-probe-${process.pid}`), 'x');
  } catch (e) {
    wrote = (e as NodeJS.ErrnoException).code !== 'EROFS';
  }
  if (wrote) throw new Error(`${dir} is still writable after remounting it read-only`);
}

/**
 * Run inside the helper, first thing, as root in its fresh namespaces: read-only `/` and
 * `/dev/shm`, a tmpfs owned by the helper uid for spills, then drop to that uid for good and
 * verify all of it. Returns the credentials it ended with.
 */
export function enterIsolation(dir: string, spillBytes: number): HelperSelf {
  if (!MOUNT) throw new Error('mount is not available');
  const { spill } = isolationLayout(dir);
  const mount = (args: readonly string[]) => execFileSync(MOUNT, args, { env: {}, stdio: 'ignore' });
  for (const p of READ_ONLY_PLAN) if (fs.existsSync(p.target)) mount(p.args);
  mount(['-t', 'tmpfs', '-o', `size=${spillBytes},mode=0700,uid=${HELPER_UID},gid=${HELPER_GID},nosuid,nodev,noexec`, 'tmpfs', spill]);
  mustBeReadOnly(dir);
  if (fs.existsSync('/dev/shm')) mustBeReadOnly('/dev/shm');
  // setgroups, then gid, then uid: once every uid is non-zero the kernel clears the permitted
  // and effective capabilities, and no_new_privs keeps exec from granting any back.
  if (!process.setgroups || !process.setgid || !process.setuid) throw new Error('this platform cannot drop privileges');
  process.setgroups([]);
  process.setgid(HELPER_GID);
  process.setuid(HELPER_UID);
  const self = readSelf();
  const left = privilegeLeft(self);
  if (left) throw new Error(`the helper kept a privilege after dropping it: ${left}`);
  fs.writeFileSync(path.join(spill, '.probe'), 'x'); // the spill tmpfs must be writable, as us
  fs.rmSync(path.join(spill, '.probe'));
  return self;
}

/**
 * brig's own seccomp profile: the engine's default (moby 20.10.24, profiles/seccomp/default.json,
 * Apache-2.0) minus what no child needs, each removal with its reason below.
 *
 * Guarantees: a jail's syscalls are an allowlist; everything else fails with EPERM (the
 * engine's default errno). io_uring, Linux AIO, ptrace, POSIX and SysV IPC, sync(2), the
 * 32-bit and x32 syscall ABIs and every socket family but unix, inet, inet6 and netlink-route
 * are refused. Children (node, busybox) keep everything they use: the integration tests that
 * run scripts, commands and agents in real jails run under this profile.
 * Threat: a hostile child reaching kernel attack surface it has no use for (io_uring alone has
 * been a long run of local privilege escalations).
 * Trusts: the engine to load the profile it is given (verify.ts reads it back on inspect; the
 * integration tests call io_uring_setup from inside and see EPERM).
 * Fails: closed. An unknown syscall is EPERM; on an architecture not listed here every
 * syscall is refused, so the jail cannot start at all.
 *
 * Pure data. The rendered JSON is pinned in images/seccomp.json (a diff there is reviewed).
 * The engine's default also opens syscalls to holders of a capability (`includes.caps`);
 * the jail holds none (`CapDrop: ALL`), so those rules are left out rather than carried dead.
 */

/** The engine default's unconditional allowlist (moby v20.10.24), verbatim. */
const ENGINE_DEFAULT_ALLOW: readonly string[] = [
  'accept', 'accept4', 'access', 'adjtimex', 'alarm', 'bind', 'brk', 'capget', 'capset', 'chdir',
  'chmod', 'chown', 'chown32', 'clock_adjtime', 'clock_adjtime64', 'clock_getres',
  'clock_getres_time64', 'clock_gettime', 'clock_gettime64', 'clock_nanosleep',
  'clock_nanosleep_time64', 'close', 'close_range', 'connect', 'copy_file_range', 'creat', 'dup',
  'dup2', 'dup3', 'epoll_create', 'epoll_create1', 'epoll_ctl', 'epoll_ctl_old', 'epoll_pwait',
  'epoll_pwait2', 'epoll_wait', 'epoll_wait_old', 'eventfd', 'eventfd2', 'execve', 'execveat',
  'exit', 'exit_group', 'faccessat', 'faccessat2', 'fadvise64', 'fadvise64_64', 'fallocate',
  'fanotify_mark', 'fchdir', 'fchmod', 'fchmodat', 'fchown', 'fchown32', 'fchownat', 'fcntl',
  'fcntl64', 'fdatasync', 'fgetxattr', 'flistxattr', 'flock', 'fork', 'fremovexattr', 'fsetxattr',
  'fstat', 'fstat64', 'fstatat64', 'fstatfs', 'fstatfs64', 'fsync', 'ftruncate', 'ftruncate64',
  'futex', 'futex_time64', 'futex_waitv', 'futimesat', 'getcpu', 'getcwd', 'getdents', 'getdents64',
  'getegid', 'getegid32', 'geteuid', 'geteuid32', 'getgid', 'getgid32', 'getgroups', 'getgroups32',
  'getitimer', 'getpeername', 'getpgid', 'getpgrp', 'getpid', 'getppid', 'getpriority', 'getrandom',
  'getresgid', 'getresgid32', 'getresuid', 'getresuid32', 'getrlimit', 'get_robust_list',
  'getrusage', 'getsid', 'getsockname', 'getsockopt', 'get_thread_area', 'gettid', 'gettimeofday',
  'getuid', 'getuid32', 'getxattr', 'inotify_add_watch', 'inotify_init', 'inotify_init1',
  'inotify_rm_watch', 'io_cancel', 'ioctl', 'io_destroy', 'io_getevents', 'io_pgetevents',
  'io_pgetevents_time64', 'ioprio_get', 'ioprio_set', 'io_setup', 'io_submit', 'io_uring_enter',
  'io_uring_register', 'io_uring_setup', 'ipc', 'kill', 'landlock_add_rule',
  'landlock_create_ruleset', 'landlock_restrict_self', 'lchown', 'lchown32', 'lgetxattr', 'link',
  'linkat', 'listen', 'listxattr', 'llistxattr', '_llseek', 'lremovexattr', 'lseek', 'lsetxattr',
  'lstat', 'lstat64', 'madvise', 'membarrier', 'memfd_create', 'memfd_secret', 'mincore', 'mkdir',
  'mkdirat', 'mknod', 'mknodat', 'mlock', 'mlock2', 'mlockall', 'mmap', 'mmap2', 'mprotect',
  'mq_getsetattr', 'mq_notify', 'mq_open', 'mq_timedreceive', 'mq_timedreceive_time64',
  'mq_timedsend', 'mq_timedsend_time64', 'mq_unlink', 'mremap', 'msgctl', 'msgget', 'msgrcv',
  'msgsnd', 'msync', 'munlock', 'munlockall', 'munmap', 'nanosleep', 'newfstatat', '_newselect',
  'open', 'openat', 'openat2', 'pause', 'pidfd_open', 'pidfd_send_signal', 'pipe', 'pipe2', 'poll',
  'ppoll', 'ppoll_time64', 'prctl', 'pread64', 'preadv', 'preadv2', 'prlimit64', 'process_mrelease',
  'pselect6', 'pselect6_time64', 'pwrite64', 'pwritev', 'pwritev2', 'read', 'readahead', 'readlink',
  'readlinkat', 'readv', 'recv', 'recvfrom', 'recvmmsg', 'recvmmsg_time64', 'recvmsg',
  'remap_file_pages', 'removexattr', 'rename', 'renameat', 'renameat2', 'restart_syscall', 'rmdir',
  'rseq', 'rt_sigaction', 'rt_sigpending', 'rt_sigprocmask', 'rt_sigqueueinfo', 'rt_sigreturn',
  'rt_sigsuspend', 'rt_sigtimedwait', 'rt_sigtimedwait_time64', 'rt_tgsigqueueinfo',
  'sched_getaffinity', 'sched_getattr', 'sched_getparam', 'sched_get_priority_max',
  'sched_get_priority_min', 'sched_getscheduler', 'sched_rr_get_interval',
  'sched_rr_get_interval_time64', 'sched_setaffinity', 'sched_setattr', 'sched_setparam',
  'sched_setscheduler', 'sched_yield', 'seccomp', 'select', 'semctl', 'semget', 'semop',
  'semtimedop', 'semtimedop_time64', 'send', 'sendfile', 'sendfile64', 'sendmmsg', 'sendmsg',
  'sendto', 'setfsgid', 'setfsgid32', 'setfsuid', 'setfsuid32', 'setgid', 'setgid32', 'setgroups',
  'setgroups32', 'setitimer', 'setpgid', 'setpriority', 'setregid', 'setregid32', 'setresgid',
  'setresgid32', 'setresuid', 'setresuid32', 'setreuid', 'setreuid32', 'setrlimit',
  'set_robust_list', 'setsid', 'setsockopt', 'set_thread_area', 'set_tid_address', 'setuid',
  'setuid32', 'setxattr', 'shmat', 'shmctl', 'shmdt', 'shmget', 'shutdown', 'sigaltstack',
  'signalfd', 'signalfd4', 'sigprocmask', 'sigreturn', 'socket', 'socketcall', 'socketpair',
  'splice', 'stat', 'stat64', 'statfs', 'statfs64', 'statx', 'symlink', 'symlinkat', 'sync',
  'sync_file_range', 'syncfs', 'sysinfo', 'tee', 'tgkill', 'time', 'timer_create', 'timer_delete',
  'timer_getoverrun', 'timer_gettime', 'timer_gettime64', 'timer_settime', 'timer_settime64',
  'timerfd_create', 'timerfd_gettime', 'timerfd_gettime64', 'timerfd_settime', 'timerfd_settime64',
  'times', 'tkill', 'truncate', 'truncate64', 'ugetrlimit', 'umask', 'uname', 'unlink', 'unlinkat',
  'utime', 'utimensat', 'utimensat_time64', 'utimes', 'vfork', 'vmsplice', 'wait4', 'waitid',
  'waitpid', 'write', 'writev',
];

/** Every syscall taken out of the engine's default, with the reason. */
export const SECCOMP_REMOVED: Readonly<Record<string, string>> = Object.freeze({
  io_uring_setup: 'io_uring: a second syscall interface with a long run of local root CVEs; libuv falls back to its thread pool',
  io_uring_enter: 'io_uring (see io_uring_setup)',
  io_uring_register: 'io_uring (see io_uring_setup)',
  io_setup: 'Linux native AIO: nothing in a child uses it (libuv and busybox do plain reads and writes)',
  io_submit: 'Linux native AIO (see io_setup)',
  io_getevents: 'Linux native AIO (see io_setup)',
  io_pgetevents: 'Linux native AIO (see io_setup)',
  io_pgetevents_time64: 'Linux native AIO (see io_setup)',
  io_cancel: 'Linux native AIO (see io_setup)',
  io_destroy: 'Linux native AIO (see io_setup)',
  mq_open: 'POSIX message queues: no child uses them, and the jail\'s IPC namespace is meant to hold nothing (mq_notify: CVE-2017-11176)',
  mq_unlink: 'POSIX message queues (see mq_open)',
  mq_timedsend: 'POSIX message queues (see mq_open)',
  mq_timedsend_time64: 'POSIX message queues (see mq_open)',
  mq_timedreceive: 'POSIX message queues (see mq_open)',
  mq_timedreceive_time64: 'POSIX message queues (see mq_open)',
  mq_notify: 'POSIX message queues (see mq_open)',
  mq_getsetattr: 'POSIX message queues (see mq_open)',
  msgget: 'SysV message queues: unused by children; msg_msg is the usual kernel-heap spray of exploits (CVE-2021-22555)',
  msgsnd: 'SysV message queues (see msgget)',
  msgrcv: 'SysV message queues (see msgget)',
  msgctl: 'SysV message queues (see msgget)',
  semget: 'SysV semaphores: unused by children (IpcMode none: no shared IPC objects)',
  semop: 'SysV semaphores (see semget)',
  semtimedop: 'SysV semaphores (see semget)',
  semtimedop_time64: 'SysV semaphores (see semget)',
  semctl: 'SysV semaphores (see semget)',
  shmget: 'SysV shared memory: unused by children; the jail is meant to have no shared-memory area (IpcMode none)',
  shmat: 'SysV shared memory (see shmget)',
  shmdt: 'SysV shared memory (see shmget)',
  shmctl: 'SysV shared memory (see shmget)',
  ipc: 'the i386 multiplexer of SysV IPC (no 32-bit ABI in the jail)',
  socketcall: 'the i386 multiplexer of the socket calls, which would bypass the socket family filter (no 32-bit ABI in the jail)',
  sync: 'flushes every filesystem of the host, not the jail\'s: a loop of it stalls I/O for every other jail',
  syncfs: 'flushes the whole engine data disk (see sync); fsync/fdatasync of the child\'s own files stay',
  socket: 'replaced by SECCOMP_SOCKET_FAMILIES: only unix, inet, inet6 and netlink-route sockets',
});

/**
 * The engine default's conditional rules brig leaves out, with the reason (its cap-gated rules
 * are left out because the jail has no capability at all).
 */
export const SECCOMP_RULES_REMOVED: Readonly<Record<string, string>> = Object.freeze({
  'ptrace (kernel >= 4.8)': 'a child needs no debugger; tracing its own processes is kernel surface and a sandbox-bypass route (CVE-2019-13272)',
  modify_ldt: '16-bit segments are for Wine and dosemu; past CVEs (CVE-2015-5157, CVE-2017-17053)',
  'personality(PER_LINUX32, UNAME26)': 'a 32-bit personality and a faked 2.6 kernel version (UNAME26 leaked kernel stack, CVE-2012-0957) serve old 32-bit builds only; personality(0) and the query stay',
  'subArchitectures x86, x32, arm': 'the 32-bit and x32 syscall tables are a second way into the kernel (int 0x80); no child binary uses them',
  'mips, s390, ppc rules': 'the child image is the host\'s node: brig runs on x86_64 and aarch64 only',
});

/** Address families a child may open a socket in (arg 0 of socket(2)). */
export const SECCOMP_SOCKET_FAMILIES = Object.freeze({
  AF_UNIX: 1, // the broker socket at /run/brig
  AF_INET: 2, // loopback inside the jail's own network namespace (there is no other interface)
  AF_INET6: 10, // the same for IPv6; also what node's resolver probes
  // AF_NETLINK (16) only with protocol NETLINK_ROUTE (0): getifaddrs (os.networkInterfaces, getaddrinfo's AI_ADDRCONFIG)
});
const AF_NETLINK = 16;
const NETLINK_ROUTE = 0;

/** The clone(2) flags that create namespaces (the engine's mask): never without CAP_SYS_ADMIN. */
const CLONE_NAMESPACE_FLAGS = 0x7e020000;
const ENOSYS = 38;

interface SeccompArg {
  index: number;
  value: number;
  op: 'SCMP_CMP_EQ' | 'SCMP_CMP_MASKED_EQ';
  valueTwo?: number;
}
interface SeccompRule {
  names: string[];
  action: 'SCMP_ACT_ALLOW' | 'SCMP_ACT_ERRNO';
  errnoRet?: number;
  args?: SeccompArg[];
  includes?: { arches: string[] };
}
export interface SeccompProfile {
  defaultAction: 'SCMP_ACT_ERRNO';
  archMap: { architecture: string; subArchitectures: string[] }[];
  syscalls: SeccompRule[];
}

const eq = (index: number, value: number): SeccompArg => ({ index, value, op: 'SCMP_CMP_EQ' });

function buildProfile(): SeccompProfile {
  const allow = ENGINE_DEFAULT_ALLOW.filter((n) => !(n in SECCOMP_REMOVED));
  return {
    defaultAction: 'SCMP_ACT_ERRNO',
    archMap: [
      { architecture: 'SCMP_ARCH_X86_64', subArchitectures: [] },
      { architecture: 'SCMP_ARCH_AARCH64', subArchitectures: [] },
    ],
    syscalls: [
      { names: allow, action: 'SCMP_ACT_ALLOW' },
      ...Object.values(SECCOMP_SOCKET_FAMILIES).map((af): SeccompRule => ({ names: ['socket'], action: 'SCMP_ACT_ALLOW', args: [eq(0, af)] })),
      { names: ['socket'], action: 'SCMP_ACT_ALLOW', args: [eq(0, AF_NETLINK), eq(2, NETLINK_ROUTE)] },
      { names: ['personality'], action: 'SCMP_ACT_ALLOW', args: [eq(0, 0)] },
      { names: ['personality'], action: 'SCMP_ACT_ALLOW', args: [eq(0, 0xffffffff)] },
      // clone without namespace flags (the engine's own rule for a holder of no CAP_SYS_ADMIN).
      { names: ['clone'], action: 'SCMP_ACT_ALLOW', args: [{ index: 0, value: CLONE_NAMESPACE_FLAGS, valueTwo: 0, op: 'SCMP_CMP_MASKED_EQ' }] },
      // clone3 cannot be argument-filtered (its flags are in memory): ENOSYS, so libc falls back to clone.
      { names: ['clone3'], action: 'SCMP_ACT_ERRNO', errnoRet: ENOSYS },
      { names: ['arch_prctl'], action: 'SCMP_ACT_ALLOW', includes: { arches: ['amd64'] } },
      { names: ['arm_fadvise64_64', 'arm_sync_file_range', 'sync_file_range2', 'breakpoint', 'cacheflush', 'set_tls'], action: 'SCMP_ACT_ALLOW', includes: { arches: ['arm64'] } },
    ],
  };
}

function deepFreeze<T>(x: T): T {
  if (x && typeof x === 'object') {
    for (const v of Object.values(x)) deepFreeze(v);
    Object.freeze(x);
  }
  return x;
}

/** The profile as an object (for tests and review). Frozen, like the rest of the profile. */
export const SECCOMP_PROFILE: SeccompProfile = deepFreeze(buildProfile());

/** The exact JSON the create body carries (`seccomp=<this>`) and verify expects back. */
export const SECCOMP_JSON = JSON.stringify(SECCOMP_PROFILE);

/** The names the engine's default allowed unconditionally (for the tests that pin removals). */
export const ENGINE_DEFAULT_ALLOWLIST = ENGINE_DEFAULT_ALLOW;

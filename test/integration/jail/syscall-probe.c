/*
 * A static probe for the [INV-2] seccomp and mount tests: it makes raw syscalls node cannot
 * (io_uring_setup, the i386 ABI, socket families, SysV and POSIX IPC, ...) and prints one
 * JSON line of what the kernel answered, as errno names ("ok" when the call succeeded).
 *
 * Built by test/integration/jail/syscall-probe.ts on the host with `gcc -static -O2` (no libc
 * is needed in the jail: the child image is FROM scratch) and put into /workspace as an input.
 *
 *   syscall-probe            every syscall check
 *   syscall-probe ids PATH   uid/euid (run set-uid-root: does it gain root?) and open(PATH)
 *   syscall-probe i386       only the i386 getpid: run on the host, it tells whether this kernel
 *                            serves the 32-bit table at all (no IA32 emulation: int 0x80 faults)
 */
#define _GNU_SOURCE
#include <errno.h>
#include <fcntl.h>
#include <linux/io_uring.h>
#include <signal.h>
#include <stdio.h>
#include <string.h>
#include <sys/ipc.h>
#include <sys/msg.h>
#include <sys/personality.h>
#include <sys/shm.h>
#include <sys/socket.h>
#include <sys/syscall.h>
#include <sys/wait.h>
#include <unistd.h>

static const char *name(long r, int e) {
  static char buf[32];
  if (r >= 0) return "ok";
  switch (e) {
    case EPERM: return "EPERM";
    case ENOSYS: return "ENOSYS";
    case EACCES: return "EACCES";
    case EINVAL: return "EINVAL";
    case EAFNOSUPPORT: return "EAFNOSUPPORT";
    case EPROTONOSUPPORT: return "EPROTONOSUPPORT";
    case EFAULT: return "EFAULT";
    case ENOENT: return "ENOENT";
    default: snprintf(buf, sizeof buf, "errno%d", e); return buf;
  }
}

static int first = 1;
static void out(const char *key, long r) {
  int e = errno;
  printf("%s\"%s\":\"%s\"", first ? "{" : ",", key, name(r, e));
  first = 0;
  if (r >= 0 && strncmp(key, "socket", 6) == 0) close((int)r);
}

/*
 * Calls that must not touch the probe itself run in a child, which exits 0 when the call
 * succeeded, 1 on EPERM, 2 on ENOSYS, 3 otherwise; a seccomp kill shows as SIGSYS.
 */
static void in_child(const char *key, long (*fn)(void)) {
  fflush(stdout);
  pid_t pid = fork();
  if (pid == 0) {
    long r = fn();
    _exit(r >= 0 ? 0 : errno == EPERM ? 1 : errno == ENOSYS ? 2 : 3);
  }
  int st = 0;
  waitpid(pid, &st, 0);
  static const char *codes[] = {"ok", "EPERM", "ENOSYS", "refused"};
  char sig[24];
  const char *v = codes[WEXITSTATUS(st) & 3];
  if (WIFSIGNALED(st)) {
    /* The signal by name: SIGSYS is seccomp's kill; SIGSEGV is the fault of a kernel that has
     * no 32-bit table at all (int 0x80 without IA32 emulation). */
    int s = WTERMSIG(st);
    if (s == SIGSYS) v = "SIGSYS";
    else if (s == SIGSEGV) v = "SIGSEGV";
    else if (s == SIGILL) v = "SIGILL";
    else if (s == SIGBUS) v = "SIGBUS";
    else { snprintf(sig, sizeof sig, "signal%d", s); v = sig; }
  }
  printf("%s\"%s\":\"%s\"", first ? "{" : ",", key, v);
  first = 0;
}

/* PTRACE_TRACEME: a tracee is stopped by every signal it gets, so never in the probe itself. */
static long traceme(void) { return syscall(SYS_ptrace, 0, 0, 0, 0); }

/* getpid through int 0x80, the i386 syscall table. */
static long i386_getpid(void) {
#if defined(__x86_64__)
  long ret;
  __asm__ volatile("int $0x80" : "=a"(ret) : "a"(20L) : "memory"); /* 20: getpid on i386 */
  if (ret < 0) {
    errno = (int)-ret;
    return -1;
  }
  return ret;
#else
  errno = ENOSYS;
  return -1;
#endif
}

static int all(void) {
  struct io_uring_params p;
  memset(&p, 0, sizeof p);
  errno = 0;
  out("io_uring_setup", syscall(SYS_io_uring_setup, 4, &p));
  unsigned long ctx = 0;
  out("io_setup", syscall(SYS_io_setup, 1, &ctx));
  out("mq_open", syscall(SYS_mq_open, "brig-q", O_CREAT | O_RDWR, 0600, NULL));
  out("shmget", syscall(SYS_shmget, IPC_PRIVATE, 4096, IPC_CREAT | 0600));
  out("msgget", syscall(SYS_msgget, IPC_PRIVATE, IPC_CREAT | 0600));
  out("sync", syscall(SYS_sync));
  out("personality_uname26", syscall(SYS_personality, UNAME26));
  out("personality_query", syscall(SYS_personality, 0xffffffffUL));
  char ldt[16];
  out("modify_ldt", syscall(SYS_modify_ldt, 0, ldt, sizeof ldt));
  out("clone3", syscall(SYS_clone3, NULL, 0));
  out("socket_unix", syscall(SYS_socket, AF_UNIX, SOCK_STREAM, 0));
  out("socket_inet", syscall(SYS_socket, AF_INET, SOCK_STREAM, 0));
  out("socket_inet6", syscall(SYS_socket, AF_INET6, SOCK_DGRAM, 0));
  out("socket_netlink_route", syscall(SYS_socket, AF_NETLINK, SOCK_RAW, 0));
  out("socket_netlink_uevent", syscall(SYS_socket, AF_NETLINK, SOCK_RAW, 15 /* NETLINK_KOBJECT_UEVENT */));
  out("socket_alg", syscall(SYS_socket, 38 /* AF_ALG */, SOCK_SEQPACKET, 0));
  out("socket_vsock", syscall(SYS_socket, 40 /* AF_VSOCK */, SOCK_STREAM, 0));
  out("socket_packet", syscall(SYS_socket, AF_PACKET, SOCK_DGRAM, 0));
  in_child("ptrace_traceme", traceme);
  in_child("i386_getpid", i386_getpid);
  printf("}\n");
  return 0;
}

static int ids(const char *path) {
  int fd = open(path, O_RDONLY);
  int e = errno;
  printf("{\"uid\":%d,\"euid\":%d,\"open\":\"%s\"}\n", (int)getuid(), (int)geteuid(), name(fd, e));
  return 0;
}

int main(int argc, char **argv) {
  if (argc >= 3 && strcmp(argv[1], "ids") == 0) return ids(argv[2]);
  if (argc >= 2 && strcmp(argv[1], "i386") == 0) {
    in_child("i386_getpid", i386_getpid);
    printf("}\n");
    return 0;
  }
  return all();
}

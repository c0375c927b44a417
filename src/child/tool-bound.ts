/**
 * Before an agent's tools may start processes: is the runtime out of their reach?
 *
 * Guarantees: the agent runtime runs its tools only when no process they start can read its
 * memory, environment or fds, nor the bearer file. The child image's node binary is
 * execute-only (mode 0711, root's: jail/docker/image.ts), so the kernel marks every process
 * that execs it non-dumpable (fs/exec.c `would_dump`: an executable its user may not read) —
 * what prctl(PR_SET_DUMPABLE, 0) would do, without native code, setuid or a capability. A
 * non-dumpable process's /proc/<pid>/{mem,environ,fd,maps,…} belong to root and ptrace,
 * process_vm_readv and pidfd_getfd need CAP_SYS_PTRACE, which no jail has; `sh`, which the
 * shell tool execs, is readable, so the tool's own processes stay ordinary. The kernel says a
 * process is non-dumpable by giving its /proc files to root: that is what is read back here.
 * Threat: the model's shell (or anything it starts) lifting the bearer out of the runtime, as
 * any same-uid process could from a dumpable one. Trusts: the kernel. Fails closed: when the
 * runtime cannot see itself non-dumpable (an image whose node is readable, a host with
 * fs.suid_dumpable=1) or the bearer file is still there, it refuses to run a tool surface
 * with `shell` and says why.
 */
import fs from 'node:fs';

/** Tools whose work starts processes in the jail (the rest run inside the runtime). */
const PROCESS_TOOLS = ['shell'];

/** Why this runtime may not offer `tools` (null: it may). */
export function toolBoundProblem(tools: readonly string[], tokenPath: string, procSelf = '/proc/self'): string | null {
  if (!tools.some((t) => PROCESS_TOOLS.includes(t))) return null;
  if (fs.existsSync(tokenPath)) return `the bearer file ${tokenPath} could not be removed: a process the shell tool starts could read it`;
  let owner: number;
  try {
    owner = fs.statSync(`${procSelf}/environ`).uid;
  } catch (e) {
    return `cannot read back whether this runtime is dumpable (${(e as Error).message})`;
  }
  if (owner !== 0) {
    return 'this runtime is dumpable: a process its shell tool starts could read its memory, environment and fds (the image\'s node binary must be execute-only, mode 0711, and the host\'s fs.suid_dumpable must not be 1; `brig image build` makes such an image)';
  }
  return null;
}

/**
 * The warm pool's waiter (PID 1 of a pooled jail) and the assignment it evals — the part of the
 * pool's guarantee (pool.ts) that a run's argv and environment reach the child exactly.
 *
 * Guarantees: the assignment leaves the child exactly the environment the cold path's container
 * gets (the spec's variables, PATH as render sets it, the engine's HOSTNAME) and execs exactly
 * the spec's argv; every value is single-quoted, so quotes, `$()`, backticks and newlines
 * arrive as bytes, never as shell syntax.
 * Threat: a run's argv or environment (a child's choice, through a spawn) turned into shell
 * code inside the jail. Trusts: POSIX sh single quoting (busybox sh in the image); the caller
 * (pool.ts) has refused argv and env the cold path's render refuses (NUL, bad names).
 * Fails closed: any step of the waiter that fails exits 70, and the pool destroys the slot.
 *
 * The reaper (issue 26, when the slot has an exit FIFO: brig runs as root): the waiter stays
 * PID 1 and runs the argv as its child, passes TERM/INT/HUP/QUIT/USR1/USR2 on, and once the
 * child ended kills what it left (SIGKILL to every process but itself, as the kernel does when
 * a cold jail's PID 1 ends), writes a per-run marker to both streams and the child's status to
 * /run/brig/exit, then execs a sleep whose argv carries the status. It guarantees nothing the host takes on its word: the
 * status is believed only once the host saw the jail's pids cgroup hold PID 1 alone
 * (pooled-jail.ts), the marker only bounds the wait for the streams. It trusts the shell's
 * `wait` for the status (the child's to choose either way) and the kernel's ptrace refusal
 * (seccomp.ts) to keep its memory — the marker — from the child.
 *
 * An agent-ready slot (issue 26; only with a reaper): the waiter starts the agent runtime
 * before it blocks — `node agent-runtime.js --prestarted` as its child, with an environment of
 * three fixed variables (HOME, PATH, HOSTNAME) and nothing of any run — and the runtime loads,
 * says so on stderr and waits for SIGUSR2 (child/agent/prestart.ts). There is no assignment
 * to eval: once the nonce matched and the inputs are unpacked the waiter sends that go itself
 * and reaps the runtime exactly as it reaps an exec'd argv (signals passed on, what is left
 * killed, the marker from the assignment's first line, status, sleep). The runtime takes the
 * run's environment from the assignment's env file (`childEnv`: the very variables the cold
 * path's container gets) and everything else from the packet and bearer files, as the cold
 * runtime does. The go is the waiter's to send only after the nonce check and the unpack, so
 * no run's files are read before its assignment, and the marker is never in a file. Trusts,
 * beside the above: that nothing but the waiter and its runtime runs in the jail before the
 * assignment (pool-slot.ts `intact()` reads it back from the jail's pids cgroup before a slot
 * is handed out).
 */
import type { JailInput, JailSpec } from '../types.js';
import type { DockerJail } from './docker-jail.js';
import { JAIL_PATH, WORKSPACE_DIR } from './profile.js';

/** The FIFO a slot's waiter blocks on, in its socket directory (/run/brig/go inside). */
export const FIFO = 'go';
/** Written by the pool into the workspace with the run's inputs; read, removed, then eval'd. */
export const ASSIGN = '.brig/assign.sh';
/** The waiter's line on stderr once it is about to block (cleared from the tails before the run). */
const READY = 'brig-pool: ready';

/**
 * The first line the pool writes into the FIFO, before the inputs' archive: the slot's nonce,
 * which the waiter checks before it unpacks anything, and the run's end marker (a reaper's,
 * `-` without one). Read by the shell's own `read` (no process started, no file left to remove).
 */
export function assignmentHeader(nonce: string, marker?: string): string {
  if (!/^[0-9a-f]{32}$/.test(nonce)) throw new Error('a slot nonce is 32 hex digits');
  if (marker !== undefined && !MARKER.test(marker)) throw new Error('an end marker is brig-end- and 32 hex digits');
  return `${nonce} ${marker ?? '-'}\n`;
}

/** A reaper's end marker (pooled-jail.ts makes one per run). */
const MARKER = /^brig-end-[0-9a-f]{32}$/;

/**
 * The FIFO the reaper reports its child's exit status on (/run/brig/exit inside). Writable by
 * the jail (so by the child too: a report is believed only once the host saw the jail hold its
 * reaper alone, pooled-jail.ts), readable only by root.
 */
export const EXIT_FIFO = 'exit';

/** Signals the reaper passes on to its child (what stop() and an operator send to PID 1). */
const FORWARDED = ['TERM', 'INT', 'HUP', 'QUIT', 'USR1', 'USR2'] as const;

/**
 * The agent runtime's argv on the cold path (runs/launch.ts: CHILD_PATHS.node, agentRuntime):
 * a spec with exactly this argv may be served by a pre-started runtime.
 */
export const AGENT_RUNTIME_ARGV: readonly string[] = ['/opt/brig/bin/node', '/opt/brig/child/agent-runtime.js'];
/**
 * Node's flags for a pre-started runtime: V8 compiles every function of what it loads at once
 * (`--no-lazy`) instead of at each function's first call — paid before the run asks, not in the
 * milliseconds between its go and its first model call (~3–4 ms measured; ~40 ms more load and
 * ~3 MB more memory per agent-ready slot, off the run's path).
 */
export const PRESTART_NODE_FLAGS: readonly string[] = ['--no-lazy'];
/** The pre-started runtime's argv (child/agent/prestart.ts PRESTART_FLAG): PID 1's child in an agent-ready slot. */
export const PRESTART_ARGV: readonly string[] = [AGENT_RUNTIME_ARGV[0]!, ...PRESTART_NODE_FLAGS, ...AGENT_RUNTIME_ARGV.slice(1), '--prestarted'];
/** Its line on stderr once it waits (child/agent/prestart.ts PRESTART_READY). */
export const PRESTART_READY = 'brig-agent: pre-started';
/** The go the assignment sends it (child/agent/prestart.ts PRESTART_GO). */
export const PRESTART_GO = 'USR2';
/** The run's environment for a pre-started runtime, in the assignment's tar (child/paths.ts PATHS.env). */
export const RUN_ENV = '.brig/env.json';

/**
 * Variables that change how node starts (options, preloads, the loader, locale and allocator
 * set-up): a run whose environment names one is never served by a runtime started without it.
 */
const STARTUP_ENV = /^(NODE_|UV_|LD_|LC_|OPENSSL_|SSL_|GLIBC_|MALLOC_|ICU_)|^(LANG|LANGUAGE|TZ|TZDIR)$/;

/** Whether a spec's child may be a pre-started agent runtime: the cold agent argv exactly, no variable node reads at start. */
export function prestartable(spec: Pick<JailSpec, 'argv' | 'env'>): boolean {
  return spec.argv.length === AGENT_RUNTIME_ARGV.length && spec.argv.every((a, i) => a === AGENT_RUNTIME_ARGV[i]) && !Object.keys(spec.env).some((k) => STARTUP_ENV.test(k));
}

/**
 * PID 1 of a pooled jail. It says it is ready, blocks opening the FIFO (no CPU while it
 * waits), reads the assignment's first line and checks it carries the slot's nonce — known to
 * the engine's config of this one container and to the pool, never to another jail — and only
 * then unpacks the run's inputs from the rest of the stream as the jail user with the cold
 * path's umask. Then it evals the assignment: unset its own environment, export the run's, exec
 * the run's argv. Any failure, a missing or wrong nonce first, is exit 70 (the pool destroys
 * the slot; a run that held it fails).
 *
 * An agent-ready slot (`prestart`: the sleep its reaper execs) has no assignment to eval: its
 * runtime takes the run's environment from a file (RUN_ENV), so after the unpack the waiter
 * itself gives the go and reaps (the same reaper as an assignment's, its end marker from the
 * first line) — no process is started on the run's path but the runtime's go.
 *
 * Why eval: the run's argv must become PID 1 (exec), which only the shell can do here, and the
 * assignment is the pool's own text — every value single-quoted (assignScript) — reaching the
 * waiter only through a FIFO only root may write, after the slot's nonce.
 */
export function waiterScript(nonce: string, prestart?: { sleep: readonly string[] }): string {
  assignmentHeader(nonce);
  const head = [
    `BRIG_NONCE=${nonce}`,
    // An agent-ready slot: the runtime starts now, with the cold path's umask and cwd and an environment of nothing of any run.
    ...(prestart ? ['umask 022', `env -i ${Object.entries(PRESTART_ENV).map(([k, v]) => `${k}=${shQuote(v)}`).join(' ')} ${PRESTART_ARGV.map(shQuote).join(' ')} &`, 'brig_p=$!'] : []),
    `echo '${READY}' >&2`,
    'umask 022',
    // The shell's own read of the first line (no process started); nothing is unpacked before the nonce matched.
    `{ n=; m=; read -r n m && [ "$n" = "$BRIG_NONCE" ] && tar -xf - -C ${WORKSPACE_DIR}; } </run/brig/${FIFO} || exit 70`,
    'unset n BRIG_NONCE',
  ];
  if (prestart) {
    return [
      ...head,
      `case "$m" in brig-end-${'[0-9a-f]'.repeat(32)}) ;; *) exit 70 ;; esac`,
      ...reaped([`kill -${PRESTART_GO} "$brig_p" 2>/dev/null`], prestart.sleep, '"$m"'),
    ].join('\n');
  }
  return [...head, 'unset m', `s=$(cat ${WORKSPACE_DIR}/${ASSIGN}) || exit 70`, `rm -f ${WORKSPACE_DIR}/${ASSIGN}`, 'eval "$s"', 'exit 70'].join('\n');
}

/** What the engine adds to a container's environment beside the body's (profile.ts Hostname). */
const ENGINE_ENV = { HOSTNAME: 'brig' } as const;
/** The slot's own environment: what the waiter holds before its run's replaces it. */
export const SLOT_ENV = { HOME: WORKSPACE_DIR } as const;
/** A pre-started runtime's environment until its run's replaces it: the slot's, the cold path's PATH, the engine's HOSTNAME. */
const PRESTART_ENV = { ...SLOT_ENV, PATH: JAIL_PATH, ...ENGINE_ENV } as const;

/** Single-quoted for POSIX sh: safe for any string without NUL (argv and env never hold one). */
export function shQuote(s: string): string {
  return `'${s.replace(/'/g, `'\\''`)}'`;
}

/** A foreign image's part of an assignment (image-contract.ts terms): the run's and the slot's. */
export interface ForeignAssign {
  /** The image ENV the run keeps (its terms for the run's own env) and the image's PATH. */
  env: Readonly<Record<string, string>>;
  path: string;
  /** Names the slot's waiter holds from the image (its terms for the slot's env): unset first. */
  slotEnvKeys: readonly string[];
}

/**
 * The assignment the waiter evals: exactly the environment the cold path's container gets
 * (the spec's, a foreign image's ENV as its contract keeps it, PATH as render sets it, the
 * engine's HOSTNAME), then exec of the spec's argv. In a foreign image the waiter is brig's
 * busybox, whose shell runs its own applets before the image's programs: a bare argv[0] is
 * found along the run's PATH by the script itself and exec'd by its path — the image's
 * program, never brig's applet (not found: 127 and a line on stderr, as a shell says it).
 */
export function assignScript(spec: Pick<JailSpec, 'argv' | 'env'>, foreign?: ForeignAssign, reaper?: Reaper): string {
  const env = childEnv(spec, foreign);
  const unset = ['PWD', 'OLDPWD', 'SHLVL', 'PATH', ...Object.keys(ENGINE_ENV), ...Object.keys(SLOT_ENV), ...(foreign?.slotEnvKeys ?? [])];
  const [argv0 = '', ...rest] = spec.argv;
  const exec =
    foreign && !argv0.includes('/')
      ? [
          `c=''; IFS=:; for d in $PATH; do [ -n "$d" ] || d=.; if [ -f "$d"/${shQuote(argv0)} ] && [ -x "$d"/${shQuote(argv0)} ]; then c="$d"/${shQuote(argv0)}; break; fi; done; unset IFS d`,
          `[ -n "$c" ] || { echo ${shQuote(`brig: ${argv0}: not found in PATH`)} >&2; exit 127; }`,
          `exec "$c"${rest.map((a) => ` ${shQuote(a)}`).join('')}`,
        ]
      : [`exec ${spec.argv.map(shQuote).join(' ')}`];
  const start = [...exec.slice(0, -1), `${exec[exec.length - 1]!.replace(/^exec /, '')} &`, 'brig_p=$!'];
  return [`unset ${[...new Set(unset)].join(' ')}`, `export ${Object.entries(env).map(([k, v]) => `${k}=${shQuote(v)}`).join(' ')}`, ...(reaper ? reaped(start, reaper.sleep, shQuote(reaper.marker)) : exec), ''].join('\n');
}

/**
 * The child's whole environment, exactly the cold path's container's: the engine's HOSTNAME, a
 * foreign image's ENV as its contract keeps it, the spec's variables, PATH as render sets it.
 */
export function childEnv(spec: Pick<JailSpec, 'env'>, foreign?: ForeignAssign): Record<string, string> {
  const image = Object.fromEntries(Object.entries(foreign?.env ?? {}).filter(([k]) => !(k in spec.env) && k !== 'PATH'));
  return { ...ENGINE_ENV, ...image, ...spec.env, PATH: spec.env.PATH ?? foreign?.path ?? JAIL_PATH };
}

/** The assignment's input a pre-started runtime reads its environment from (0400, the jail user's; it removes it). */
export function runEnvInput(spec: Pick<JailSpec, 'env'>): JailInput {
  return { path: RUN_ENV, data: JSON.stringify({ env: childEnv(spec) }), mode: 0o400 };
}

/** How the reaper waits once it reported: a sleep by absolute path (brig's busybox in a foreign image). */
export interface Reaper {
  sleep: readonly string[];
  /** Written to both streams after the child ended: the host knows all it wrote has arrived (random per run, never the child's to know). */
  marker: string;
}

/**
 * The reaper (issue 26): the child runs as the waiter's child instead of replacing it, so its
 * end is known without waiting for the engine's exit handling. The waiter passes the usual
 * signals on, waits for the child, SIGKILLs whatever it left (what the kernel does when a
 * cold jail's PID 1 ends), writes the child's status to /run/brig/exit and then sleeps as PID
 * 1 (exec: nothing else runs in the jail) until the release kills the container. Its variables
 * are not exported: the child's environment is exactly the assignment's. The report is a
 * claim: pooled-jail.ts believes it only once the host saw the jail's pids cgroup hold the
 * reaper alone.
 */
function reaped(start: string[], sleep: readonly string[], marker: string): string[] {
  return [
    ...FORWARDED.map((sig) => `trap 'kill -${sig} "$brig_p" 2>/dev/null' ${sig}`),
    // The child starts (its pid in brig_p), or the pre-started one gets its go.
    ...start,
    // A trapped signal ends the wait early: wait again while the child lives.
    'while :; do wait "$brig_p" 2>/dev/null; brig_r=$?; kill -0 "$brig_p" 2>/dev/null || break; done',
    'trap - ' + FORWARDED.join(' '),
    'kill -KILL -1 2>/dev/null',
    `printf %s ${marker}`,
    `printf %s ${marker} >&2`,
    `echo "$brig_r" >/run/brig/${EXIT_FIFO}`,
    // The status rides in the sleep's argv too (busybox sleep adds its arguments): a supervisor
    // that restarted after the report was read finds it in PID 1's cmdline (reaper.ts).
    `exec ${sleep.map(shQuote).join(' ')} "$brig_r"`,
  ];
}

/** The waiter's whole ready line on its stderr (the stream may bring it in pieces) — and a pre-started runtime's — within the bound. */
export async function waiterReady(jail: DockerJail, timeoutMs: number, prestart = false): Promise<boolean> {
  const end = Date.now() + timeoutMs;
  let timer: NodeJS.Timeout | undefined;
  const first = await Promise.race([jail.firstOutput.then(() => true), new Promise<boolean>((r) => (timer = setTimeout(() => r(false), timeoutMs)))]);
  clearTimeout(timer);
  while (first && Date.now() < end) {
    const err = jail.tails().stderrTail;
    if (err.includes(READY) && (!prestart || err.includes(PRESTART_READY))) return true;
    await new Promise((r) => setTimeout(r, 2));
  }
  return false;
}

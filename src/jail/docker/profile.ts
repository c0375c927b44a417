/**
 * The hardened jail profile and its rendering into an Engine API create body.
 *
 * Guarantees: every container brig creates has no network, a read-only rootfs, no Linux
 * capabilities, no-new-privileges, brig's own seccomp profile (seccomp.ts: the engine's
 * default minus io_uring and more), a read-only /dev/mqueue, a non-root user, pids/memory/
 * cpu/tmpfs limits that are each at or above a floor and never above what the spec (the
 * lease) asked, and no host path mounted except the run's broker socket directory and
 * declared artifacts (both read-only). Nothing in a JailSpec can widen these: the spec
 * supplies only argv, env, limits and the two kinds of mounts, and every other field comes
 * from one frozen table.
 * Threat: a hostile child (prompt-injected agent, untrusted script) trying to reach the
 * network, the host filesystem, the engine socket, or to gain privileges.
 * Trusts: the engine to apply what it reports on inspect (verify.ts checks the report).
 * Fails: closed. A spec that asks for something unsafe (relative host path, `..` in a name,
 * a limit below its floor — which the engine would read as "no limit" or could not enforce)
 * is refused here, before the engine sees it; a limit is never raised to its floor, since
 * that would give a child more than its lease (INV-1).
 *
 * Pure: no engine, no disk. The golden test pins the rendered body.
 */
import path from 'node:path';
import { BrigError, err, ok, type Result } from '../../util/errors.js';
import type { JailSpec } from '../types.js';
import { LABELS } from './labels.js';
import { checkRequestedLimits, effectiveLimits, limitDrift, MIB, nanoCpusFor } from './limits.js';
import { SECCOMP_JSON } from './seccomp.js';

/** The jail's user: `nobody` in the child image's /etc/passwd. Never root. */
export const JAIL_USER = '65534:65534';
export const WORKSPACE_DIR = '/workspace';
/** The child's outputs: /workspace/out, the jail user's, collected after its end. */
export const OUT_DIR = 'out';

/** A path under /workspace as relative parts joined, or undefined when it is absolute, empty or climbs out (`..`). */
export function workspaceRelative(p: string): string | undefined {
  if (p.startsWith('/') || p.includes('\0') || p.includes('\\')) return undefined;
  const parts = p.split('/').filter((x) => x !== '' && x !== '.');
  if (parts.length === 0 || parts.some((x) => x === '..')) return undefined;
  return parts.join('/');
}

export const BROKER_DIR = '/run/brig';
export const ARTIFACTS_DIR = '/artifacts';
/** Where brig's runtime is in every jail: baked into the child image, bound read-only into a foreign one (runtime-bundle.ts). */
export const RUNTIME_MOUNT = '/opt/brig';
/** PATH inside the jail: the child env is built from nothing, so brig sets it itself. */
export const JAIL_PATH = '/bin:/usr/bin';

/**
 * Every HostConfig field brig sets, with the reason. This is the whole profile: there is no
 * pass-through of raw engine options anywhere in brig.
 */
export const HARDENED = Object.freeze({
  NetworkMode: 'none', // no interface but loopback: a child cannot reach anything
  ReadonlyRootfs: true, // the image cannot be altered; writes go to /workspace or /tmp only
  CapDrop: Object.freeze(['ALL']), // no Linux capabilities at all, even for uid 0 paths
  CapAdd: Object.freeze([] as string[]), // nothing added back
  Privileged: false, // never
  SecurityOpt: Object.freeze([`seccomp=${SECCOMP_JSON}`, 'no-new-privileges']), // brig's seccomp allowlist (seccomp.ts); setuid binaries cannot raise privilege
  IpcMode: 'none', // own IPC namespace and no /dev/shm mounted at all: no shared-memory area to write
  PidMode: '', // own pid namespace
  UTSMode: '', // own hostname
  UsernsMode: '', // engine default; `host` would be refused by verify
  CgroupnsMode: 'private', // the child sees only its own cgroup
  Devices: Object.freeze([] as unknown[]), // no device nodes beyond the engine's minimal set
  MaskedPaths: Object.freeze(['/proc/asound', '/proc/acpi', '/proc/kcore', '/proc/keys', '/proc/latency_stats', '/proc/timer_list', '/proc/timer_stats', '/proc/sched_debug', '/proc/scsi', '/sys/firmware']), // the engine's defaults, stated so verify can see them kept
  ReadonlyPaths: Object.freeze(['/proc/bus', '/proc/fs', '/proc/irq', '/proc/sys', '/proc/sysrq-trigger', '/dev/mqueue']), // the engine's defaults plus /dev/mqueue: no message queue can be created through it
  OomKillDisable: false, // the memory limit is enforced by the OOM killer
  Init: false, // the child runtime is pid 1 and reaps its own children
  AutoRemove: false, // brig collects /workspace/out after exit, then removes the container itself
  RestartPolicy: Object.freeze({ Name: 'no', MaximumRetryCount: 0 }), // a jail serves one run
  LogConfig: Object.freeze({ Type: 'none', Config: Object.freeze({}) }), // no host log files a child could fill; brig reads attach streams
  Runtime: 'runc', // the runtime tier `docker-hardened`
  PublishAllPorts: false, // nothing to publish without a network
  ShmSize: 16 * 1024 * 1024, // bounds /dev/shm should a future profile mount one (IpcMode none mounts none)
  Ulimits: Object.freeze([Object.freeze({ Name: 'core', Soft: 0, Hard: 0 })]), // no core dumps of child memory
});

export interface EngineMount {
  Type: 'volume' | 'bind';
  Source: string;
  Target: string;
  ReadOnly: boolean;
  /**
   * A foreign image's workspace: the engine copies nothing of the image into the volume — not
   * the owner of a /workspace the image lacks (root), which would take the jail user's disk root.
   */
  VolumeOptions?: { NoCopy: true };
}

/** The Engine API create body: plain JSON, no adapter types. */
export interface CreateBody {
  Image: string;
  Cmd: string[];
  /** Empty: the run's argv is the whole command, whatever ENTRYPOINT the image names. */
  Entrypoint: [];
  /** No health check: the engine execs nothing in a jail that brig did not ask for. */
  Healthcheck: { Test: ['NONE'] };
  Env: string[];
  User: string;
  WorkingDir: string;
  Hostname: string;
  Labels: Record<string, string>;
  AttachStdin: false;
  AttachStdout: true;
  AttachStderr: true;
  OpenStdin: false;
  Tty: false;
  NetworkDisabled: true;
  StopSignal: 'SIGKILL';
  HostConfig: typeof HARDENED & {
    Memory: number;
    MemorySwap: number;
    NanoCpus: number;
    PidsLimit: number;
    Tmpfs: Record<string, string>;
    Mounts: EngineMount[];
    Binds: string[];
  };
}

/** The name of a run's workspace volume. */
export function workspaceVolumeName(runId: string): string {
  return `brig-ws-${runId}`;
}

export function containerName(runId: string): string {
  return `brig-run-${runId}`;
}

const ID_RE = /^[A-Za-z0-9][A-Za-z0-9_.-]{0,127}$/;
const ENV_NAME_RE = /^[A-Za-z_][A-Za-z0-9_]*$/;

function refuse(message: string, data: Record<string, unknown>): Result<never> {
  return err(new BrigError('invalid_input', message, { data }));
}

/**
 * A foreign image's part of the body: what the image contract kept of its ENV (image-contract.ts)
 * and brig's runtime directory, bound read-only at RUNTIME_MOUNT (runtime-bundle.ts).
 */
export interface ForeignImage {
  /** image-contract.ts ImageTerms: the image ENV kept, its PATH, what was overridden. */
  terms: { env: Record<string, string>; path: string; overridden: string[] };
  runtimeDir: string;
}


/** Checks a spec and renders the create body. Refusals are values. */
export function renderCreateBody(spec: JailSpec, image: string, owner = 'default', foreign?: ForeignImage): Result<CreateBody> {
  for (const [k, v] of [['runId', spec.runId], ['leaseId', spec.leaseId], ['rootRunId', spec.rootRunId], ['owner', owner]] as const) {
    if (!ID_RE.test(v)) return refuse(`jail ${k} is not a safe identifier`, { field: k });
  }
  if (spec.argv.length === 0 || spec.argv.some((a) => typeof a !== 'string' || a.includes('\0'))) {
    return refuse('jail argv must be a non-empty list of strings without NUL', { argc: spec.argv.length });
  }
  const limitsRefused = checkRequestedLimits(spec.limits);
  if (limitsRefused) return err(limitsRefused);
  const env: string[] = [];
  for (const [k, v] of Object.entries(spec.env)) {
    if (!ENV_NAME_RE.test(k) || v.includes('\0')) return refuse('jail env names must be identifiers and values NUL-free', { name: k });
    if (k !== 'PATH') env.push(`${k}=${v}`);
  }
  // A foreign image's own ENV, as the contract kept it, is written into the body: the engine then
  // adds nothing of the image's, and verify reads back exactly this list.
  for (const [k, v] of Object.entries(foreign?.terms.env ?? {})) if (!(k in spec.env) && k !== 'PATH') env.push(`${k}=${v}`);
  env.push(`PATH=${spec.env.PATH ?? foreign?.terms.path ?? JAIL_PATH}`);
  env.sort();

  const mounts: EngineMount[] = [
    { Type: 'volume', Source: workspaceVolumeName(spec.runId), Target: WORKSPACE_DIR, ReadOnly: false, ...(foreign ? { VolumeOptions: { NoCopy: true as const } } : {}) },
  ];
  if (foreign !== undefined) {
    if (!path.isAbsolute(foreign.runtimeDir)) return refuse("brig's runtime directory must be an absolute host path", {});
    mounts.push({ Type: 'bind', Source: path.normalize(foreign.runtimeDir), Target: RUNTIME_MOUNT, ReadOnly: true });
  }
  if (spec.brokerDir !== undefined) {
    if (!path.isAbsolute(spec.brokerDir)) return refuse('brokerDir must be an absolute host path', {});
    mounts.push({ Type: 'bind', Source: path.normalize(spec.brokerDir), Target: BROKER_DIR, ReadOnly: true });
  }
  const names = new Set<string>();
  for (const a of spec.artifacts) {
    if (!path.isAbsolute(a.hostPath)) return refuse('an artifact host path must be absolute', { name: a.name });
    if (!/^[A-Za-z0-9][A-Za-z0-9_.-]{0,127}$/.test(a.name) || a.name.includes('..') || names.has(a.name)) {
      return refuse('an artifact name must be a unique plain basename', { name: a.name });
    }
    names.add(a.name);
    mounts.push({ Type: 'bind', Source: path.normalize(a.hostPath), Target: `${ARTIFACTS_DIR}/${a.name}`, ReadOnly: true });
  }

  const { memoryMb, cpu, pids, tmpfsMb } = spec.limits;
  const memory = memoryMb * MIB;
  const body: CreateBody = {
    Image: image,
    Cmd: [...spec.argv],
    Entrypoint: [],
    Healthcheck: { Test: ['NONE'] },
    Env: env,
    User: JAIL_USER,
    WorkingDir: WORKSPACE_DIR,
    Hostname: 'brig',
    Labels: {
      [LABELS.managed]: '1',
      [LABELS.owner]: owner,
      [LABELS.runId]: spec.runId,
      [LABELS.rootRunId]: spec.rootRunId,
      [LABELS.leaseId]: spec.leaseId,
    },
    AttachStdin: false,
    AttachStdout: true,
    AttachStderr: true,
    OpenStdin: false,
    Tty: false,
    NetworkDisabled: true,
    StopSignal: 'SIGKILL',
    HostConfig: {
      ...HARDENED,
      Memory: memory,
      MemorySwap: memory, // equal to Memory: no swap beyond the limit
      NanoCpus: nanoCpusFor(cpu),
      PidsLimit: pids,
      Tmpfs: { '/tmp': `rw,nosuid,nodev,noexec,size=${tmpfsMb}m,mode=1777` },
      Mounts: mounts,
      Binds: [],
    },
  };
  // The same predicate verify applies to the engine's report: what the kernel will be given,
  // read back from the body, is at or above every floor and never above the lease.
  const off = limitDrift(effectiveLimits(body.HostConfig), spec.limits);
  if (off.length > 0) return refuse(`the rendered jail limits are not the lease's (${off.map((d) => d.field).join(', ')})`, { drift: off.map((d) => d.field) });
  return ok(body);
}

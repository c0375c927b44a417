/**
 * The CIS Docker Benchmark's section 5 (container runtime), judged on one container as the
 * engine reports it (inspect), from the benchmark's own text — what an operator's auditor runs
 * against every jail brig makes. Pure: inspect in, one row per check out.
 *
 * Guarantees: every check of §5 that applies to a container is here, strict where the text
 * allows a choice (§5.5 refuses any bind from a sensitive directory or under it, read-only
 * included, and counts /run and /var/run among them); the checks that are about the host or
 * the daemon, not a container, or that a jail cannot have (ssh, health checks for a one-shot
 * child), are listed as not applicable with why — never silently skipped.
 * Trusts: the engine's inspect. Fails closed: a field it cannot read fails its check.
 */

/** The inspect fields the checks read (a subset of the engine's). */
export interface CisInspect {
  HostConfig?: {
    CapAdd?: string[] | null;
    CapDrop?: string[] | null;
    Privileged?: boolean;
    NetworkMode?: string;
    Memory?: number;
    NanoCpus?: number;
    CpuQuota?: number;
    CpuShares?: number;
    ReadonlyRootfs?: boolean;
    PidMode?: string;
    IpcMode?: string;
    UTSMode?: string;
    UsernsMode?: string;
    Devices?: unknown[] | null;
    SecurityOpt?: string[] | null;
    PidsLimit?: number | null;
    PortBindings?: Record<string, unknown> | null;
    RestartPolicy?: { Name?: string; MaximumRetryCount?: number };
    CgroupParent?: string;
  };
  Mounts?: { Type?: string; Source?: string; Destination?: string; RW?: boolean; Propagation?: string }[] | null;
  Config?: { User?: string; ExposedPorts?: Record<string, unknown> | null };
}

export interface CisRow {
  id: string;
  title: string;
  /** `pass`, `fail`, or `n/a` with why in detail. */
  result: 'pass' | 'fail' | 'n/a';
  detail: string;
}

/** §5.5's sensitive host directories, and brig's additions a checker may count (see the header). */
export const SENSITIVE_DIRS = ['/', '/boot', '/dev', '/etc', '/lib', '/lib64', '/proc', '/sys', '/usr', '/run', '/var/run', '/root'];

const under = (p: string, dir: string) => p === dir || (dir !== '/' && p.startsWith(`${dir}/`));

function row(id: string, title: string, ok: boolean, detail: string): CisRow {
  return { id, title, result: ok ? 'pass' : 'fail', detail };
}

const na = (id: string, title: string, why: string): CisRow => ({ id, title, result: 'n/a', detail: why });

/** §5 of the CIS Docker Benchmark (v1.6), judged on one container. */
export function cisSection5(i: CisInspect): CisRow[] {
  const h = i.HostConfig ?? {};
  const mounts = i.Mounts ?? [];
  const binds = mounts.filter((m) => m.Type === 'bind');
  const sec = h.SecurityOpt ?? [];
  const capDrop = (h.CapDrop ?? []).map((c) => c.toUpperCase());
  const sensitive = binds.filter((m) => SENSITIVE_DIRS.some((d) => under(m.Source ?? '/', d)));
  return [
    na('5.1', 'AppArmor profile', 'host-dependent (this engine has no AppArmor); brig confines with its own seccomp profile (5.21) and no capabilities'),
    na('5.2', 'SELinux options', 'host-dependent (this engine has no SELinux)'),
    row('5.3', 'Linux kernel capabilities restricted', (h.CapAdd ?? []).length === 0 && capDrop.includes('ALL'), `CapAdd ${JSON.stringify(h.CapAdd ?? [])}, CapDrop ${JSON.stringify(h.CapDrop ?? [])}`),
    row('5.4', 'privileged containers not used', h.Privileged === false, `Privileged ${String(h.Privileged)}`),
    row('5.5', 'sensitive host directories not mounted', sensitive.length === 0, sensitive.length ? sensitive.map((m) => `${m.Source} → ${m.Destination}`).join(', ') : `binds: ${binds.map((m) => m.Source).join(', ') || 'none'}`),
    na('5.6', 'sshd not run', 'a jail runs one child argv; no init, no daemons'),
    row('5.7', 'privileged ports not mapped', Object.keys(h.PortBindings ?? {}).length === 0, `PortBindings ${JSON.stringify(h.PortBindings ?? {})}`),
    row('5.8', 'only needed ports open', Object.keys(i.Config?.ExposedPorts ?? {}).length === 0, `ExposedPorts ${JSON.stringify(i.Config?.ExposedPorts ?? {})}`),
    row('5.9', "host's network namespace not shared", h.NetworkMode !== undefined && h.NetworkMode !== 'host', `NetworkMode ${String(h.NetworkMode)}`),
    row('5.10', 'memory usage limited', typeof h.Memory === 'number' && h.Memory > 0, `Memory ${String(h.Memory)}`),
    row('5.11', 'CPU priority set', (h.NanoCpus ?? 0) > 0 || (h.CpuQuota ?? 0) > 0 || (h.CpuShares ?? 0) > 0, `NanoCpus ${String(h.NanoCpus)}, CpuQuota ${String(h.CpuQuota)}`),
    row('5.12', 'root filesystem mounted read-only', h.ReadonlyRootfs === true, `ReadonlyRootfs ${String(h.ReadonlyRootfs)}`),
    row('5.13', 'incoming traffic bound to one interface', Object.keys(h.PortBindings ?? {}).length === 0, 'no port is published'),
    row('5.14', "restart policy 'on-failure' at most 5 (or none)", (h.RestartPolicy?.Name ?? 'no') === 'no' || (h.RestartPolicy?.Name === 'on-failure' && (h.RestartPolicy.MaximumRetryCount ?? 0) <= 5), `RestartPolicy ${JSON.stringify(h.RestartPolicy ?? {})}`),
    row('5.15', "host's process namespace not shared", h.PidMode !== 'host', `PidMode ${String(h.PidMode ?? '')}`),
    row('5.16', "host's IPC namespace not shared", h.IpcMode !== 'host', `IpcMode ${String(h.IpcMode ?? '')}`),
    row('5.17', 'host devices not exposed', (h.Devices ?? []).length === 0, `Devices ${JSON.stringify(h.Devices ?? [])}`),
    na('5.18', 'default ulimit overwritten only when needed', 'brig sets no ulimit: the engine default holds'),
    row('5.19', 'mount propagation not shared', mounts.every((m) => !/^r?shared$/.test(m.Propagation ?? '')), mounts.map((m) => `${m.Destination}:${m.Propagation || 'default'}`).join(', ')),
    row('5.20', "host's UTS namespace not shared", h.UTSMode !== 'host', `UTSMode ${String(h.UTSMode ?? '')}`),
    row('5.21', 'default seccomp profile not disabled', sec.some((o) => o.startsWith('seccomp=')) && !sec.some((o) => /^seccomp[=:]unconfined$/.test(o)), `SecurityOpt ${sec.map((o) => (o.startsWith('seccomp=') ? 'seccomp=<brig profile>' : o)).join(', ')}`),
    na('5.22', 'docker exec with --privileged not used', 'brig never runs docker exec in a jail'),
    na('5.23', 'docker exec with --user=root not used', 'brig never runs docker exec in a jail'),
    row('5.24', 'cgroup usage confirmed', !h.CgroupParent, `CgroupParent ${JSON.stringify(h.CgroupParent ?? '')}`),
    row('5.25', 'container restricted from acquiring additional privileges', sec.some((o) => o === 'no-new-privileges' || o === 'no-new-privileges:true'), 'no-new-privileges'),
    na('5.26', 'container health checked at runtime', 'a jail is one child run to its end; brig watches it (watchdog, stuck-kill), not a health check'),
    na('5.27', 'latest images used', 'the child image is built locally from the host'),
    row('5.28', 'PIDs cgroup limit used', typeof h.PidsLimit === 'number' && h.PidsLimit > 0, `PidsLimit ${String(h.PidsLimit)}`),
    row('5.29', "Docker's default bridge not used", h.NetworkMode !== 'default' && h.NetworkMode !== 'bridge', `NetworkMode ${String(h.NetworkMode)}`),
    row('5.30', "host's user namespaces not shared", h.UsernsMode !== 'host', `UsernsMode ${String(h.UsernsMode ?? '')}`),
    row('5.31', 'Docker socket not mounted', !binds.some((m) => /docker\.sock$|containerd\.sock$/.test(m.Source ?? '')), 'no engine socket'),
  ];
}

/**
 * Read back what the engine actually made and compare it with the profile.
 *
 * Guarantees: a container is started only when its inspected settings match the rendered
 * create body on every security-relevant field (network, rootfs, capabilities, privileges,
 * brig's seccomp profile byte for byte, apparmor, masked and read-only paths, namespaces,
 * user, mounts, env), and when the limits the kernel will be given — the CFS quota the
 * engine derives from NanoCpus, memory, swap, pids, /tmp size — are what the lease intended:
 * at or above their floors and never above the lease (limits.ts, the predicate render uses
 * too). Any drift is returned as data; the driver removes the container and refuses the run
 * with `jail_unverified`.
 * Threat: an engine (old version, daemon flags, a plugin, a userns remap) that silently
 * ignores or rewrites a field, so the jail would be weaker than brig believes.
 * Trusts: the inspect response as the engine's own account of the container.
 * Fails: closed. A missing field counts as drift.
 *
 * Pure: takes plain JSON, returns a list.
 */
import type { JailLimits } from '../types.js';
import { effectiveLimits, limitDrift } from './limits.js';
import type { CreateBody, EngineMount } from './profile.js';

/** The slice of an Engine API inspect response that verification reads. */
export interface InspectView {
  Config?: {
    User?: string;
    Image?: string;
    Cmd?: string[] | null;
    Entrypoint?: string[] | null;
    Healthcheck?: { Test?: string[] | null } | null;
    Env?: string[] | null;
    NetworkDisabled?: boolean;
    Labels?: Record<string, string> | null;
  };
  HostConfig?: Record<string, unknown>;
  Mounts?: { Type?: string; Source?: string; Name?: string; Destination?: string; RW?: boolean }[] | null;
  NetworkSettings?: { Networks?: Record<string, unknown> | null };
}

export interface Drift {
  field: string;
  expected: unknown;
  actual: unknown;
}

const same = (a: unknown, b: unknown): boolean => JSON.stringify(a) === JSON.stringify(b);
const list = (x: unknown): unknown[] => (Array.isArray(x) ? x : []);

/** `intent`: the spec's limits (the lease's), judged independently of what the body rendered. */
export function verifyInspect(inspect: InspectView, body: CreateBody, intent: JailLimits): Drift[] {
  const drift: Drift[] = [];
  const check = (field: string, expected: unknown, actual: unknown, good = same(expected, actual)) => {
    if (!good) drift.push({ field, expected, actual });
  };
  const c = inspect.Config ?? {};
  const h = inspect.HostConfig ?? {};
  const want = body.HostConfig;

  check('Config.User', body.User, c.User);
  check('Config.Image', body.Image, c.Image);
  check('Config.Cmd', body.Cmd, c.Cmd);
  // The image's ENTRYPOINT must not wrap the run's argv, nor its HEALTHCHECK exec anything.
  check('Config.Entrypoint', [], c.Entrypoint ?? [], list(c.Entrypoint).length === 0);
  check('Config.Healthcheck', ['NONE'], c.Healthcheck?.Test ?? null, same(c.Healthcheck?.Test, ['NONE']));
  check('Config.Env', body.Env, [...list(c.Env)].sort());
  check('Config.NetworkDisabled', true, c.NetworkDisabled);

  for (const f of ['NetworkMode', 'ReadonlyRootfs', 'Privileged', 'IpcMode', 'OomKillDisable', 'Runtime', 'Memory', 'MemorySwap', 'NanoCpus', 'PidsLimit', 'AutoRemove', 'PublishAllPorts'] as const) {
    check(`HostConfig.${f}`, want[f], h[f]);
  }
  for (const f of ['PidMode', 'UTSMode', 'UsernsMode'] as const) {
    const v = h[f] ?? '';
    check(`HostConfig.${f}`, 'not host', v, v === '' || v === want[f]);
  }
  check('HostConfig.CgroupnsMode', want.CgroupnsMode, h.CgroupnsMode);

  const capDrop = list(h.CapDrop).map((x) => String(x).toUpperCase());
  check('HostConfig.CapDrop', ['ALL'], capDrop, capDrop.includes('ALL') || capDrop.includes('CAP_ALL'));
  check('HostConfig.CapAdd', [], list(h.CapAdd), list(h.CapAdd).length === 0);
  check('HostConfig.Devices', [], list(h.Devices), list(h.Devices).length === 0);
  check('HostConfig.Binds', [], list(h.Binds), list(h.Binds).length === 0);
  check('HostConfig.VolumesFrom', [], list(h.VolumesFrom), list(h.VolumesFrom).length === 0);

  // Exactly brig's options: its own seccomp profile (the engine echoes the JSON as given) and
  // no-new-privileges; anything else (unconfined, another profile, label disable) is drift.
  const secopt = list(h.SecurityOpt).map(String);
  const nnp = (s: string) => s === 'no-new-privileges' || s === 'no-new-privileges:true' || s === 'no-new-privileges=true';
  const seccomp = want.SecurityOpt.find((s) => s.startsWith('seccomp='));
  const shown = secopt.map((s) => (s.startsWith('seccomp=') && s !== seccomp ? 'seccomp=<another profile>' : s === seccomp ? 'seccomp=<brig>' : s));
  check('HostConfig.SecurityOpt', ['seccomp=<brig>', 'no-new-privileges'], shown, secopt.length === 2 && secopt.some(nnp) && seccomp !== undefined && secopt.includes(seccomp));
  check('HostConfig.MaskedPaths', want.MaskedPaths, h.MaskedPaths);
  check('HostConfig.ReadonlyPaths', want.ReadonlyPaths, h.ReadonlyPaths);
  for (const d of limitDrift(effectiveLimits(h), intent)) drift.push(d);

  // The engine echoes Ulimits with its own key order: compare as name:soft:hard.
  const ulimits = (x: unknown) =>
    list(x)
      .map((u) => u as { Name?: string; Soft?: number; Hard?: number })
      .map((o) => `${o.Name}:${o.Soft}:${o.Hard}`)
      .sort();
  check('HostConfig.Ulimits', ulimits(want.Ulimits), ulimits(h.Ulimits));
  check('HostConfig.LogConfig.Type', want.LogConfig.Type, (h.LogConfig as { Type?: string } | undefined)?.Type);
  check('HostConfig.RestartPolicy.Name', want.RestartPolicy.Name, (h.RestartPolicy as { Name?: string } | undefined)?.Name);
  check('HostConfig.Tmpfs', want.Tmpfs, h.Tmpfs);
  check('HostConfig.Mounts', normMounts(want.Mounts), normMounts(list(h.Mounts) as EngineMount[]));

  // The effective mounts: every one must be a mount brig asked for, with the same mode.
  const allowed = new Map(want.Mounts.map((m) => [m.Target, m]));
  const effective = list(inspect.Mounts) as NonNullable<InspectView['Mounts']>;
  for (const m of effective) {
    const dest = m.Destination ?? '';
    const asked = allowed.get(dest);
    const src = asked?.Type === 'volume' ? m.Name : m.Source;
    const good = asked !== undefined && asked.Type === m.Type && asked.Source === src && asked.ReadOnly === !m.RW;
    check(`Mounts[${dest}]`, asked ?? 'no such mount', { type: m.Type, rw: m.RW, source: src }, good);
  }
  check('Mounts.count', want.Mounts.length, effective.length);

  const nets = Object.keys(inspect.NetworkSettings?.Networks ?? {});
  check('NetworkSettings.Networks', ['none'], nets, nets.every((n) => n === 'none'));

  for (const [k, v] of Object.entries(body.Labels)) check(`Config.Labels.${k}`, v, c.Labels?.[k]);
  return drift;
}

function normMounts(ms: EngineMount[]): string[] {
  return ms.map((m) => `${m.Type}|${m.Source}|${m.Target}|${Boolean(m.ReadOnly)}`).sort();
}

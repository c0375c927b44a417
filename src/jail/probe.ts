/**
 * Proof from inside a jail. A small program (Node built-ins only) runs in a real jail and
 * reports what it can see and do; `judgeProbe` turns the report into pass/fail checks.
 * Used by `brig doctor` and by the [INV-2] integration tests: security is shown negatively,
 * from inside, not assumed from the create body.
 *
 * Network attempts aim only at this machine: the supervisor's loopback port (unreachable from
 * a separate network namespace) and the host's own non-loopback addresses, which a jail with
 * NetworkMode none cannot route to (ENETUNREACH at once: the kernel builds no packet). Were
 * the jail ever given a network, the attempt would still end at this host, never elsewhere.
 * The probe also lists every route it has but loopback's (none).
 */
import os from 'node:os';
import { z } from 'zod';

/** Errors a connect gets when there is no route at all (no packet was sent anywhere). */
const NO_ROUTE = new Set(['ENETUNREACH', 'EHOSTUNREACH']);

/**
 * The host's own addresses off loopback (IPv4 and global/unique-local IPv6; link-local needs a
 * scope the jail does not have), at most 4: what the probe tries to reach from inside.
 */
export function hostAddresses(): string[] {
  const out: string[] = [];
  for (const list of Object.values(os.networkInterfaces())) {
    for (const a of list ?? []) {
      if (a.internal || (a.family === 'IPv6' && /^fe[89ab]/i.test(a.address))) continue;
      if (!out.includes(a.address)) out.push(a.address);
    }
  }
  return out.sort().slice(0, 4);
}

/** The argv that runs the probe in a jail, aimed at `loopbackPort` and this host's own addresses. */
export function probeArgv(loopbackPort: number): string[] {
  return ['node', '-e', PROBE_SCRIPT, String(loopbackPort), ...hostAddresses()];
}

/** Runs as `node -e PROBE_SCRIPT <loopbackPort> [hostAddress…]` inside the jail (probeArgv); prints one JSON line. */
export const PROBE_SCRIPT = String.raw`
const fs = require('node:fs'), os = require('node:os'), net = require('node:net');
const status = fs.readFileSync('/proc/self/status', 'utf8');
const field = (k) => (new RegExp('^' + k + ':\\s*(\\S+)', 'm').exec(status) || [])[1] || null;
const tryWrite = (p) => { try { fs.writeFileSync(p, 'x'); fs.unlinkSync(p); return 'ok'; } catch (e) { return e.code || String(e); } };
const port = Number(process.argv[1] || 9);
const read = (...ps) => { for (const p of ps) { try { return fs.readFileSync(p, 'utf8').trim(); } catch {} } return null; };
const cg = '/sys/fs/cgroup/';
const connect = (host, port) => new Promise((resolve) => {
  const s = net.connect({ host, port, timeout: 2000 });
  s.on('connect', () => { s.destroy(); resolve('connected'); });
  s.on('error', (e) => resolve(e.code || 'error'));
  s.on('timeout', () => { s.destroy(); resolve('timeout'); });
});
const hostAddrs = process.argv.slice(2);
const routes = [];
for (const f of ['/proc/net/route', '/proc/net/ipv6_route']) {
  let lines = []; try { lines = fs.readFileSync(f, 'utf8').trim().split('\n'); } catch {}
  for (const l of lines) {
    const cols = l.trim().split(/\s+/);
    const dev = f.endsWith('ipv6_route') ? cols[cols.length - 1] : cols[0];
    if (dev && dev !== 'Iface' && dev !== 'lo') routes.push(f.slice(10) + ' ' + l.trim());
  }
}
Promise.all([connect('127.0.0.1', port), Promise.all(hostAddrs.map((a) => connect(a, port)))]).then(([tcp, hosts]) => {
  const out = {
    uid: process.getuid(), gid: process.getgid(),
    noNewPrivs: field('NoNewPrivs'), capEff: field('CapEff'), capBnd: field('CapBnd'), seccomp: field('Seccomp'),
    interfaces: Object.keys(os.networkInterfaces()).sort(),
    tcpLoopbackHost: tcp, tcpHostAddresses: Object.fromEntries(hostAddrs.map((a, i) => [a, hosts[i]])), routes,
    shmWrite: tryWrite('/dev/shm/.brig-probe'),
    rootWrite: tryWrite('/brig-probe'), workspaceWrite: tryWrite('/workspace/.brig-probe'), tmpWrite: tryWrite('/tmp/.brig-probe'),
    dockerSocket: fs.existsSync('/var/run/docker.sock') || fs.existsSync('/run/docker.sock'),
    mounts: fs.readFileSync('/proc/self/mounts', 'utf8').split('\n').filter(Boolean).map((l) => l.split(' ').slice(1, 4).join(' ')),
    limits: {
      memory: read(cg + 'memory/memory.limit_in_bytes', cg + 'memory.max'),
      memsw: read(cg + 'memory/memory.memsw.limit_in_bytes'),
      swapMax: read(cg + 'memory.swap.max'),
      pids: read(cg + 'pids/pids.max', cg + 'pids.max'),
      cpu: read(cg + 'cpu.max') || [read(cg + 'cpu/cpu.cfs_quota_us'), read(cg + 'cpu/cpu.cfs_period_us')].join(' '),
    },
    // node is execute-only, so this probe is non-dumpable and its own /proc/self/environ is root's:
    // read the environment it hands a child (brig's busybox, readable, so dumpable) instead.
    envKeys: require('node:child_process').execFileSync('/opt/brig/bin/busybox', ['cat', '/proc/self/environ'], { encoding: 'utf8' }).split('\0').filter(Boolean).map((l) => l.split('=')[0]).filter((k) => k !== 'PWD' && k !== 'SHLVL').sort(),
    workspace: (() => {
      const mi = fs.readFileSync('/proc/self/mountinfo', 'utf8').split('\n').filter((l) => l.split(' ')[4] === '/workspace').pop() || '';
      const st = fs.statfsSync('/workspace');
      return { bytes: st.blocks * st.bsize, fstype: (mi.split(' - ')[1] || '').split(' ')[0] || '', options: mi.split(' ')[5] || '' };
    })(),
  };
  process.stdout.write(JSON.stringify(out) + '\n');
});
`;

export const ProbeReportSchema = z.object({
  uid: z.number(),
  gid: z.number(),
  noNewPrivs: z.string().nullable(),
  capEff: z.string().nullable(),
  capBnd: z.string().nullable(),
  seccomp: z.string().nullable(),
  interfaces: z.array(z.string()),
  tcpLoopbackHost: z.string(),
  /** Each of the host's own addresses the probe tried, and what its connect got. */
  tcpHostAddresses: z.record(z.string(), z.string()),
  /** Routes other than loopback's (/proc/net/route and ipv6_route lines). */
  routes: z.array(z.string()),
  shmWrite: z.string(),
  rootWrite: z.string(),
  workspaceWrite: z.string(),
  tmpWrite: z.string(),
  dockerSocket: z.boolean(),
  mounts: z.array(z.string()),
  limits: z.object({
    memory: z.string().nullable(),
    memsw: z.string().nullable(),
    swapMax: z.string().nullable(),
    pids: z.string().nullable(),
    cpu: z.string().nullable(),
  }),
  envKeys: z.array(z.string()),
  workspace: z.object({ bytes: z.number(), fstype: z.string(), options: z.string() }),
});
export type ProbeReport = z.infer<typeof ProbeReportSchema>;

export interface ProbeCheck {
  name: string;
  ok: boolean;
  saw: string;
}

const ZERO_CAPS = /^0+$/;

/** The limits the probe jail was created with, to find again in its cgroup. */
export interface ProbeLimits {
  memoryMb: number;
  pids: number;
  cpu: number;
  /** /workspace's cap, when the jail was made with the disk quota. */
  diskMb?: number;
}

/** Pure: cgroup v1 `quota period` or v2 `max`-file `quota period` as CPUs, or null. */
function cpusOf(s: string | null): number | null {
  const [q, p] = (s ?? '').split(' ').map(Number);
  return q !== undefined && p !== undefined && q > 0 && p > 0 ? q / p : null;
}

/** Pure: what the probe saw, judged against INV-2 (and, given them, the limits it was made with). */
export function judgeProbe(r: ProbeReport, limits?: ProbeLimits): ProbeCheck[] {
  const c = (name: string, ok: boolean, saw: unknown): ProbeCheck => ({ name, ok, saw: typeof saw === 'string' ? saw : JSON.stringify(saw) });
  return [
    c('non-root user', r.uid !== 0 && r.gid !== 0, `${r.uid}:${r.gid}`),
    c('no-new-privileges', r.noNewPrivs === '1', r.noNewPrivs),
    c('no effective capabilities', r.capEff !== null && ZERO_CAPS.test(r.capEff), r.capEff),
    c('no bounding capabilities', r.capBnd !== null && ZERO_CAPS.test(r.capBnd), r.capBnd),
    c('seccomp filter on', r.seccomp === '2', r.seccomp),
    c('no network interface but loopback', r.interfaces.every((i) => i === 'lo'), r.interfaces),
    c('host loopback unreachable', r.tcpLoopbackHost !== 'connected', r.tcpLoopbackHost),
    c('no route but loopback', r.routes.length === 0, r.routes.length === 0 ? 'none' : r.routes),
    hostAddressCheck(r.tcpHostAddresses),
    c('read-only root filesystem', r.rootWrite === 'EROFS', r.rootWrite),
    c('workspace writable', r.workspaceWrite === 'ok', r.workspaceWrite),
    c('tmp writable', r.tmpWrite === 'ok', r.tmpWrite),
    c('no writable /dev/shm', r.shmWrite !== 'ok', r.shmWrite),
    c('no engine socket', !r.dockerSocket, r.dockerSocket),
    ...(limits ? judgeLimits(r, limits).map((x) => c(x.name, x.ok, x.saw)) : []),
  ];
}

/** The host's own addresses must have no route from the jail: refused or timed out means a packet went. */
function hostAddressCheck(tried: Record<string, string>): ProbeCheck {
  const entries = Object.entries(tried);
  const name = "host's own addresses unroutable";
  if (entries.length === 0) return { name, ok: true, saw: 'none to try (the host has only loopback)' };
  return { name, ok: entries.every(([, code]) => NO_ROUTE.has(code)), saw: entries.map(([a, code]) => `${a} ${code}`).join(', ') };
}

function judgeLimits(r: ProbeReport, want: ProbeLimits): { name: string; ok: boolean; saw: unknown }[] {
  const bytes = String(want.memoryMb * 1024 * 1024);
  const l = r.limits;
  return [
    { name: 'memory limit in the cgroup', ok: l.memory === bytes, saw: l.memory },
    { name: 'no swap beyond memory', ok: l.memsw !== null ? l.memsw === bytes : l.swapMax === '0', saw: l.memsw ?? `swap.max ${l.swapMax}` },
    { name: 'pids limit in the cgroup', ok: l.pids === String(want.pids), saw: l.pids },
    { name: 'cpu quota in the cgroup', ok: cpusOf(l.cpu) !== null && Math.abs(cpusOf(l.cpu)! - want.cpu) < 0.01, saw: l.cpu },
    ...(want.diskMb !== undefined
      ? [
          {
            name: 'workspace capped at its disk',
            ok: r.workspace.fstype === 'ext4' && r.workspace.bytes > 0 && r.workspace.bytes <= want.diskMb * 1024 * 1024,
            saw: `${r.workspace.fstype} ${(r.workspace.bytes / 1024 / 1024).toFixed(1)} MiB of ${want.diskMb} MiB`,
          },
          { name: 'workspace nosuid,nodev', ok: ['nosuid', 'nodev'].every((o) => r.workspace.options.split(',').includes(o)), saw: r.workspace.options },
        ]
      : []),
  ];
}

/** Parses the probe's stdout (the last JSON line). */
export function parseProbe(stdout: string): ProbeReport | undefined {
  const line = stdout.trim().split('\n').pop() ?? '';
  try {
    const parsed = ProbeReportSchema.safeParse(JSON.parse(line));
    return parsed.success ? parsed.data : undefined;
  } catch {
    return undefined;
  }
}

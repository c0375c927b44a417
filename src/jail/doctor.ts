/**
 * `brig doctor`: can this host give brig the jail it promises (INV-2)?
 * Facts are gathered from the engine and from a probe run inside a real hardened jail;
 * judging them is a pure function. A host that fails any check is one where brig refuses to
 * run children rather than run them weaker.
 */
import crypto from 'node:crypto';
import net from 'node:net';
import type { DoctorCheck, HelperFacts, ToolFacts } from '../protocol/index.js';
import { toBrigError } from '../util/errors.js';
import type { DockerJailDriver } from './docker/docker-jail-driver.js';
import { SECCOMP_JSON, SECCOMP_REMOVED, SECCOMP_RULES_REMOVED } from './docker/seccomp.js';
import { WorkspaceDisks } from './docker/workspace-disk.js';
import { judgeProbe, parseProbe, probeArgv, type ProbeCheck, type ProbeLimits } from './probe.js';

/** The probe jail's limits; the probe must find each one in its own cgroup. */
const PROBE_LIMITS: ProbeLimits = Object.freeze({ memoryMb: 128, pids: 64, cpu: 1 });
const PROBE_DISK_MB = 32;

export interface DoctorFacts {
  engine: { ok: true; version: string; apiVersion: string; info: Record<string, unknown> } | { ok: false; error: string };
  image: { tag: string; present: boolean; runtimeIncluded: boolean; built: boolean } | { error: string } | undefined;
  /** The toolbox image (optional: its absence fails nothing, the line says how to build it). */
  toolbox?: { tag: string; present: boolean } | { error: string };
  probe: { checks: ProbeCheck[] } | { error: string; code: string } | undefined;
  /** The /workspace quota the driver applies, and why this host cannot (null: it can). */
  quota?: { mode: 'loop' | 'none'; unavailable: string | null };
  /** One DuckDB helper as the kernel shows it (filled by the composition root), or why not. */
  helper?: HelperFacts | { error: string };
  /** grep as the slicer runs it, reading its own /proc/self (slice/helper-report.ts), or why not. */
  tools?: ToolFacts | { error: string };
  /** The file system of brig's home (filled by the operator) and the reserve brig keeps free in it. */
  home?: HomeFacts;
}

export type HomeFacts = { dir: string; reserveBytes: number } & ({ freeBytes: number; totalBytes: number } | { error: string });


const SECCOMP_SHA = crypto.createHash('sha256').update(SECCOMP_JSON).digest('hex').slice(0, 12);
const GIB = 1024 ** 3;

const check = (name: string, ok: boolean, detail: string, hint?: string): DoctorCheck => (ok || !hint ? { name, ok, detail } : { name, ok, detail, hint });

const MIB = 1024 ** 2;
const mb = (n: number) => `${(n / MIB).toFixed(1)} MiB`;

/** The home's free space against its reserve: below it, spawns are refused storage_full. */
function homeChecks(h: HomeFacts | undefined): DoctorCheck[] {
  if (!h) return [];
  const hint = `Free space on the file system of ${h.dir}: below ${mb(h.reserveBytes)} free brig refuses new runs (storage_full) and keeps what it cannot write in memory; the reserve is \`brig serve --min-free-mb\`.`;
  if ('error' in h) return [check('home free space', false, `cannot read the file system of ${h.dir}: ${h.error}`, hint)];
  return [check('home free space', h.freeBytes >= h.reserveBytes, `${mb(h.freeBytes)} free of ${mb(h.totalBytes)} in ${h.dir} (reserve ${mb(h.reserveBytes)})`, hint)];
}

/** Pure: the facts judged. */
export function judgeDoctor(f: DoctorFacts): DoctorCheck[] {
  if (!f.engine.ok) return [check('engine answers', false, f.engine.error, 'Start the Docker engine: `make engine`.'), ...homeChecks(f.home)];
  const info = f.engine.info;
  const secopts = Array.isArray(info.SecurityOptions) ? info.SecurityOptions.map(String) : [];
  const runtimes = Object.keys((info.Runtimes as Record<string, unknown> | undefined) ?? {});
  const out: DoctorCheck[] = [
    check('engine answers', true, `Docker ${f.engine.version}, API ${f.engine.apiVersion}`),
    check('runc runtime', runtimes.includes('runc'), runtimes.join(', ') || 'none', 'brig runs children under runc; install docker.io.'),
    check('seccomp available', secopts.some((s) => s.includes('name=seccomp')), secopts.join('; ') || 'none', 'Use an engine built with seccomp.'),
    check('rootless engine off', !secopts.some((s) => s.includes('name=rootless')), secopts.some((s) => s.includes('rootless')) ? 'rootless' : 'rootful', 'brig checks limits it can only enforce on a rootful engine.'),
    check('memory limits', info.MemoryLimit === true, String(info.MemoryLimit), 'Enable the memory cgroup.'),
    check('swap limits', info.SwapLimit === true, String(info.SwapLimit), 'Boot with swapaccount=1 so MemorySwap can be pinned.'),
    check('pids limits', info.PidsLimit === true, String(info.PidsLimit), 'Enable the pids cgroup.'),
    check('cpu quota', info.CpuCfsQuota === true, `cgroup v${String(info.CgroupVersion ?? '?')}`, 'Enable CFS quota in the cpu cgroup.'),
  ];
  const removed = Object.keys(SECCOMP_REMOVED);
  out.push(check('seccomp profile', true, `brig's own (sha256 ${SECCOMP_SHA}): the engine default minus ${removed.length} syscalls (${removed.slice(0, 3).join(', ')}, …) and ${Object.keys(SECCOMP_RULES_REMOVED).length} rules; read back from every jail at create`));
  if (f.quota) {
    const q = f.quota;
    if (q.mode === 'none') out.push(check('workspace disk quota', true, 'off (BRIG_WORKSPACE_QUOTA=none): /workspace is not capped'));
    else out.push(check('workspace disk quota', q.unavailable === null, q.unavailable ?? "a per-run ext4 image of the lease's diskMb on a loop device, nosuid,nodev", 'Run brig as root with e2fsprogs and util-linux (`make deps`), or opt out with BRIG_WORKSPACE_QUOTA=none.'));
  }
  if (f.helper && 'error' in f.helper) out.push(check('DuckDB helper', false, f.helper.error, helperHint(f.helper.error)));
  else if (f.helper) {
    const h = f.helper;
    out.push(check('DuckDB helper isolated', h.privilegeLeft === null, h.privilegeLeft ?? `uid ${h.uid}, CapEff ${h.capEff}, own namespaces`, 'Helpers run as root with capabilities here: run brig as root with util-linux (unshare, setpriv).'));
    out.push(check('DuckDB helper address-space cap', h.addressSpaceBytes !== null, h.addressSpaceBytes === null ? 'unlimited' : `RLIMIT_AS ${(h.addressSpaceBytes / GIB).toFixed(1)} GiB`, 'The helper has no memory cap: install prlimit (util-linux).'));
    out.push(check('DuckDB helper CPU cap', h.cpuSeconds !== null, h.cpuSeconds === null ? 'unlimited' : `RLIMIT_CPU ${h.cpuSeconds} s`, 'The helper has no CPU cap: install prlimit (util-linux).'));
  }
  if (f.tools && 'error' in f.tools) out.push(check('grep/jq', false, f.tools.error, 'Install grep and jq (`make deps`).'));
  else if (f.tools) {
    const t = f.tools;
    const detail = t.privilegeLeft === null ? `uid ${t.uid}, CapEff ${t.capEff}, only ${t.interfaces.join(', ') || 'no interface'}, read-only /, own namespaces` : `${t.privilegeLeft}${t.fallback ? ` (${t.fallback})` : ''}`;
    out.push(check('grep/jq isolated', t.privilegeLeft === null, detail, 'grep and jq run as the supervisor\'s user here: run brig as root with util-linux (unshare, setpriv, nsenter, mount).'));
    out.push(check('grep/jq address-space cap', t.addressSpaceBytes !== null, t.addressSpaceBytes === null ? 'unlimited' : `RLIMIT_AS ${(t.addressSpaceBytes / GIB).toFixed(1)} GiB`, 'grep and jq have no memory cap: install prlimit (util-linux).'));
  }
  out.push(...homeChecks(f.home));
  if (f.image === undefined) out.push(check('child image', false, 'not checked'));
  else if ('error' in f.image) out.push(check('child image', false, f.image.error, 'Build it: `brig image build`.'));
  else {
    out.push(check('child image', f.image.present, `${f.image.tag}${f.image.built ? ' (built now)' : ''}`, 'Build it: `brig image build` (or `brig doctor --build`).'));
    out.push(check('child runtime in image', f.image.runtimeIncluded, f.image.runtimeIncluded ? 'present' : 'dist/child missing', 'Run `make build`, then `brig image build`.'));
  }
  if (f.toolbox) {
    out.push('error' in f.toolbox
      ? check('toolbox image', true, `not checked: ${f.toolbox.error}`)
      : check('toolbox image', true, f.toolbox.present ? `present: ${f.toolbox.tag}` : `absent (optional): \`brig image toolbox\` builds ${f.toolbox.tag} from Debian's packages (minutes, once per machine)`));
  }
  if (f.probe === undefined) out.push(check('hardened jail', false, 'skipped: no child image', 'Build the image first.'));
  else if ('error' in f.probe) out.push(check('hardened jail', false, `${f.probe.code}: ${f.probe.error}`, 'The engine did not give the hardened profile; brig refuses to run here.'));
  else for (const c of f.probe.checks) out.push(check(`jail: ${c.name}`, c.ok, c.saw, 'The engine weakened the jail; brig refuses to run here.'));
  return out;
}

async function loopbackPort(): Promise<{ port: number; close(): void }> {
  const srv = net.createServer((s) => s.destroy());
  await new Promise<void>((r) => srv.listen(0, '127.0.0.1', r));
  return { port: (srv.address() as net.AddressInfo).port, close: () => srv.close() };
}

/** Gathers the facts: engine info, the image, and a probe from inside a real jail. */
export async function gatherDoctorFacts(driver: DockerJailDriver, opts: { build?: boolean } = {}): Promise<DoctorFacts> {
  let engine: DoctorFacts['engine'];
  try {
    const [v, info] = await Promise.all([driver.info(), driver.rawInfo()]);
    engine = { ok: true, version: v.version, apiVersion: v.apiVersion, info };
  } catch (e) {
    return { engine: { ok: false, error: toBrigError(e).message }, image: undefined, probe: undefined };
  }
  const quota = { mode: driver.workspaceQuota, unavailable: driver.workspaceQuota === 'loop' ? WorkspaceDisks.unavailable() : null };
  const toolbox = await driver.toolboxStatus().catch((e: unknown) => ({ error: toBrigError(e).message }));
  return { ...(await gatherJailFacts(driver, engine, opts)), quota, toolbox };
}

/** The image and the probe jail, once the engine answered. */
async function gatherJailFacts(driver: DockerJailDriver, engine: DoctorFacts['engine'], opts: { build?: boolean }): Promise<DoctorFacts> {
  let image: DoctorFacts['image'];
  try {
    const st = await driver.childImageStatus();
    let built = false;
    if (!st.present && opts.build) built = (await driver.buildChildImage()).built;
    image = { ...st, present: st.present || built, built };
  } catch (e) {
    image = { error: toBrigError(e).message };
  }
  if ('error' in image || !image.present) return { engine, image, probe: undefined };
  const srv = await loopbackPort();
  const runId = `doctor-${crypto.randomBytes(5).toString('hex')}`;
  let probe: DoctorFacts['probe'];
  try {
    const jail = await driver.create({
      runId,
      leaseId: runId,
      rootRunId: runId,
      argv: probeArgv(srv.port),
      env: { HOME: '/workspace' },
      limits: { ...PROBE_LIMITS, tmpfsMb: 8, diskMb: PROBE_DISK_MB },
      artifacts: [],
      image: image.tag,
    });
    try {
      await jail.start();
      await jail.wait();
      const report = parseProbe(jail.tails().stdoutTail);
      probe = report ? { checks: judgeProbe(report, driver.workspaceQuota === 'loop' ? { ...PROBE_LIMITS, diskMb: PROBE_DISK_MB } : PROBE_LIMITS) } : { code: 'jail_failed', error: `the probe printed no report: ${jail.tails().stderrTail.slice(-300)}` };
    } finally {
      await jail.destroy();
    }
  } catch (e) {
    const be = toBrigError(e);
    probe = { code: be.code, error: be.message };
  } finally {
    srv.close();
  }
  return { engine, image, probe };
}

/**
 * What to do about a DuckDB helper that did not start, from what its start said: the hint names
 * the cause it can see (a temp directory, a missing tool, the module, memory), else the general one.
 */
export function helperHint(error: string): string {
  if (/\b(EACCES|EPERM|EROFS|ENOSPC)\b[^\n]*(tmp|TMPDIR)|(tmp|TMPDIR)[^\n]*\b(EACCES|EPERM|EROFS|ENOSPC)\b/i.test(error)) {
    return 'brig makes its helpers\' directories under TMPDIR (or /tmp): it must be a writable directory of this user with space left — set TMPDIR to one.';
  }
  if (/\b(unshare|setpriv|prlimit)\b[^\n]*(ENOENT|not found)|(ENOENT|not found)[^\n]*\b(unshare|setpriv|prlimit)\b/i.test(error)) {
    return 'The helper is started through util-linux (unshare, setpriv, prlimit): install it (`make deps`).';
  }
  if (/@duckdb|Cannot find (module|package)|ERR_MODULE_NOT_FOUND|ERR_DLOPEN_FAILED/i.test(error)) {
    return 'The DuckDB module is missing or does not load on this platform: run `make deps` (npm ci) in brig\'s directory.';
  }
  if (/\b(ENOMEM|Cannot allocate memory|out of memory)\b/i.test(error)) {
    return 'The helper could not get memory (its address-space cap, or the host): free memory on the host, or give the slicer a larger memory cap (docs/slicing.md).';
  }
  return 'Run `make deps`; `brig doctor` must be able to start one helper (its error above says why it did not).';
}

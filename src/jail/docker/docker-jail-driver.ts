/**
 * The Docker implementation of `JailDriver`.
 *
 * Guarantees: create() hands out a jail only after the engine's own account of the container
 * (inspect) matches the hardened profile; on any drift the container and its volume are
 * removed and the run is refused with `jail_unverified` (INV-2). Every engine object carries
 * brig's labels; listLabelled() and sweep() see nothing else.
 * Threat: a weaker jail than the profile says, and engine objects leaking past their run.
 * Trusts: the engine socket given by config (the supervisor's own).
 * Fails: closed. Whatever create() acquired is released on its error path.
 * Engine outages: every call goes through this driver's own connection agent, so close()
 * ends whatever still waits on a frozen engine (the process can exit; a restart reattaches);
 * engineAnswers() is the bounded ping the supervisor asks before it waits on the engine.
 */
import crypto from 'node:crypto';
import events from 'node:events';
import fs from 'node:fs';
import http from 'node:http';
import path from 'node:path';
import util from 'node:util';
import { fileURLToPath } from 'node:url';
import type Docker from 'dockerode';
import LeanDocker from './dockerode.js';
import { BrigError } from '../../util/errors.js';
import { isPoolKey, type EngineInfo, type Jail, type JailDriver, type JailLimits, type JailSpec, type JailVerified, type LabelledResource } from '../types.js';
import { effectiveLimits } from './limits.js';
import { DockerJail, removeVolume } from './docker-jail.js';
import { reattachPooled } from './reaper.js';
import { engineError, ignoreStatus, statusOf } from './engine-errors.js';
import { CHILD_IMAGE_REPO, ensurePlanImage, fingerprint, planChildImage, type ImagePlan } from './image.js';
import { ImageCache } from './image-cache.js';
import { LABELS } from './labels.js';
import { TOOLBOX_NAME, ensureToolbox, toolboxPresent, toolboxTag } from './toolbox.js';
import { containerName, JAIL_USER, renderCreateBody, workspaceVolumeName, type CreateBody, type ForeignImage } from './profile.js';
import { engineArch, imageTerms, type ImageConfigView } from './image-contract.js';
import { ensureRuntimeBundle, planRuntimeBundle, runtimeRootFor, type RuntimeBundle } from './runtime-bundle.js';
import { verifyInspect, type InspectView } from './verify.js';
import { disksDirFor, WorkspaceDisks, type WorkspaceDisk, type WorkspaceQuota } from './workspace-disk.js';
import { ArtifactStages, stageDirFor } from './artifact-stage.js';
import { mark } from '../../util/timing.js';

export interface DockerJailDriverOptions {
  /** DOCKER_HOST as config gives it; undefined → /var/run/docker.sock. */
  dockerHost?: string | undefined;
  /** Compiled child runtime to bake into the image; default: this package's dist/child. */
  childRuntimeDir?: string | undefined;
  nodePath?: string;
  busyboxPath?: string;
  /** Labels every jail; listLabelled/sweep/attach see only this owner's. Use ownerForHome(BRIG_HOME). */
  owner?: string;
  /** Bytes of stdout and of stderr each jail keeps (default 16 KiB). */
  tailBytes?: number;
  /**
   * How /workspace is capped at the lease's diskMb: `loop` (default) gives each run its own
   * ext4 image on a loop device; `none` is the explicit opt-out (a plain volume, no cap).
   */
  workspaceQuota?: WorkspaceQuota;
  /** Where the disk images live; default /var/lib/brig/disks/<owner>. */
  disksDir?: string;
  /** Where artifacts are staged (root); default /var/lib/brig/stage/<owner>. */
  stageDir?: string;
  /**
   * Where the child image's plan and file hashes are remembered by file identity (image-cache.ts);
   * the composition root gives one in the home. Default: this process only.
   */
  imageCacheFile?: string;
  /** Where brig's runtime for foreign images is made (runtime-bundle.ts); default /var/lib/brig/runtime as root. */
  runtimeRoot?: string;
  /** The tag `image: toolbox` resolves to; default the current recipe's (toolbox.ts). A test names an absent one. */
  toolboxTag?: string;
}

/** The owner label for a brig home: one supervisor's jails are never swept by another's. */
export function ownerForHome(home: string): string {
  return `h-${crypto.createHash('sha256').update(path.resolve(home)).digest('hex').slice(0, 12)}`;
}

/** This package's root, whether running from src/ (tsx) or dist/. */
function packageRoot(): string {
  return path.resolve(path.dirname(fileURLToPath(import.meta.url)), '..', '..', '..');
}

const MIB = 1024 * 1024;
const mb = (x: number | null) => (x === null ? null : Math.round((x / MIB) * 100) / 100);

/** The verified jail as the engine reported it (verify passed on this same inspect). */
export function verifiedSummary(inspect: InspectView & { Id?: string }, disk: { driver: string; type: string; options: string; diskMb: number } | null, foreign?: ForeignImage & { runtimeHash: string }): JailVerified {
  const h = (inspect.HostConfig ?? {}) as Record<string, unknown>;
  const sec = Array.isArray(h.SecurityOpt) ? (h.SecurityOpt as string[]) : [];
  const seccomp = sec.find((o) => o.startsWith('seccomp='));
  const e = effectiveLimits(h);
  return {
    containerId: (inspect.Id ?? '').slice(0, 12),
    image: inspect.Config?.Image ?? '',
    user: inspect.Config?.User ?? '',
    network: String(h.NetworkMode ?? ''),
    readOnlyRoot: h.ReadonlyRootfs === true,
    capDrop: Array.isArray(h.CapDrop) ? (h.CapDrop as string[]) : [],
    noNewPrivileges: sec.includes('no-new-privileges') || sec.includes('no-new-privileges:true'),
    seccompSha: seccomp ? crypto.createHash('sha256').update(seccomp.slice('seccomp='.length)).digest('hex').slice(0, 12) : null,
    ipc: String(h.IpcMode ?? ''),
    limits: {
      cpu: e.cfsQuotaUs === null ? null : e.cfsQuotaUs / 100_000,
      memoryMb: mb(e.memoryBytes),
      memorySwapMb: mb(e.memorySwapBytes),
      pids: e.pids,
      tmpfsMb: mb(e.tmpfsBytes),
      diskMb: disk?.diskMb ?? null,
    },
    workspace: disk ? { driver: disk.driver, type: disk.type, options: disk.options } : { driver: 'local', type: null, options: null },
    binds: (inspect.Mounts ?? []).filter((m) => m.Type === 'bind').map((m) => ({ target: m.Destination ?? '', readOnly: m.RW === false })),
    verifiedAt: new Date().toISOString(),
    ...(foreign ? { foreignImage: { overridden: [...foreign.terms.overridden], envKept: Object.keys(foreign.terms.env).sort(), runtime: foreign.runtimeHash } } : {}),
  };
}

/** An engine client for DOCKER_HOST; `agent` (default Node's global one) carries its connections. */
export function dockerFromHost(dockerHost: string | undefined, agent?: http.Agent): Docker {
  const a = agent ? { agent } : {};
  if (dockerHost === undefined) return new LeanDocker({ socketPath: '/var/run/docker.sock', ...a });
  if (dockerHost.startsWith('unix://')) return new LeanDocker({ socketPath: dockerHost.slice('unix://'.length), ...a });
  const u = new URL(dockerHost.replace(/^tcp:/, 'http:'));
  return new LeanDocker({ host: u.hostname, port: Number(u.port || 2375), protocol: 'http', ...a });
}

/**
 * The engine's connection agent. docker-modem formats every request's options — this agent
 * among them — with `util.inspect(…, { showHidden: true, depth: null })` before it asks
 * whether debug output is on, so each call walked every socket the agent keeps, their handles
 * and parsers: at 20 live jails that was 21 s of the main thread's 34 s in one 28-s round
 * (bench/api-stall.bench.ts, issue 29 item 7). It prints as its name instead.
 */
export class EngineAgent extends http.Agent {
  [util.inspect.custom](): string {
    return 'EngineAgent';
  }
}

const hasRuntime = (plan: ImagePlan) => plan.entries.some((e) => e.dest.startsWith('opt/brig/child/'));

export class DockerJailDriver implements JailDriver {
  readonly docker: Docker;
  readonly owner: string;
  private readonly tailBytes: number | undefined;
  readonly workspaceQuota: WorkspaceQuota;
  readonly disks: WorkspaceDisks;
  readonly stages: ArtifactStages;
  private readonly imageCache: ImageCache;
  private readonly opts: Required<Omit<DockerJailDriverOptions, 'dockerHost' | 'childRuntimeDir' | 'owner' | 'tailBytes' | 'workspaceQuota' | 'disksDir' | 'stageDir' | 'imageCacheFile' | 'toolboxTag'>> & { toolboxTag: string | undefined } & { childRuntimeDir: string };
  private image: Promise<string> | undefined;
  private runtime: Promise<RuntimeBundle> | undefined;
  /** This driver's connections to the engine (as Node's global agent keeps them): close() ends them all. */
  private readonly agent = new EngineAgent({ keepAlive: true, scheduling: 'lifo', timeout: 5000 });
  /** Aborted by close(): every jail's exit watch stops. */
  private readonly closing = new AbortController();

  constructor(opts: DockerJailDriverOptions = {}) {
    // Every live jail's exit watch listens on it: 20 jails are not a leak.
    events.setMaxListeners(0, this.closing.signal);
    this.docker = dockerFromHost(opts.dockerHost, this.agent);
    this.owner = opts.owner ?? 'default';
    this.tailBytes = opts.tailBytes;
    this.workspaceQuota = opts.workspaceQuota ?? 'loop';
    this.disks = new WorkspaceDisks(opts.disksDir ?? disksDirFor(this.owner));
    this.stages = new ArtifactStages(opts.stageDir ?? stageDirFor(this.owner));
    this.imageCache = new ImageCache(opts.imageCacheFile);
    this.opts = {
      childRuntimeDir: opts.childRuntimeDir ?? path.join(packageRoot(), 'dist', 'child'),
      nodePath: opts.nodePath ?? fs.realpathSync(process.execPath),
      busyboxPath: opts.busyboxPath ?? '/bin/busybox',
      runtimeRoot: opts.runtimeRoot ?? runtimeRootFor(),
      toolboxTag: opts.toolboxTag,
    };
  }

  async info(): Promise<EngineInfo> {
    try {
      const [v, i] = await Promise.all([this.docker.version(), this.docker.info() as Promise<{ Runtimes?: Record<string, unknown> }>]);
      return { version: v.Version, apiVersion: v.ApiVersion, os: v.Os, runtimes: Object.keys(i.Runtimes ?? {}).sort() };
    } catch (e) {
      throw engineError(e, 'engine_unavailable', 'the Docker engine did not answer');
    }
  }

  /** Whether the engine answers a ping within timeoutMs (false: refused, cut, or frozen). */
  async engineAnswers(timeoutMs: number): Promise<boolean> {
    // dockerode's ping takes an abortSignal; its types do not say so.
    const ping = this.docker.ping.bind(this.docker) as unknown as (o: { abortSignal: AbortSignal }) => Promise<unknown>;
    return ping({ abortSignal: AbortSignal.timeout(timeoutMs) }).then(
      () => true,
      () => false,
    );
  }

  /**
   * Stops every exit watch and ends every connection still open to the engine (a call waiting
   * on a frozen engine fails `engine_unavailable`): what a stopping supervisor leaves running
   * is reattached by the next start.
   */
  async close(): Promise<void> {
    this.closing.abort();
    this.agent.destroy();
  }

  /** The engine's raw info (security options, cgroup version), for `brig doctor`. */
  async rawInfo(): Promise<Record<string, unknown>> {
    return (await this.docker.info().catch((e: unknown) => {
      throw engineError(e, 'engine_unavailable', 'the Docker engine did not answer');
    })) as Record<string, unknown>;
  }

  async childPlan(): Promise<ImagePlan> {
    if (!fs.existsSync(this.opts.busyboxPath)) {
      throw new BrigError('image_build_failed', `no static busybox at ${this.opts.busyboxPath}`, { hint: 'Install it: `make deps` (Debian busybox-static).' });
    }
    const childRuntimeDir = fs.existsSync(this.opts.childRuntimeDir) ? this.opts.childRuntimeDir : undefined;
    return planChildImage({ nodePath: this.opts.nodePath, busyboxPath: this.opts.busyboxPath, childRuntimeDir }, this.imageCache);
  }

  /** The tag the current plan would have, and whether the engine holds it. */
  async childImageStatus(): Promise<{ tag: string; present: boolean; runtimeIncluded: boolean }> {
    const plan = await this.childPlan();
    const tag = `${CHILD_IMAGE_REPO}:${await fingerprint(plan, this.imageCache)}`;
    await this.imageCache.save();
    const present = await this.docker.getImage(tag).inspect().then(
      () => true,
      (e: unknown) => {
        if (statusOf(e) === 404) return false;
        throw engineError(e, 'engine_unavailable', 'the Docker engine did not answer');
      },
    );
    return { tag, present, runtimeIncluded: hasRuntime(plan) };
  }

  async buildChildImage(opts: { force?: boolean; onProgress?: (line: string) => void } = {}): Promise<{ tag: string; built: boolean; runtimeIncluded: boolean }> {
    const plan = await this.childPlan();
    const res = await ensurePlanImage(this.docker, plan, CHILD_IMAGE_REPO, { ...opts, cache: this.imageCache, signal: this.closing.signal }).catch((e: unknown) => {
      throw engineError(e, 'image_build_failed', 'building the child image failed');
    });
    await this.imageCache.save();
    this.image = Promise.resolve(res.tag);
    return { ...res, runtimeIncluded: hasRuntime(plan) };
  }

  /** The toolbox image (toolbox.ts): its tag for the current recipe, and whether the engine holds it. */
  async toolboxStatus(): Promise<{ tag: string; present: boolean }> {
    const tag = toolboxTag();
    const present = await toolboxPresent(this.docker, tag).catch((e: unknown) => {
      throw engineError(e, 'engine_unavailable', 'the Docker engine did not answer');
    });
    return { tag, present };
  }

  /** Builds the toolbox image unless its recipe's tag is present (minutes: see docs/jail.md). */
  async buildToolbox(opts: { force?: boolean; onProgress?: (line: string) => void } = {}): Promise<{ tag: string; built: boolean }> {
    return ensureToolbox(this.docker, opts);
  }

  /** Removes child images other than `keep`; an image a container still uses is left alone. */
  async pruneChildImages(keep: string): Promise<string[]> {
    // By repository, not label: child images built before a label rename are pruned too.
    const imgs = await this.docker.listImages({ filters: { reference: [CHILD_IMAGE_REPO] } });
    const removed: string[] = [];
    for (const img of imgs) {
      const tags = (img.RepoTags ?? []).filter((t) => t.startsWith(`${CHILD_IMAGE_REPO}:`));
      if (tags.includes(keep)) continue;
      for (const t of tags) {
        await this.docker.getImage(t).remove().then(() => removed.push(t), ignoreStatus(404, 409));
      }
    }
    return removed;
  }

  ensureImage(onProgress?: (line: string) => void): Promise<string> {
    this.image ??= this.buildChildImage(onProgress ? { onProgress } : {}).then((r) => r.tag);
    this.image.catch(() => (this.image = undefined));
    return this.image;
  }

  /** brig's runtime for foreign images, made once per content (runtime-bundle.ts). */
  runtimeBundle(): Promise<RuntimeBundle> {
    this.runtime ??= (async () => {
      const childRuntimeDir = fs.existsSync(this.opts.childRuntimeDir) ? this.opts.childRuntimeDir : undefined;
      const plan = await planRuntimeBundle({ nodePath: this.opts.nodePath, busyboxPath: this.opts.busyboxPath, childRuntimeDir }, this.imageCache);
      const bundle = await ensureRuntimeBundle(this.opts.runtimeRoot, plan, this.imageCache);
      await this.imageCache.save();
      return bundle;
    })();
    this.runtime.catch(() => (this.runtime = undefined));
    return this.runtime;
  }

  /**
   * What a jail of `image` needs beyond the profile: nothing for brig's child image; for any
   * other, the image contract's terms (or its refusal, `image_refused`) and the runtime bind.
   */
  async imageTermsFor(image: string, spec: Pick<JailSpec, 'env'>): Promise<(ForeignImage & { runtimeHash: string }) | undefined> {
    if (image === (await this.ensureImage())) return undefined;
    const view = (await this.docker.getImage(image).inspect().catch((e: unknown) => {
      if (statusOf(e) === 404) throw new BrigError('image_missing', `the image ${image} is not in the engine`, { cause: e, hint: 'Build or load it locally (`docker images` lists what the engine holds); brig pulls nothing.' });
      throw engineError(e, 'engine_unavailable', 'inspecting the image failed');
    })) as ImageConfigView;
    const terms = imageTerms(image, view, { brigEnv: spec.env, hostArch: engineArch() });
    if (!terms.ok) throw terms.error;
    const bundle = await this.runtimeBundle();
    return { terms: terms.value, runtimeDir: bundle.dir, runtimeHash: bundle.hash };
  }

  /**
   * The image a spec runs in: its own tag, brig's child image when it names none, the current
   * toolbox tag for `toolbox` — or, when that is not built and an agent spec asked for it
   * (`imageFallback`), brig's child image with a note saying so; otherwise `image_missing`.
   */
  async #imageOf(given: JailSpec): Promise<{ image: string; fallback?: { asked: string; note: string } }> {
    if (given.image !== TOOLBOX_NAME) return { image: given.image ?? (await this.ensureImage()) };
    const tag = this.opts.toolboxTag ?? toolboxTag();
    if (await toolboxPresent(this.docker, tag)) return { image: tag };
    if (!given.imageFallback) throw new BrigError('image_missing', `the toolbox image ${tag} is not built`, { hint: 'Build it once: `brig image toolbox` (about a minute from Debian\'s packages; docs/jail.md).' });
    return { image: await this.ensureImage(), fallback: { asked: TOOLBOX_NAME, note: `the toolbox image (${tag}) is not built, so this agent ran in brig's child image (busybox and node only); \`brig image toolbox\` builds it` } };
  }

  /** The tag a spec runs in, as create resolves it; null when create would fall back or refuse (the cold path says so). */
  async imageTagFor(given: Pick<JailSpec, 'image' | 'imageFallback'>): Promise<string | null> {
    const r = await this.#imageOf(given as JailSpec).catch(() => null);
    return r && !r.fallback ? r.image : null;
  }

  async create(given: JailSpec): Promise<Jail> {
    const { image, fallback } = await this.#imageOf(given);
    const foreign = await this.imageTermsFor(image, given);
    // Refused before anything is made or staged: a spec the profile would not render.
    const checked = renderCreateBody(given, image, this.owner, foreign);
    if (!checked.ok) throw checked.error;
    // The artifacts bound are exactly the objects the spawn checked (artifact-stage.ts).
    const artifacts = await this.stages.stage(given.runId, given.artifacts);
    try {
      const jail = await this.#create({ ...given, artifacts }, image, foreign);
      if (fallback && jail.verified) Object.assign(jail.verified, { imageFallback: fallback });
      return jail;
    } catch (e) {
      await this.stages.release(given.runId).catch(() => undefined);
      throw e;
    }
  }

  async #create(spec: JailSpec, image: string, foreign?: ForeignImage & { runtimeHash: string }): Promise<Jail> {
    const rendered = renderCreateBody(spec, image, this.owner, foreign);
    if (!rendered.ok) throw rendered.error;
    const body = rendered.value;
    if (spec.brokerDir !== undefined && !(await fs.promises.stat(spec.brokerDir).catch(() => undefined))?.isDirectory()) {
      throw new BrigError('invalid_input', 'the broker directory does not exist', { data: { runId: spec.runId } });
    }
    const volumeName = workspaceVolumeName(spec.runId);
    // The engine's volume create returns an existing volume of that name: refuse, so a
    // workspace is always fresh and never another run's leftovers.
    const existing = await this.docker.getVolume(volumeName).inspect().then(
      () => true,
      (e: unknown) => {
        if (statusOf(e) === 404) return false;
        throw engineError(e, 'jail_failed', 'inspecting the workspace volume failed');
      },
    );
    if (existing) throw new BrigError('jail_failed', `a workspace volume for run ${spec.runId} already exists`, { data: { runId: spec.runId } });
    const disk = await this.#makeDisk(spec);
    mark('jail: workspace disk made');
    let container: Docker.Container | undefined;
    try {
      await this.docker.createVolume({ Name: volumeName, Labels: body.Labels, ...(disk ? { Driver: 'local', DriverOpts: { ...disk.volumeOptions } } : {}) }).catch((e: unknown) => {
        throw engineError(e, 'jail_failed', 'creating the workspace volume failed');
      });
      if (disk) await this.#verifyDisk(volumeName, disk);
      container = await this.docker.createContainer({ name: containerName(spec.runId), ...(body as unknown as Docker.ContainerCreateOptions) }).catch((e: unknown) => {
        if (statusOf(e) === 404) throw new BrigError('image_missing', `the image ${image} is not in the engine`, { cause: e });
        throw engineError(e, 'jail_failed', 'creating the jail failed');
      });
      mark('jail: container created');
      const jail = new DockerJail(this.docker, container, spec.runId, volumeName, this.tailBytes, this.disks, this.stages, this.closing.signal);
      const inspect = await this.verify(container, body, spec.limits);
      jail.verified = verifiedSummary(inspect, disk ? { driver: 'local', type: disk.volumeOptions.type, options: disk.volumeOptions.o, diskMb: spec.limits.diskMb } : null, foreign);
      mark('jail: verified');
      // A workspace disk was made holding out/ and the inputs (workspace-disk.ts): only a plain volume needs them put.
      if (!disk) await jail.putInputs(spec.inputs ?? []);
      if (spec.repoDir !== undefined) await jail.putRepo(spec.repoDir);
      return jail;
    } catch (e) {
      const undo = () => this.#removeCreated(spec.runId, volumeName, disk !== null);
      // An engine away now may have made the container anyway (the answer was what got cut):
      // the undo is tried again, by name, while the driver lives; the next start's sweep after.
      await undo().catch(() => this.#undoLater(undo));
      // A step above without its own mapping (the verify's inspects) still says what it was:
      // an engine that went away is engine_unavailable, never a bare `internal`.
      throw engineError(e, 'jail_failed', 'creating the jail failed');
    }
  }

  /** What a failed create made, by name: the container (v: an image VOLUME would leave an anonymous volume), the volume, the disk. */
  async #removeCreated(runId: string, volumeName: string, disk: boolean): Promise<void> {
    await this.docker.getContainer(containerName(runId)).remove({ force: true, v: true }).catch(ignoreStatus(404));
    await removeVolume(this.docker, volumeName);
    if (disk) await this.disks.release(runId);
  }

  /** Tries undo again (0.5 s, doubling to 5 s) until it succeeds or the driver closes. */
  #undoLater(undo: () => Promise<void>): void {
    const signal = this.closing.signal;
    void (async () => {
      for (let wait = 500; !signal.aborted; wait = Math.min(5000, wait * 2)) {
        await new Promise((r) => setTimeout(r, wait).unref());
        if (signal.aborted || (await undo().then(() => true, () => false))) return;
      }
    })();
  }

  /** The run's capped disk, or null under the explicit opt-out; refuses when the host cannot cap. */
  async #makeDisk(spec: JailSpec): Promise<WorkspaceDisk | null> {
    if (this.workspaceQuota === 'none') return null;
    const why = WorkspaceDisks.unavailable();
    if (why) {
      throw new BrigError('jail_failed', `the workspace disk quota cannot be applied: ${why}`, {
        hint: 'Run brig as root with e2fsprogs and util-linux (`make deps`), or set BRIG_WORKSPACE_QUOTA=none to run without a disk quota.',
      });
    }
    const [uid, gid] = JAIL_USER.split(':').map(Number);
    return this.disks.create(spec.runId, spec.limits.diskMb, { uid: uid!, gid: gid! }, spec.inputs ?? []);
  }

  /** The engine's own account of the volume: the run's device, ext4, nosuid,nodev; the image exactly diskMb. */
  async #verifyDisk(volumeName: string, disk: WorkspaceDisk): Promise<void> {
    const v = (await this.docker.getVolume(volumeName).inspect()) as { Driver?: string; Options?: Record<string, string> | null };
    const size = (await fs.promises.stat(disk.image)).size;
    const o = v.Options ?? {};
    const drift = [
      v.Driver === 'local' ? null : 'workspace.driver',
      o.type === disk.volumeOptions.type ? null : 'workspace.type',
      o.device === disk.device ? null : 'workspace.device',
      o.o === disk.volumeOptions.o ? null : 'workspace.options',
      size === disk.bytes ? null : 'workspace.size',
    ].filter((x): x is string => x !== null);
    if (drift.length > 0) {
      throw new BrigError('jail_unverified', `the engine did not apply the workspace disk (${drift.join(', ')})`, { data: { drift } });
    }
  }

  private async verify(container: Docker.Container, body: CreateBody, intent: JailLimits): Promise<InspectView & { Id?: string }> {
    const inspect = (await container.inspect()) as unknown as InspectView & { Id?: string };
    const drift = verifyInspect(inspect, body, intent);
    if (drift.length > 0) {
      throw new BrigError('jail_unverified', `the engine did not apply the hardened profile (${drift.map((d) => d.field).join(', ')})`, {
        data: { drift: drift.map((d) => d.field) },
      });
    }
    return inspect;
  }

  async attach(runId: string): Promise<Jail | null> {
    const found = await this.docker
      .listContainers({ all: true, filters: { label: [`${LABELS.managed}=1`, `${LABELS.owner}=${this.owner}`, `${LABELS.runId}=${runId}`] } })
      .catch((e: unknown) => {
        throw engineError(e, 'engine_unavailable', 'listing jails failed');
      });
    // A container that exited while no supervisor watched is attached too: its workspace
    // still holds what the child wrote, and wait() answers at once with its exit code.
    const c = found.find((x) => x.State === 'running') ?? found.find((x) => x.State === 'exited');
    if (!c) return null;
    const jail = new DockerJail(this.docker, this.docker.getContainer(c.Id), runId, workspaceVolumeName(runId), this.tailBytes, this.disks, this.stages, this.closing.signal);
    if (c.State === 'running') await jail.attachStreams();
    // A pool slot's run: its reaper says its end (it outlives its child, so the engine would not).
    return c.State === 'running' && isPoolKey(runId) ? reattachPooled(jail) : jail;
  }

  async listLabelled(): Promise<LabelledResource[]> {
    const filters = { label: [`${LABELS.managed}=1`, `${LABELS.owner}=${this.owner}`, LABELS.runId] };
    try {
      const [cs, vs] = await Promise.all([this.docker.listContainers({ all: true, filters }), this.docker.listVolumes({ filters })]);
      const out: LabelledResource[] = cs.map((c) => ({
        kind: 'container' as const,
        id: c.Id,
        runId: c.Labels[LABELS.runId] ?? '',
        rootRunId: c.Labels[LABELS.rootRunId] ?? '',
        running: c.State === 'running',
      }));
      for (const v of vs.Volumes ?? []) {
        const labels = v.Labels ?? {};
        out.push({ kind: 'volume', id: v.Name, runId: labels[LABELS.runId] ?? '', rootRunId: labels[LABELS.rootRunId] ?? '', running: false });
      }
      for (const runId of await this.disks.runIds()) out.push({ kind: 'disk', id: this.disks.imagePath(runId), runId, rootRunId: '', running: false });
      for (const runId of await this.stages.runIds()) out.push({ kind: 'stage', id: `${this.stages.dir}/${runId}`, runId, rootRunId: '', running: false });
      return out;
    } catch (e) {
      throw engineError(e, 'engine_unavailable', 'listing jails failed');
    }
  }

  async sweep(isLive: (runId: string) => boolean): Promise<{ containers: number; volumes: number; disks: number }> {
    const all = await this.listLabelled();
    let containers = 0;
    let volumes = 0;
    for (const r of all.filter((r) => r.kind === 'container' && !isLive(r.runId))) {
      await this.docker.getContainer(r.id).remove({ force: true, v: true }).catch(ignoreStatus(404, 409));
      containers++;
    }
    for (const r of all.filter((r) => r.kind === 'volume' && !isLive(r.runId))) {
      await removeVolume(this.docker, r.id);
      volumes++;
    }
    // After the volumes: a disk's loop device is free once nothing mounts it.
    const disks = await this.disks.sweep(isLive);
    await this.stages.sweep(isLive);
    return { containers, volumes, disks };
  }
}

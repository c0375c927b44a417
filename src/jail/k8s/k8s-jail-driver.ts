/**
 * The Kubernetes implementation of `JailDriver` (issue 33): one bare pod per child, made from
 * the same JailSpec as a Docker jail, created behind brig's scheduling gate, verified against
 * what was asked, and started by lifting the gate. `runs/` does not change.
 *
 * The pod (pod-spec.ts): `child` runs the program under a tiny PID 1 (out/ made, the inputs
 * unpacked by an exec and the broker's socket awaited before the program starts) that forwards SIGTERM and exits with the program's status; `relay`
 * sleeps with /workspace read-only and outlives the program, so the outputs are read through it
 * (a `tar` exec'd in it, pod-tar.js to pass over a file above the cap, streamed into brig's collector with the same caps and checks as on
 * Docker — never `kubectl cp`). Signals are exec'd into the child's container (`kill -TERM 1`,
 * `kill -KILL -1`); the end is the kubelet's account of the child's container (terminated: its
 * PID namespace is gone, every process of the child with it).
 *
 * Guarantees: no container of a pod starts before its read-back verified (pod-launch.ts); the
 * exit code is the kubelet's, not a report from inside; a pod that cannot run (image not on the
 * node, a container that cannot be made, inputs that did not unpack) ends wait() with the
 * kubelet's reason instead of hanging; every pod carries brig's owner label and list/sweep/attach
 * see only those; destroy() deletes the pod (its emptyDirs go with it) and is idempotent.
 * Threat: a hostile child (it may write anything into out/, ignore SIGTERM, fork); an admission
 * chain that changes the pod (verify). Trusts: the API server and the kubelet's status.
 * A run with a broker gets it relayed: pod-relay.js exec'd in the relay container makes
 * /run/brig/broker.sock (read-only to the child), its connections framed over the exec's stdio
 * to the run's host socket (host-relay.ts; the pod side is untrusted).
 * The workspace is a generic ephemeral volume of the lease's size from the operator's
 * StorageClass (ENOSPC past it where the class sizes its volumes exactly, as brig-loop on the
 * test cluster does), or an emptyDir the operator allowed (past its sizeLimit the kubelet evicts).
 * Egress (a lease with egress rules) takes the same relay: the pod's egress.sock to the run's
 * host egress.sock, where the gate decides; an inspecting gate's CA is put into /run/brig first.
 * A repository's clean clone goes in as a tar by exec before the inputs (the program starts after
 * both), and /workspace/repo is collected at the end like out/ (run-repo.ts makes the patch).
 * Not yet (docs/kubernetes.md): artifacts (refused).
 */
import fs from 'node:fs';
import path from 'node:path';
import { PassThrough, Readable } from 'node:stream';
import { EGRESS_JAIL } from '../../protocol/index.js';
import { BrigError } from '../../util/errors.js';
import type { CollectCaps, CollectOptions, CollectReport, EngineInfo, Jail, JailDriver, JailExit, JailLimits, JailSpec, JailVerified, LabelledResource, StreamTails } from '../types.js';
import { collectArchive, type ArchiveSource } from '../docker/collect.js';
import { emptyCollect, inputsArchive, workspaceRelative } from '../docker/docker-jail.js';
import { repoArchive } from '../docker/repo-copy.js';
import { execInPod, execText, type ExecSession } from './kube-exec.js';
import { hostRelay } from './host-relay.js';
import { KubeApi, readKubeconfig } from './kube-api.js';
import { PodWatch } from './pod-watch.js';
import { createVerified, liftGate, podEnd, podStuck, podUnschedulable, type LaunchedPod } from './pod-launch.js';
import { BROKER_SOCKET, CONTAINER, DENY_POLICY, foreignPolicies, LABEL_OWNER, LABEL_POOL, type K8sWorkspace, type PodManifest, deniesAll, denyPolicy, LABEL_ROOT, LABEL_RUN, RELAY, UNPACK_ARGV, labelValue, podName, quantity, renderPod } from './pod-spec.js';

export interface K8sJailDriverOptions {
  /** The admin's or brig's own kubeconfig (its current context's server and credentials). */
  kubeconfig: string;
  /** The namespace brig owns (PodSecurity `restricted`, brig's RBAC). */
  namespace: string;
  /** The child image as the cluster's nodes hold it (`imagePullPolicy: Never`). */
  image: string;
  /** Labels every pod; list/sweep/attach see only this owner's (ownerForHome). */
  owner: string;
  /** An operator's RuntimeClass (gVisor, Kata), or none. */
  runtimeClassName?: string;
  /**
   * false: other NetworkPolicies in the namespace do not stop a pod (the doctor's own driver,
   * which reports them as a failing line and still probes). Default: refused, checked at most
   * every 30 s.
   */
  foreignPolicyCheck?: boolean;
  /** Where `/workspace` lives: a StorageClass's volume of the lease's size (ENOSPC past it), or an emptyDir the operator allowed. */
  workspace: K8sWorkspace;
  /** The kubelet's backstop behind brig's own timeouts (default 6 h). */
  activeDeadlineSeconds?: number;
  /** Bytes of the child's log kept as its tail (default 16 KiB). */
  tailBytes?: number;
  /** How often a running pod's status is read when the watch is not synced (default 200 ms). */
  pollMs?: number;
  /** false: poll each pod instead of one watch over them all (item 7; default: the watch). */
  watch?: boolean;
  /** How long a pod the scheduler cannot place may wait before its run fails (default 60 s). */
  unschedulableMs?: number;
  /**
   * The supervisor's socket directories (a run's is `<brokersDir>/<runId>`): a reattached run's
   * broker relay connects there. Default: the spec's brokerDir only (no relay after a restart).
   */
  brokersDir?: string;
}

type Obj = Record<string, unknown>;
const obj = (v: unknown): Obj => (v && typeof v === 'object' && !Array.isArray(v) ? (v as Obj) : {});

const DEFAULT_DEADLINE_S = 6 * 3600;

interface JailTimings {
  tailBytes: number;
  pollMs: number;
  unschedulableMs: number;
  /** The driver's one watch over its pods (started on first use); absent: polling. */
  watch?: () => PodWatch;
}

/** While the watch is synced a waiting pod is still read itself this often (a stalled watch delays nothing longer). */
const WATCH_FALLBACK_MS = 2_000;

/** Unpacks a repository's tar into /workspace (names start at repo/), before the inputs' exec starts the program. */
const REPO_ARGV = ['tar', '-x', '-o', '-f', '-', '-C', '/workspace'];

/**
 * The broker relay's program in the pod (src/child/pod-relay.ts as the image holds it), and the
 * sockets it makes, in this order: egress.sock first, so that once broker.sock exists — what the
 * child's PID 1 waits for — both do. A run without egress has no host egress.sock: a connection
 * to the pod's is refused at the host, as a missing socket is on Docker.
 */
const RELAY_SOCKETS = [EGRESS_JAIL.socket, BROKER_SOCKET];
export const RELAY_ARGV = ['/usr/bin/node', '/opt/brig/child/pod-relay.js', ...RELAY_SOCKETS];

/**
 * The host sockets RELAY_ARGV's listeners are connected to, by index: the same names in the
 * run's socket directory (what Docker mounts at /run/brig), the run's egress.sock and broker.sock.
 */
export function relayTargets(socketDir: string): string[] {
  return RELAY_SOCKETS.map((s) => path.join(socketDir, path.posix.basename(s)));
}

/** Writes stdin to the run CA bundle's place in the pod (EGRESS_JAIL.caBundle), whole or not at all. */
const PUT_CA_ARGV = ['sh', '-c', 'cat > "$1.part" && mv "$1.part" "$1"', 'put-ca', EGRESS_JAIL.caBundle];

/** The run CA bundle the egress gate wrote beside egress.sock for `tls: inspect` (its name in the pod's /run/brig), or null. */
export function readEgressCa(socketDir: string | undefined): Promise<Buffer | null> {
  return socketDir ? fs.promises.readFile(path.join(socketDir, path.posix.basename(EGRESS_JAIL.caBundle))).catch(() => null) : Promise.resolve(null);
}

/**
 * A run whose egress gate inspects TLS: its CA bundle put into the pod's /run/brig (the relay
 * container writes it; the child's mount is read-only), before the child's program can start.
 */
export async function putEgressCa(api: KubeApi, pod: string, ca: Buffer): Promise<void> {
  const r = await execText(api, pod, RELAY, PUT_CA_ARGV, { stdin: ca });
  if (r.exitCode !== 0) throw new BrigError('jail_failed', `putting the egress CA into the pod failed (exit ${r.exitCode}): ${r.stderr.trim().slice(-300)}`);
}
/** The outputs' reader in the relay container (src/child/pod-tar.ts): `DIR NAME [PASSED…]` follow. */
const POD_TAR_ARGV = ['/usr/bin/node', '--max-old-space-size=32', '/opt/brig/child/pod-tar.js'];
/** A relay exec that ended while its run goes on is made again after this long. */
const RELAY_RETRY_MS = 500;
const DEFAULT_TAIL_BYTES = 16 * 1024;
/** How long a look at the namespace's other NetworkPolicies stands before the next pod reads them again. */
const FOREIGN_POLICY_TTL_MS = 30_000;

export class K8sJailDriver implements JailDriver {
  readonly api: KubeApi;

  constructor(private readonly o: K8sJailDriverOptions) {
    this.api = new KubeApi(readKubeconfig(o.kubeconfig), o.namespace);
  }

  async info(): Promise<EngineInfo> {
    const v = await this.api.version();
    return { version: `kubernetes ${v.gitVersion}`, apiVersion: 'v1', os: v.platform, runtimes: this.o.runtimeClassName ? [this.o.runtimeClassName] : ['default'] };
  }

  /** The image must already be on the cluster's nodes (imported; brig pulls nothing): its name as configured. */
  async ensureImage(): Promise<string> {
    return this.o.image;
  }

  async engineAnswers(timeoutMs: number): Promise<boolean> {
    return Promise.race([this.api.version().then(() => true, () => false), new Promise<boolean>((r) => setTimeout(() => r(false), timeoutMs).unref())]);
  }

  #deny: Promise<void> | undefined;

  /**
   * brig's default-deny NetworkPolicy in its namespace (every pod, no ingress, no egress), made
   * once before the first pod, or found already there. One by that name that denies less is
   * refused, not changed: someone else wrote it. Whether the cluster's CNI enforces it is what
   * `brig doctor` probes from inside.
   */
  ensureDenyPolicy(): Promise<void> {
    return Promise.all([this.#ensureDeny(), this.#noForeignPolicies()]).then(() => undefined);
  }

  #foreign: { at: number; check: Promise<void> } | undefined;

  /**
   * No other NetworkPolicy in brig's namespace (the doctor's own pairs aside, which name only its
   * pods): policies add up, so one that allows traffic opens brig's pods whatever brig's
   * default-deny says. Read at most every 30 s (one list); a refusal is not cached.
   */
  #noForeignPolicies(): Promise<void> {
    if (this.o.foreignPolicyCheck === false) return Promise.resolve();
    if (this.#foreign && Date.now() - this.#foreign.at < FOREIGN_POLICY_TTL_MS) return this.#foreign.check;
    const check = (async () => {
      const others = foreignPolicies(await this.api.listNetworkPolicies());
      if (others.length > 0) {
        throw new BrigError('jail_unverified', `other NetworkPolicies in ${this.o.namespace} beside brig's ${DENY_POLICY}: ${others.slice(0, 5).join(', ')} — policies add up, so one that allows traffic opens brig's pods`, {
          hint: `Keep ${this.o.namespace} for brig alone: kubectl -n ${this.o.namespace} delete networkpolicy ${others[0]} (brig doctor lists them).`,
        });
      }
    })();
    this.#foreign = { at: Date.now(), check };
    check.catch(() => (this.#foreign = undefined));
    return check;
  }

  #ensureDeny(): Promise<void> {
    this.#deny ??= (async () => {
      const fail = (why: string, hint: string) => new BrigError('jail_unverified', `brig's default-deny NetworkPolicy ${DENY_POLICY} in ${this.o.namespace}: ${why}`, { hint });
      let have = await this.api.getNetworkPolicy(DENY_POLICY);
      if (!have) {
        have = await this.api.createNetworkPolicy(denyPolicy(this.o.namespace)).catch(async (e: unknown) => {
          // Another supervisor made it meanwhile (409): read what it made.
          if (e instanceof BrigError && (e.data as { status?: number }).status === 409) return (await this.api.getNetworkPolicy(DENY_POLICY)) ?? {};
          throw fail(`it cannot be made (${(e as Error).message})`, 'Grant brig networkpolicies create in its namespace (deploy/kubernetes/rbac.yaml), or create it yourself: every pod, policyTypes Ingress and Egress, no rules.');
        });
      }
      if (!deniesAll(have)) throw fail('one by that name exists and does not deny all ingress and egress to every pod', `Remove or correct it (kubectl -n ${this.o.namespace} get networkpolicy ${DENY_POLICY} -o yaml): brig refuses to run pods beside a weaker one.`);
    })();
    this.#deny.catch(() => (this.#deny = undefined));
    return this.#deny;
  }

  async create(spec: JailSpec): Promise<Jail> {
    const refuse = (what: string) => new BrigError('invalid_input', `the kubernetes driver does not take ${what} yet`, { hint: 'Run it on the Docker driver (BRIG_DRIVER=docker), or without it; docs/kubernetes.md lists what the Kubernetes driver holds.' });
    if (spec.artifacts.length > 0) throw refuse('artifacts');
    if (spec.image && spec.image !== this.o.image) throw refuse(`another image than brig's child image (${spec.image})`);
    await this.ensureDenyPolicy();
    // The inputs (a run's token among them) go in by exec at start, never in the pod object; a
    // repository's clone too, before them (the last exec's marker starts the program).
    const inputs = (spec.inputs && spec.inputs.length > 0) || spec.repoDir !== undefined ? await inputsArchive(spec.inputs ?? []) : undefined;
    const manifest = renderPod(spec, {
      ...this.#podOptions(),
      inputs: inputs !== undefined,
      broker: spec.brokerDir !== undefined,
    });
    const pod = await createVerified(this.api, manifest);
    return new K8sJail(this.api, spec.runId, pod.name, this.opts(), { pod, ...(inputs ? { inputs } : {}), ...(spec.repoDir !== undefined ? { repoDir: spec.repoDir } : {}) }, spec.brokerDir);
  }

  /** Where a run's /workspace lives (the operator's choice). */
  get workspace(): K8sWorkspace {
    return this.o.workspace;
  }

  /** The child image as the cluster's nodes hold it. */
  get image(): string {
    return this.o.image;
  }

  /** Bytes of a child's output kept as its tail. */
  get tailBytes(): number {
    return this.o.tailBytes ?? DEFAULT_TAIL_BYTES;
  }

  /**
   * A warm-pool pod for a limit shape (k8s-pool.ts): rendered as a cold pod is (`pooled`: no
   * argv, environment or inputs, the broker's directory mounted), created gated, verified and
   * started. Its key labels it as a run id would.
   */
  async makePoolPod(key: string, limits: JailLimits): Promise<{ manifest: PodManifest; pod: LaunchedPod }> {
    await this.ensureDenyPolicy();
    const manifest = renderPod({ runId: key, leaseId: 'pool', rootRunId: key, argv: [], env: {}, limits, artifacts: [] }, { ...this.#podOptions(), broker: true, pooled: true });
    const pod = await createVerified(this.api, manifest);
    await liftGate(this.api, pod);
    return { manifest, pod };
  }

  /** A started pod's jail (its outputs read through the relay, its pod deleted); with socketDir, its broker relay loop can run. */
  jailFor(runId: string, name: string, socketDir?: string): K8sJail {
    return new K8sJail(this.api, runId, name, this.opts(), undefined, socketDir);
  }

  #podOptions() {
    return {
      namespace: this.o.namespace,
      owner: this.o.owner,
      image: this.o.image,
      workspace: this.o.workspace,
      activeDeadlineSeconds: this.o.activeDeadlineSeconds ?? DEFAULT_DEADLINE_S,
      ...(this.o.runtimeClassName ? { runtimeClassName: this.o.runtimeClassName } : {}),
    };
  }

  async attach(runId: string): Promise<Jail | null> {
    const name = podName(runId);
    const pod = await this.api.getPod(name);
    if (!pod || obj(obj(pod.metadata).labels)[LABEL_OWNER] !== labelValue(this.o.owner)) return null;
    // A warm-pool pod's program ran as an exec whose status went with the supervisor that made it: it is ended, never run again.
    if (obj(obj(pod.metadata).labels)[LABEL_POOL] === 'true') return new K8sJail(this.api, runId, name, this.opts(), undefined, undefined, true);
    // A pod made with the broker's directory mounted gets its relay again (the last one went with the old supervisor's exec).
    const hasBroker = ((obj(pod.spec).volumes as Obj[] | undefined) ?? []).some((v) => v.name === 'run-brig');
    const jail = new K8sJail(this.api, runId, name, this.opts(), undefined, hasBroker && this.o.brokersDir ? path.join(this.o.brokersDir, runId) : undefined);
    jail.startRelay();
    return jail;
  }

  async listLabelled(): Promise<LabelledResource[]> {
    const pods = await this.api.listPods(`${LABEL_OWNER}=${labelValue(this.o.owner)}`);
    return pods.map((p) => {
      const meta = obj(p.metadata);
      const labels = obj(meta.labels);
      const phase = String(obj(p.status).phase ?? '');
      return { kind: 'container' as const, id: String(meta.name ?? ''), runId: String(labels[LABEL_RUN] ?? ''), rootRunId: String(labels[LABEL_ROOT] ?? labels[LABEL_RUN] ?? ''), running: phase === 'Pending' || phase === 'Running' };
    });
  }

  async sweep(isLive: (runId: string) => boolean): Promise<{ containers: number; volumes: number }> {
    let containers = 0;
    for (const r of await this.listLabelled()) {
      if (isLive(r.runId)) continue;
      await this.api.deletePod(r.id);
      containers++;
    }
    return { containers, volumes: 0 };
  }

  async close(): Promise<void> {
    await this.#watch?.close();
    await this.api.close();
  }

  #watch: PodWatch | undefined;

  /** The one watch over this owner's pods (item 7), started on first use. */
  podWatch(): PodWatch {
    this.#watch ??= new PodWatch(this.api, `${LABEL_OWNER}=${labelValue(this.o.owner)}`).start();
    return this.#watch;
  }

  private opts(): JailTimings {
    return { tailBytes: this.tailBytes, pollMs: this.o.pollMs ?? 200, unschedulableMs: this.o.unschedulableMs ?? 60_000, ...(this.o.watch === false ? {} : { watch: () => this.podWatch() }) };
  }
}

/** The verified pod as the API server holds it (verify passed on this same read-back). */
export function verifiedOf(pod: LaunchedPod): JailVerified {
  const spec = obj(pod.admitted.spec);
  const child = ((spec.containers as Obj[] | undefined) ?? []).find((c) => c.name === CONTAINER) ?? {};
  const sc = obj(child.securityContext);
  const limits = obj(obj(child.resources).limits);
  // Quantities by value, as verify compares them (`500m`, `128Mi`, `1Gi`).
  const mib = (v: unknown): number | null => {
    const n = quantity(v);
    return n === null ? null : Math.round((n / 1048576) * 100) / 100;
  };
  const vols = ((spec.volumes as Obj[] | undefined) ?? []).map(obj);
  const size = (name: string) => mib(obj(vols.find((v) => v.name === name)?.emptyDir).sizeLimit);
  const ws = vols.find((v) => v.name === 'workspace');
  const claim = obj(obj(obj(ws?.ephemeral).volumeClaimTemplate).spec);
  return {
    containerId: `pod/${pod.name}`,
    image: String(child.image ?? ''),
    user: `${String(sc.runAsUser ?? '')}:${String(sc.runAsGroup ?? '')}`,
    network: 'pod',
    readOnlyRoot: sc.readOnlyRootFilesystem === true,
    capDrop: ((obj(sc.capabilities).drop as string[] | undefined) ?? []).slice(),
    noNewPrivileges: sc.allowPrivilegeEscalation === false,
    seccompSha: null,
    ipc: 'pod',
    limits: { cpu: quantity(limits.cpu), memoryMb: mib(limits.memory), memorySwapMb: null, pids: null, tmpfsMb: size('tmp'), diskMb: ws?.ephemeral ? mib(obj(obj(claim.resources).requests).storage) : size('workspace') },
    workspace: ws?.ephemeral ? { driver: 'ephemeral', type: typeof claim.storageClassName === 'string' ? claim.storageClassName : null, options: null } : { driver: 'emptyDir', type: null, options: null },
    binds: [],
    verifiedAt: new Date().toISOString(),
  };
}

/** One child's pod. Not started (gated) when create() hands it out. */
export class K8sJail implements Jail {
  readonly id: string;
  readonly verified?: JailVerified;
  #tails: StreamTails = { stdoutTail: '', stderrTail: '', stdoutBytes: 0, stderrBytes: 0 };
  #end: Promise<JailExit> | undefined;
  #exited = false;
  #started: boolean;
  #destroyed = false;

  /** Stops the broker relay's loop (set while it runs). */
  #stopRelay: (() => void) | undefined;

  constructor(
    private readonly api: KubeApi,
    readonly runId: string,
    private readonly name: string,
    private readonly o: JailTimings,
    private readonly launched?: { pod: LaunchedPod; inputs?: Buffer; repoDir?: string },
    /** The run's host socket directory (its broker.sock): relayed into the pod at /run/brig. */
    private readonly socketDir?: string,
    /** A reattached warm-pool pod: its program's status is lost, so wait() ends it and fails. */
    private readonly pooledOrphan = false,
  ) {
    this.id = name;
    this.#started = launched === undefined; // a reattached pod is past its gate
    if (launched) this.verified = verifiedOf(launched.pod);
  }

  /** Lifts the gate; with inputs, unpacks them into the child's container once it runs (its program starts after them). */
  async start(): Promise<void> {
    if (!this.launched || this.#started) return;
    await liftGate(this.api, this.launched.pod);
    this.#started = true;
    // The egress CA first: the child starts only once the relay below made broker.sock.
    const ca = await readEgressCa(this.socketDir);
    if (ca) await this.#whenUp(() => putEgressCa(this.api, this.name, ca));
    this.startRelay();
    const inputs = this.launched.inputs;
    if (!inputs) return;
    const repoDir = this.launched.repoDir;
    if (repoDir !== undefined) {
      // A clean clone (repo/repo-stage.ts) as a tar made here, owned by the jail user, into
      // /workspace/repo; a fresh archive for each try (one that was refused was not read).
      const put = await this.#whenUp(async () => {
        const archive = repoArchive(repoDir);
        try {
          return await execText(this.api, this.name, CONTAINER, REPO_ARGV, { stdin: archive });
        } finally {
          (archive as unknown as { destroy(): void }).destroy();
        }
      });
      if (put.exitCode !== 0) throw new BrigError('jail_failed', `copying the repository into /workspace/repo failed (exit ${put.exitCode}): ${put.stderr.trim().slice(-300)}`, { data: { step: 'repo' } });
    }
    const r = await this.#whenUp(() => execText(this.api, this.name, CONTAINER, UNPACK_ARGV, { stdin: inputs }));
    if (r.exitCode !== 0) throw new BrigError('jail_failed', `unpacking the inputs into /workspace failed (exit ${r.exitCode}): ${r.stderr.trim().slice(-300)}`);
  }

  /**
   * An exec into a container of this pod as soon as it runs: tried at once and again every
   * pollMs while the exec is refused for a container not yet started (the kubelet reports a
   * started container up to a second late; asking beats waiting for its status). Between tries
   * the pod is read: a pod that cannot run, cannot be placed or is gone ends it with that reason.
   */
  async #whenUp<T>(exec: () => Promise<T>): Promise<T> {
    const check = this.#checker();
    for (;;) {
      try {
        return await exec();
      } catch (e) {
        const status = e instanceof BrigError ? (e.data as { status?: number } | undefined)?.status : undefined;
        // A container the kubelet does not know as running yet refuses the upgrade (400/404/500), or
        // cuts the stream abruptly (1006) before anything ran; the unpack is idempotent all the same.
        const notYet = status === 400 || status === 404 || status === 500 || /not (found|running)|does not have a host|not started|ContainerCreating|closed \(1006\)/i.test((e as Error).message);
        if (!notYet) throw e;
      }
      await check(await this.api.getPod(this.name));
      await new Promise((r) => setTimeout(r, this.o.pollMs));
    }
  }

  /**
   * Polls the pod until `ready` says so; a pod that cannot run (podStuck), cannot be placed past
   * the bound, or is gone fails it with the kubelet's or the scheduler's reason.
   */
  async #until<T>(ready: (pod: Obj) => T | undefined | false): Promise<T> {
    const check = this.#checker();
    const watch = this.o.watch?.();
    let lastRead = 0;
    for (;;) {
      const since = watch?.version(this.name) ?? 0;
      // The watch's copy while it is synced; a read of its own at first, when the watch has not
      // seen the pod (it may not yet have its ADDED), and every WATCH_FALLBACK_MS.
      const cached = watch?.get(this.name);
      let pod: Obj | null;
      if (cached && Date.now() - lastRead < WATCH_FALLBACK_MS) pod = cached;
      else {
        pod = await this.api.getPod(this.name);
        lastRead = Date.now();
      }
      await check(pod);
      const v = ready(pod!);
      if (v !== undefined && v !== false) return v;
      if (watch?.synced) await watch.changed(this.name, since, WATCH_FALLBACK_MS);
      else await new Promise((r) => setTimeout(r, this.o.pollMs));
    }
  }

  /** One read of the pod judged: gone, stuck (the kubelet's reason) or unschedulable past the bound throw; else it may still run. */
  #checker(): (pod: Obj | null) => Promise<void> {
    let unschedulableSince: number | undefined;
    return async (pod) => {
      if (!pod) throw new BrigError('jail_failed', `the pod ${this.name} is gone (deleted outside brig, or its node was lost)`, { data: { podGone: true } });
      const stuck = podStuck(pod);
      if (stuck) {
        const image = stuck.reason === 'ErrImageNeverPull' || stuck.reason === 'ErrImagePull' || stuck.reason === 'ImagePullBackOff' || stuck.reason === 'InvalidImageName';
        throw new BrigError(image ? 'image_missing' : 'jail_failed', `the pod ${this.name} cannot run: ${stuck.reason} (${stuck.message})`, {
          hint: image ? "brig pulls nothing: import brig's child image into the cluster's nodes (scripts/k8s-up.sh does for its own cluster) and name it in BRIG_K8S_IMAGE." : "kubectl describe pod shows the kubelet's events.",
        });
      }
      // A pod the scheduler cannot place (the lease's memory on no node) fails, past a bound, instead of waiting for ever.
      const why = podUnschedulable(pod);
      unschedulableSince = why ? (unschedulableSince ?? Date.now()) : undefined;
      if (why && Date.now() - unschedulableSince! >= this.o.unschedulableMs) {
        throw new BrigError('jail_failed', `the pod ${this.name} could not be scheduled for ${Math.round(this.o.unschedulableMs / 1000)} s: ${why}`, { hint: "Ask for less memory or disk (the lease's limits are reserved on a node), or give the cluster room." });
      }
    };
  }

  wait(): Promise<JailExit> {
    this.#end ??= this.#watch();
    return this.#end;
  }

  async #watch(): Promise<JailExit> {
    if (this.pooledOrphan) return this.#endOrphan();
    try {
      const end = await this.#until((pod) => podEnd(pod) ?? undefined);
      this.#exited = true;
      await this.#readTails();
      return { exitCode: end.exitCode, oomKilled: end.oomKilled };
    } finally {
      this.#stopRelay?.();
    }
  }

  /**
   * The broker relay (a run with a broker): once the relay container runs, `pod-relay.js` is
   * exec'd in it, its stdin and stdout carrying the framed connections the child makes on
   * /run/brig/broker.sock to the run's host broker.sock (host-relay.ts: the pod side is
   * untrusted). An exec that ends while the run goes on (the API server's connection cut) is made
   * again; the child's client reconnects and re-sends (its calls are idempotent by call id).
   * Stops at the end, a kill of a pod that never ran, and destroy().
   */
  startRelay(): void {
    if (!this.socketDir || this.#stopRelay) return;
    let stopped = false;
    let current: { close(): void } | undefined;
    const loop = async (): Promise<void> => {
      while (!stopped && !this.#exited && !this.#destroyed) {
        try {
          const toPod = new PassThrough();
          const session = await this.#whenUp(() => (stopped ? Promise.resolve(null) : execInPod(this.api, this.name, RELAY, RELAY_ARGV, { stdin: toPod })));
          if (!session) return;
          const relay = hostRelay({ input: session.stdout, output: toPod, sockets: relayTargets(this.socketDir!) });
          current = { close: () => (relay.close(), session.close()) };
          if (stopped) current.close();
          await Promise.all([relay.done.catch(() => undefined), session.done.catch(() => undefined)]);
        } catch (e) {
          // the pod is gone or cannot run: wait() says so; the loop ends with the run (or the pod)
          if (this.#destroyed || (e instanceof BrigError && (e.data as { podGone?: boolean } | undefined)?.podGone)) return;
        }
        if (!stopped) await new Promise((r) => setTimeout(r, RELAY_RETRY_MS));
      }
    };
    void loop();
    this.#stopRelay = () => ((stopped = true), current?.close());
  }

  /** Ends the broker relay's loop, if it runs. */
  stopRelay(): void {
    this.#stopRelay?.();
  }

  /**
   * A warm-pool pod found after a restart: its program was an exec of the supervisor that died,
   * so its status cannot be known. Whatever of it still runs is killed and PID 1 told to end the
   * namespace; the run fails (never run again), its outputs still collected.
   */
  async #endOrphan(): Promise<JailExit> {
    await execText(this.api, this.name, CONTAINER, ['sh', '-c', 'kill -KILL -1; kill -USR1 1']).catch(() => undefined);
    await this.#until((pod) => podEnd(pod) ?? undefined);
    this.#exited = true;
    throw new BrigError('jail_failed', `the pooled pod ${this.name} lost its program's status with the supervisor that ran it: ended at restart, not run again`);
  }

  /** The child's log (its stdout and stderr, interleaved as the kubelet kept them), its last tailBytes. */
  async #readTails(): Promise<void> {
    const log = await this.api.podLogTail(this.name, CONTAINER, this.o.tailBytes).catch(() => null);
    if (log === null) return;
    this.#tails = { stdoutTail: log.tail, stderrTail: '', stdoutBytes: log.read, stderrBytes: 0 };
  }

  async kill(): Promise<void> {
    if (this.#exited || this.#destroyed) return;
    if (!this.#started) return this.destroy();
    // Every process of the child but its PID 1, whose wait then returns 137 and ends the container.
    const sent = await execText(this.api, this.name, CONTAINER, ['kill', '-KILL', '-1']).then(() => true, () => false);
    // Nothing to exec into: a pod whose child never started (unscheduled, its image missing) holds no output — it goes.
    if (!sent && (await this.#neverStarted())) await this.destroy();
  }

  /** The child's container has not run (no running or terminated state): nothing of the child exists yet. */
  async #neverStarted(): Promise<boolean> {
    const pod = await this.api.getPod(this.name).catch(() => undefined);
    if (pod === undefined) return false;
    if (pod === null) return true;
    const cs = ((obj(pod.status).containerStatuses as Obj[] | undefined) ?? []).find((c) => c.name === CONTAINER);
    const state = obj(cs?.state);
    return !state.running && !state.terminated;
  }

  async stop(graceMs: number): Promise<void> {
    if (this.#exited || this.#destroyed) return;
    if (!this.#started) return this.destroy();
    await execText(this.api, this.name, CONTAINER, ['kill', '-TERM', '1']).catch(() => undefined);
    await killPastGrace(this, graceMs);
  }

  tails(): StreamTails {
    return this.#tails;
  }

  /**
   * /workspace/<from> as the relay container's `tar` streams it, into brig's collector with the
   * same caps and checks as on Docker. A file over the per-file cap is passed over as on Docker:
   * the archive is read again by pod-tar.js (src/child/pod-tar.ts: the same walk, that entry
   * written as a link to PASSED_OVER — the relay's /workspace is read-only and the child's
   * container has ended, so the tree itself cannot change). busybox tar reads the first pass: a
   * node start per collection would cost every run ~100 ms.
   */
  async collect(destDir: string, caps: CollectCaps, from = 'out', opts: CollectOptions = {}): Promise<CollectReport> {
    const rel = workspaceRelative(from);
    if (rel === undefined) throw new BrigError('invalid_input', 'collect reads a relative path under /workspace', { data: { from } });
    const dir = path.posix.join('/workspace', path.posix.dirname(rel));
    const base = path.posix.basename(rel);
    const passed: string[] = [];
    let next: ExecSession | null | undefined = await this.#archive(dir, base, passed).catch(async (e: unknown) => {
      // A child that never started (killed while unscheduled, its image missing) wrote nothing: an empty collection.
      if (await this.#neverStarted()) return null;
      throw e;
    });
    if (next === null) return emptyCollect(destDir);
    const sessions: ExecSession[] = [];
    const source: ArchiveSource = {
      archive: async () => {
        const s = next ?? (await this.#archive(dir, base, passed));
        next = undefined;
        if (s === null) throw new BrigError('jail_failed', `the outputs at /workspace/${rel} went while they were read`);
        sessions.push(s);
        return s.stdout;
      },
      passOver: async (name) => void passed.push(name),
    };
    const close = () => sessions.forEach((s) => s.close());
    const report = await collectArchive(source, base, destDir, caps, opts).catch((e: unknown) => {
      close();
      throw e;
    });
    // The last pass read the archive to its end: its exit says whether an entry was left out unreadable.
    const done = await sessions.at(-1)!.done.catch((e: unknown) => ({ exitCode: -1, stderr: (e as Error).message, stderrBytes: 0 }));
    close();
    if (done.exitCode !== 0) {
      report.skipped.push({ path: '(tar)', reason: `unreadable: ${done.stderr.trim().slice(-200)}` });
      report.skippedCount = (report.skippedCount ?? 0) + 1;
    }
    return report;
  }

  /** The archive of dir/base (busybox tar; pod-tar once entries are passed over); null: the path is not there (exit 3 with nothing written). */
  async #archive(dir: string, base: string, passed: readonly string[]): Promise<ExecSession | null> {
    const argv = passed.length === 0 ? ['sh', '-c', 'cd "$1" && [ -e "$2" ] || exit 3; exec tar -c -f - "$2"', 'collect', dir, base] : [...POD_TAR_ARGV, dir, base, ...passed];
    const session = await execInPod(this.api, this.name, RELAY, argv);
    const first = await firstChunk(session.stdout);
    if (first === null) {
      const done = await session.done;
      if (done.exitCode === 3) return null;
      throw new BrigError('jail_failed', `reading the workspace failed: ${argv[0] === 'sh' ? 'tar' : 'pod-tar'} exited ${done.exitCode} (${done.stderr.trim().slice(-300)})`);
    }
    session.stdout.unshift(first);
    return session;
  }

  async destroy(): Promise<void> {
    if (this.#destroyed) return;
    this.#stopRelay?.();
    await this.api.deletePod(this.name, 0);
    this.#destroyed = true;
  }
}

/** After a SIGTERM: the jail's end within graceMs, else its kill (both Kubernetes jails' stop). */
export async function killPastGrace(jail: Pick<Jail, 'wait' | 'kill'>, graceMs: number): Promise<void> {
  let timer: NodeJS.Timeout | undefined;
  const ended = await Promise.race([jail.wait().then(() => true, () => true), new Promise<boolean>((r) => (timer = setTimeout(() => r(false), graceMs)))]);
  clearTimeout(timer);
  if (!ended) await jail.kill();
}

/** The stream's first chunk, or null when it ended without one. */
function firstChunk(s: Readable): Promise<Buffer | null> {
  return new Promise((resolve, reject) => {
    const done = (v: Buffer | null) => {
      s.off('readable', onReadable);
      s.off('end', onEnd);
      s.off('error', onError);
      resolve(v);
    };
    const onReadable = () => {
      const c = s.read() as Buffer | null;
      if (c !== null) done(c);
    };
    const onEnd = () => done(null);
    const onError = (e: Error) => {
      s.off('readable', onReadable);
      s.off('end', onEnd);
      reject(e);
    };
    s.on('readable', onReadable);
    s.once('end', onEnd);
    s.once('error', onError);
  });
}

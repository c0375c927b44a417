/**
 * The Kubernetes jail's pod (issue 33 items 2–3): one bare Pod per child, rendered from the
 * same JailSpec as a Docker jail, created behind a scheduling gate, read back and compared
 * with what was asked before the gate is lifted (pure).
 *
 * Guarantees: the rendered pod is PodSecurity `restricted` and stricter — read-only root, uid
 * and gid 65534, no privilege escalation, every capability dropped, seccomp RuntimeDefault, no
 * service-account token, no service links, no host namespaces, no hostPath, limits from the
 * lease (memory and disk reserved in full, CPU up to CPU_REQUEST_MAX), `restartPolicy: Never`, `activeDeadlineSeconds` behind brig's own
 * timeout, brig's labels (owner, run, lease); `verifyPod` names every way the admitted pod
 * differs from it in what matters to the jail (a container or volume added, an image, command
 * or env changed, a security field dropped, a RuntimeClass changed, a token mounted, a host
 * namespace), so a mutating webhook's change is refused before anything runs.
 * Threat: an admission chain (a webhook, a LimitRanger, a policy engine) that changes the pod
 * between create and run. Trusts: the API server's read-back of the object it stored.
 */
import type { JailSpec } from '../types.js';

/** The gate a pod is created behind; brig lifts it only after the read-back verified. */
export const VERIFY_GATE = 'brig.dev/verified';
export const LABEL_OWNER = 'brig.dev/owner';
/** The lease's process cap for the child container (applied by the node's runtime where it knows it). */
export const ANNOTATION_PIDS = 'brig.dev/pids-max';
export const LABEL_RUN = 'brig.dev/run';
export const LABEL_LEASE = 'brig.dev/lease';
export const LABEL_ROOT = 'brig.dev/root';
/** A warm-pool pod (k8s-pool.ts): its child's program is exec'd at claim, not PID 1's child. */
export const LABEL_POOL = 'brig.dev/pool';
/** The run a warm-pool pod was claimed for (set at claim, for an operator's `kubectl get -l`). */
export const LABEL_ASSIGNED = 'brig.dev/assigned-run';
/** The jail user on every driver. */
export const JAIL_UID = 65534;
/** The child's container: PID 1 is CHILD_INIT, the program its only child. */
export const CONTAINER = 'child';
/** The relay's container: it outlives the child's program, with /workspace read-only, so its outputs can be read after the end. */
export const RELAY = 'relay';

/**
 * PID 1 of the child's container (busybox sh): runs the program as its only child, forwards
 * SIGTERM to it, and exits with its status. When PID 1 exits the kernel kills everything left
 * in the container's PID namespace, so the end the kubelet reports (the container terminated)
 * is the end of every process of the child — nothing lingers, and the exit code is the
 * program's own. A SIGKILL from inside (`kill -KILL -1`, exec'd by the driver) reaches every
 * process but PID 1, whose wait then returns 137. A wait a forwarded SIGTERM interrupted is
 * waited again (the status kept in the shell's job table once the program was reaped).
 */
export const CHILD_INIT = 'trap \'kill -TERM $p 2>/dev/null\' TERM; "$@" & p=$!; while :; do wait $p; s=$?; kill -0 $p 2>/dev/null || break; done; wait $p 2>/dev/null; t=$?; [ $t -ne 127 ] && s=$t; exit $s';
/** Where the child finds brig's broker (the same path as on Docker): the relay's socket, in an emptyDir read-only to the child. */
export const BROKER_SOCKET = '/run/brig/broker.sock';
/** The relay's program: waits to be exec'd into (collection, signals), ends on SIGTERM. */
export const RELAY_SCRIPT = 'trap "exit 0" TERM; while :; do sleep 3600 & wait $!; done';
/** What brig execs in the child's container before its program starts, the inputs' tar on its stdin. */
export const UNPACK_ARGV = ['sh', '-c', 'tar -x -o -f - -C /workspace && : > /workspace/.brig-prepared'];

/**
 * The child container's PID 1 for a run: out/ made; with inputs, it waits (≤ 300 s) until brig
 * has unpacked them into /workspace through an exec into this container (the inputs' tar on the
 * exec's stdin — never in the pod object, so a run's token is never stored in etcd; the exec
 * ends by making /workspace/.brig-prepared); with a broker, until the relay's socket is there
 * (≤ 60 s); then CHILD_INIT runs the program. Nothing of the program runs before all of it, so
 * nothing but brig can make the marker. A wait past its bound exits 70, said on stderr.
 */
export function childInit(o: { inputs?: boolean; broker?: boolean }): string {
  const wait = (test: string, tenths: number, what: string) =>
    `i=0; while ${test}; do i=$((i+1)); if [ $i -gt ${tenths} ]; then echo "brig: ${what}" >&2; exit 70; fi; sleep 0.1; done; `;
  return [
    'mkdir -p /workspace/out || exit 70; ',
    o.inputs ? `${wait('[ ! -e /workspace/.brig-prepared ]', 3000, 'no inputs came within 300 s')}rm -f /workspace/.brig-prepared; ` : '',
    o.broker ? wait(`[ ! -S ${BROKER_SOCKET} ]`, 600, 'the broker relay did not come within 60 s') : '',
    CHILD_INIT,
  ].join('');
}
/**
 * PID 1 of a warm-pool pod's child container (busybox sh): makes out/ and waits, running
 * nothing else. The run's program is exec'd into the container at claim (POOL_ASSIGN); at its
 * end brig sends SIGUSR1 and this PID 1 exits, so the kernel kills every process left in the
 * container's PID namespace (zap_pid_ns_processes) — the pooled run's end is its whole process
 * tree's, as on the cold path. A child may send SIGUSR1 itself (same uid): that only ends its
 * own run early. SIGTERM and SIGKILL from inside the namespace never reach a PID 1 without a
 * handler for them.
 */
export const POOL_WAITER = 'trap "exit 0" USR1; mkdir -p /workspace/out || exit 70; while :; do sleep 3600 & wait $!; done';

/**
 * What brig execs into a claimed warm-pool pod's child container: the run's inputs and its
 * assignment (`.brig-assign`: `set --` its argv and `export` its environment, every value
 * single-quoted) arrive as one tar on stdin — never in the pod object or the exec's URL — then
 * the broker's socket is awaited (≤ 60 s) and the program run with no stdin, this wrapper its
 * parent (SIGTERM ignored by the wrapper only: brig's stop reaches the program itself). When the
 * program ends the wrapper exits with its status — the exec's status, the runtime's account — and
 * a helper it left behind tells PID 1 to end the namespace once the wrapper is gone, so what the
 * program left running (holding the exec's stdout open) is killed and the exec can end. A 137
 * carries the container's OOM count on stderr's last line (`oom_kill N`).
 */
export const POOL_ASSIGN = [
  'sh',
  '-c',
  'tar -x -o -f - -C /workspace || exit 70; . /workspace/.brig-assign || exit 70; rm -f /workspace/.brig-assign; ' +
    `i=0; while [ ! -S ${BROKER_SOCKET} ]; do i=$((i+1)); if [ $i -gt 600 ]; then echo "brig: the broker relay did not come within 60 s" >&2; exit 70; fi; sleep 0.1; done; ` +
    '"$@" </dev/null & p=$!; trap "" TERM; wait $p; s=$?; ' +
    '[ $s -eq 137 ] && { grep -h oom_kill /sys/fs/cgroup/memory/memory.oom_control /sys/fs/cgroup/memory.events 2>/dev/null | tail -n 1 >&2; }; ' +
    '(while kill -0 $$ 2>/dev/null; do usleep 1000; done; kill -USR1 1) </dev/null >/dev/null 2>&1 & exit $s',
  'brig-assign',
];

/** An environment name the assignment can export (a shell identifier); any other spec goes cold. */
export const SHELL_NAME = /^[A-Za-z_][A-Za-z0-9_]*$/;

/** The assignment file POOL_ASSIGN sources: the run's argv and environment, single-quoted (pure). */
export function poolAssignment(argv: readonly string[], env: Readonly<Record<string, string>>): string {
  const q = (s: string) => `'${s.replace(/'/g, `'\\''`)}'`;
  for (const k of Object.keys(env)) if (!SHELL_NAME.test(k)) throw new Error(`not a shell name: ${JSON.stringify(k)}`);
  return [`set -- ${argv.map(q).join(' ')}`, ...Object.entries(env).map(([k, v]) => `export ${k}=${q(v)}`), ''].join('\n');
}

/** The most CPU a pod's child asks the scheduler to reserve (its limit, the lease's, may be higher). */
export const CPU_REQUEST_MAX = 0.25;
/** The relay's own small limits (it runs `sleep`; the broker relay and the outputs' reader, node both, when exec'd: 128 Mi holds the two at once). */
export const RELAY_LIMITS = { cpu: '1', memory: '128Mi', 'ephemeral-storage': '1Mi' } as const;
/**
 * What the relay reserves: its memory in full, a tenth of a CPU. Its CPU ceiling is higher
 * (it runs only brig's code — `tar`, pod-relay.js — never the child's): under a 100m quota a
 * collection's `tar` waited for the next CFS period, ~100 ms a run.
 */
export const RELAY_REQUESTS = { ...RELAY_LIMITS, cpu: '100m' } as const;

/**
 * Where a pod's `/workspace` lives. `storageClass`: a generic ephemeral volume of the lease's
 * disk size from that class (on brig's test cluster `brig-loop`: an ext4 image of exactly that
 * size, so a write past it fails ENOSPC), made with the pod and deleted with it. `emptyDir`:
 * node disk with `sizeLimit` — past it the kubelet evicts the pod and its outputs are lost; only
 * when the operator allows it.
 */
export type K8sWorkspace = { storageClass: string } | { emptyDir: true };

export interface PodOptions {
  namespace: string;
  workspace: K8sWorkspace;
  owner: string;
  /** The image as the cluster knows it (imported: `imagePullPolicy: Never`). */
  image: string;
  /** An operator's RuntimeClass (gVisor, Kata), or none. */
  runtimeClassName?: string;
  /** Backs up brig's own timeout (the kubelet ends the pod past it). */
  activeDeadlineSeconds?: number;
  /** The run has inputs: the child's PID 1 waits for them (UNPACK_ARGV) before its program starts. */
  inputs?: boolean;
  /** The run has a broker: /run/brig (the relay's sockets) is mounted, and the child waits for broker.sock. */
  broker?: boolean;
  /** A warm-pool pod: PID 1 is POOL_WAITER (no argv, no environment: those come at claim), labelled LABEL_POOL. */
  pooled?: boolean;
}

export type PodManifest = {
  apiVersion: 'v1';
  kind: 'Pod';
  metadata: { name: string; namespace: string; labels: Record<string, string>; annotations: Record<string, string> };
  spec: Record<string, unknown>;
};

/** A pod name for a run (DNS-1123: lowercase, ≤ 63). */
export function podName(runId: string): string {
  return `brig-${runId.toLowerCase().replace(/[^a-z0-9-]/g, '-')}`.slice(0, 63).replace(/-+$/, '');
}

/** A label value (≤ 63, alphanumerics, `-_.`, alphanumeric ends). */
export function labelValue(s: string): string {
  return s.replace(/[^A-Za-z0-9._-]/g, '-').slice(0, 63).replace(/^[^A-Za-z0-9]+|[^A-Za-z0-9]+$/g, '') || 'x';
}

const mi = (mb: number) => `${Math.max(1, Math.round(mb))}Mi`;
const milli = (cpu: number) => `${Math.max(1, Math.round(cpu * 1000))}m`;

/** The hardened container security context every container of the pod carries. */
const hardened = () => ({ allowPrivilegeEscalation: false, readOnlyRootFilesystem: true, privileged: false, runAsNonRoot: true, runAsUser: JAIL_UID, runAsGroup: JAIL_UID, capabilities: { drop: ['ALL'] } });

/**
 * The pod for a jail spec, gated (pure): `child` (out/, the inputs and the broker awaited, then the
 * program under CHILD_INIT, limits from the lease) and `relay` (sleeps with /workspace read-only
 * until brig reads the outputs through it).
 */
export function renderPod(spec: JailSpec, o: PodOptions): PodManifest {
  const limits = { cpu: milli(spec.limits.cpu), memory: mi(spec.limits.memoryMb), 'ephemeral-storage': mi(spec.limits.diskMb + spec.limits.tmpfsMb) };
  // The lease's limits are ceilings, enforced; what the scheduler reserves is the memory and disk
  // in full but only a share of the CPU ceiling (a lease's 2 CPUs must not need 2 idle cores).
  const requests = { ...limits, cpu: milli(Math.min(spec.limits.cpu, CPU_REQUEST_MAX)) };
  return {
    apiVersion: 'v1',
    kind: 'Pod',
    metadata: {
      // The lease's process cap, for a node runtime that applies it to the child container (the
      // test cluster's runc wrapper, scripts/k8s-up.sh): a pod has no PID field of its own.
      annotations: { [ANNOTATION_PIDS]: String(spec.limits.pids) },
      name: podName(spec.runId),
      namespace: o.namespace,
      labels: { [LABEL_OWNER]: labelValue(o.owner), [LABEL_RUN]: labelValue(spec.runId), [LABEL_ROOT]: labelValue(spec.rootRunId), [LABEL_LEASE]: labelValue(spec.leaseId), ...(o.pooled ? { [LABEL_POOL]: 'true' } : {}) },
    },
    spec: {
      schedulingGates: [{ name: VERIFY_GATE }],
      restartPolicy: 'Never',
      automountServiceAccountToken: false,
      enableServiceLinks: false,
      hostNetwork: false,
      hostPID: false,
      hostIPC: false,
      ...(o.runtimeClassName ? { runtimeClassName: o.runtimeClassName } : {}),
      ...(o.activeDeadlineSeconds ? { activeDeadlineSeconds: Math.max(1, Math.ceil(o.activeDeadlineSeconds)) } : {}),
      terminationGracePeriodSeconds: 2,
      securityContext: { runAsNonRoot: true, runAsUser: JAIL_UID, runAsGroup: JAIL_UID, fsGroup: JAIL_UID, seccompProfile: { type: 'RuntimeDefault' } },
      containers: [
        {
          name: CONTAINER,
          image: o.image,
          imagePullPolicy: 'Never',
          command: o.pooled ? ['/bin/sh', '-c', POOL_WAITER] : ['/bin/sh', '-c', childInit(o), 'brig-init', ...spec.argv],
          env: o.pooled ? [] : Object.entries(spec.env).map(([name, value]) => ({ name, value })),
          workingDir: '/workspace',
          securityContext: hardened(),
          resources: { limits, requests },
          volumeMounts: [
            { name: 'workspace', mountPath: '/workspace' },
            { name: 'tmp', mountPath: '/tmp' },
            ...(o.broker ? [{ name: 'run-brig', mountPath: '/run/brig', readOnly: true }] : []),
          ],
        },
        {
          name: RELAY,
          image: o.image,
          imagePullPolicy: 'Never',
          command: ['/bin/sh', '-c', RELAY_SCRIPT],
          env: [],
          workingDir: '/workspace',
          securityContext: hardened(),
          resources: { limits: { ...RELAY_LIMITS }, requests: { ...RELAY_REQUESTS } },
          volumeMounts: [{ name: 'workspace', mountPath: '/workspace', readOnly: true }, ...(o.broker ? [{ name: 'run-brig', mountPath: '/run/brig' }] : [])],
        },
      ],
      volumes: [
        workspaceVolume(o.workspace, spec.limits.diskMb),
        { name: 'tmp', emptyDir: { medium: 'Memory', sizeLimit: mi(spec.limits.tmpfsMb) } },
        ...(o.broker ? [{ name: 'run-brig', emptyDir: { medium: 'Memory', sizeLimit: '1Mi' } }] : []),
      ],
    },
  };
}

/** The `workspace` volume: an ephemeral claim of the class (its size the lease's), or an emptyDir with sizeLimit. */
export function workspaceVolume(w: K8sWorkspace, diskMb: number): Record<string, unknown> {
  if ('emptyDir' in w) return { name: 'workspace', emptyDir: { sizeLimit: mi(diskMb) } };
  return {
    name: 'workspace',
    ephemeral: { volumeClaimTemplate: { spec: { accessModes: ['ReadWriteOnce'], storageClassName: w.storageClass, volumeMode: 'Filesystem', resources: { requests: { storage: mi(diskMb) } } } } },
  };
}

/** Pure: a policy of brig's namespace other than its default-deny and the doctor's own pairs — one that may allow what brig denies. */
export function foreignPolicies(items: Record<string, unknown>[]): string[] {
  return items.filter((p) => {
    const md = obj(p.metadata);
    if (md.name === DENY_POLICY) return false;
    // A doctor pair names only doctor pods by run id (a left-over one, from a doctor that died, allows nothing else).
    const exprs = (obj(obj(p.spec).podSelector).matchExpressions as Obj[] | undefined) ?? [];
    const onlyDoctor = String(md.name ?? '').startsWith('brig-doctor-allow-') && exprs.length === 1 && exprs[0]!.key === LABEL_RUN && exprs[0]!.operator === 'In'
      && Array.isArray(exprs[0]!.values) && (exprs[0]!.values as unknown[]).every((v) => typeof v === 'string' && v.startsWith('doctor-'))
      && Object.keys(obj(obj(p.spec).podSelector)).length === 1;
    return !onlyDoctor;
  }).map((p) => String(obj(p.metadata).name ?? '?'));
}

/** brig's default-deny NetworkPolicy in its namespace: every pod, no ingress, no egress. */
export const DENY_POLICY = 'brig-default-deny';

export function denyPolicy(namespace: string): { apiVersion: string; kind: string; metadata: { name: string; namespace: string; labels: Record<string, string> }; spec: { podSelector: Record<string, never>; policyTypes: string[]; ingress: []; egress: [] } } {
  return {
    apiVersion: 'networking.k8s.io/v1',
    kind: 'NetworkPolicy',
    metadata: { name: DENY_POLICY, namespace, labels: { 'app.kubernetes.io/managed-by': 'brig' } },
    spec: { podSelector: {}, policyTypes: ['Ingress', 'Egress'], ingress: [], egress: [] },
  };
}

/** Whether a NetworkPolicy as the API server holds it denies everything to every pod of its namespace (pure). */
export function deniesAll(policy: unknown): boolean {
  const spec = obj(obj(policy).spec);
  const types = arr(spec.policyTypes).map(String).sort();
  return Object.keys(obj(spec.podSelector)).length === 0 && same(types, ['Egress', 'Ingress']) && arr(spec.ingress).length === 0 && arr(spec.egress).length === 0;
}

export interface Drift {
  field: string;
  asked: unknown;
  got: unknown;
}

type Obj = Record<string, unknown>;
const obj = (v: unknown): Obj => (v && typeof v === 'object' && !Array.isArray(v) ? (v as Obj) : {});
const arr = (v: unknown): unknown[] => (Array.isArray(v) ? v : []);
/** JSON with object keys sorted: the API server writes fields back in its own order. */
const canon = (v: unknown): string =>
  Array.isArray(v) ? `[${v.map(canon).join(',')}]` : v && typeof v === 'object' ? `{${Object.keys(v).sort().map((k) => `${JSON.stringify(k)}:${canon((v as Obj)[k])}`).join(',')}}` : JSON.stringify(v ?? null);
const same = (a: unknown, b: unknown) => canon(a) === canon(b);

/** Quantities as the API server writes them back (`500m` stays, `1` cpu may read `1`); compared by value. */
export function quantity(q: unknown): number | null {
  if (typeof q === 'number') return q;
  if (typeof q !== 'string') return null;
  const m = /^([0-9.]+)(m|Ki|Mi|Gi|Ti|k|M|G|T)?$/.exec(q);
  if (!m) return null;
  const f: Record<string, number> = { m: 1e-3, Ki: 1024, Mi: 1024 ** 2, Gi: 1024 ** 3, Ti: 1024 ** 4, k: 1e3, M: 1e6, G: 1e9, T: 1e12 };
  return Number(m[1]) * (m[2] ? f[m[2]]! : 1);
}

/**
 * Every way the pod the API server holds differs from the one asked for, in what matters to
 * the jail (pure); `started`: a pod already past its gate (a warm-pool pod at claim). Defaults the server fills in that change nothing (a termination message
 * path, a DNS policy, a scheduler name, tolerations for not-ready nodes) are not drift.
 */
export function verifyPod(asked: PodManifest, got: unknown, o: { started?: boolean } = {}): Drift[] {
  const out: Drift[] = [];
  const d = (field: string, a: unknown, g: unknown) => out.push({ field, asked: a, got: g });
  const gs = obj(obj(got).spec);
  const as = asked.spec;
  // brig's own annotations as asked (one removed or raised would lift the child's process cap).
  const gotA = obj(obj(obj(got).metadata).annotations);
  for (const [k, v] of Object.entries(asked.metadata.annotations)) if (gotA[k] !== v) d(`metadata.annotations.${k}`, v, gotA[k]);
  for (const k of ['restartPolicy', 'automountServiceAccountToken', 'enableServiceLinks', 'runtimeClassName', 'activeDeadlineSeconds'] as const) {
    if (!same(as[k], gs[k])) d(`spec.${k}`, as[k], gs[k]);
  }
  for (const k of ['hostNetwork', 'hostPID', 'hostIPC', 'shareProcessNamespace'] as const) if (gs[k] === true) d(`spec.${k}`, false, true);
  if (!same(as.securityContext, gs.securityContext)) d('spec.securityContext', as.securityContext, gs.securityContext);
  if (arr(gs.ephemeralContainers).length > 0) d('spec.ephemeralContainers', [], arr(gs.ephemeralContainers).map((c) => obj(c).name));
  const askedC = [...arr(as.initContainers), ...arr(as.containers)].map(obj);
  const gotC = [...arr(gs.initContainers), ...arr(gs.containers)].map(obj);
  for (const k of ['initContainers', 'containers'] as const) {
    const names = (v: unknown) => arr(v).map((c) => obj(c).name);
    if (!same(names(as[k]), names(gs[k]))) d(`spec.${k}`, names(as[k]), names(gs[k]));
  }
  for (const a of askedC) {
    const g = gotC.find((c) => c.name === a.name);
    if (!g) continue;
    for (const k of ['image', 'imagePullPolicy', 'command', 'args', 'env', 'envFrom', 'workingDir', 'securityContext', 'volumeMounts', 'volumeDevices', 'lifecycle', 'restartPolicy'] as const) {
      // An empty list is how the server writes back an absent one (and the other way round).
      const norm = (v: unknown) => (Array.isArray(v) && v.length === 0 ? undefined : v);
      if (!same(norm(a[k]), norm(g[k]))) d(`containers.${String(a.name)}.${k}`, a[k], g[k]);
    }
    for (const side of ['limits', 'requests'] as const) {
      const al = obj(obj(a.resources)[side]);
      const gl = obj(obj(g.resources)[side]);
      const keys = new Set([...Object.keys(al), ...Object.keys(gl)]);
      for (const k of keys) if (quantity(al[k]) !== quantity(gl[k])) d(`containers.${String(a.name)}.resources.${side}.${k}`, al[k], gl[k]);
    }
  }
  const askedV = arr(as.volumes).map(obj);
  const gotV = arr(gs.volumes).map(obj);
  if (!same(askedV.map((v) => v.name).sort(), gotV.map((v) => v.name).sort())) d('spec.volumes', askedV.map((v) => v.name), gotV.map((v) => v.name));
  for (const a of askedV) {
    const g = gotV.find((v) => v.name === a.name);
    if (!g) continue;
    const kinds = Object.keys(g).filter((k) => k !== 'name');
    if (!same(Object.keys(a).filter((k) => k !== 'name'), kinds)) d(`volumes.${String(a.name)}`, a, g);
    else if (a.emptyDir) {
      const ae = obj(a.emptyDir);
      const ge = obj(g.emptyDir);
      if ((ae.medium ?? '') !== (ge.medium ?? '') || quantity(ae.sizeLimit) !== quantity(ge.sizeLimit)) d(`volumes.${String(a.name)}.emptyDir`, ae, ge);
    } else if (a.ephemeral) {
      // The claim the pod will get: its class, size, access and mode as asked (a mutated
      // template could give the workspace another class or size, or none of its limits).
      const at = obj(obj(obj(a.ephemeral).volumeClaimTemplate).spec);
      const gt = obj(obj(obj(g.ephemeral).volumeClaimTemplate).spec);
      const size = (t: Obj) => quantity(obj(obj(t.resources).requests).storage);
      if (at.storageClassName !== gt.storageClassName || size(at) !== size(gt) || !same(at.accessModes, gt.accessModes) || (gt.volumeMode ?? 'Filesystem') !== at.volumeMode
        || obj(obj(gt.resources).limits).storage !== undefined || gt.selector !== undefined || gt.dataSource !== undefined || gt.dataSourceRef !== undefined || gt.volumeName !== undefined) {
        d(`volumes.${String(a.name)}.ephemeral`, at, gt);
      }
    }
  }
  // A started pod (a warm-pool pod read again at claim) is past brig's gate and bound to a node.
  const gates = arr(gs.schedulingGates).map((g) => obj(g).name);
  if (!o.started && !gates.includes(VERIFY_GATE)) d('spec.schedulingGates', [VERIFY_GATE], gates);
  if (o.started && gates.length > 0) d('spec.schedulingGates', [], gates);
  if (!o.started && typeof gs.nodeName === 'string' && gs.nodeName !== '') d('spec.nodeName', undefined, gs.nodeName);
  return out;
}

/**
 * Create → verify → start for a Kubernetes jail (issue 33 item 3): the pod is created behind
 * brig's scheduling gate, read back as the API server admitted it, compared with what was asked
 * (pod-spec.ts verifyPod), and only then is the gate lifted; drift is refused, the pod deleted
 * before it was ever scheduled, and the refusal reported with every drifted field named.
 *
 * Guarantees: no container of a pod that drifted ever starts (the scheduler does not bind a
 * gated pod, and the gate is lifted only after the read-back verified); the pod a run gets is
 * the verified one — the gate is lifted with the resourceVersion that was verified, so a change
 * between the read-back and the lift fails the lift (409) instead of running unverified.
 * Threat: a mutating admission webhook or policy engine changing the pod (a sidecar, a volume,
 * a RuntimeClass, a dropped security line). Trusts: the API server's stored object.
 */
import { BrigError } from '../../util/errors.js';
import type { KubeApi } from './kube-api.js';
import { CONTAINER, VERIFY_GATE, quantity, verifyPod, type Drift, type PodManifest } from './pod-spec.js';

export interface LaunchedPod {
  name: string;
  uid: string;
  /** The admitted pod, verified. */
  admitted: Record<string, unknown>;
}

export interface LaunchHooks {
  /** Drift found: called before the pod is deleted (the supervisor ledgers it). */
  onDrift?(name: string, drift: Drift[]): void;
}

type Obj = Record<string, unknown>;
const obj = (v: unknown): Obj => (v && typeof v === 'object' && !Array.isArray(v) ? (v as Obj) : {});

/** Creates the pod gated, verifies the read-back, lifts the gate; drift: deleted and refused. */
export async function launchVerified(api: KubeApi, manifest: PodManifest, hooks: LaunchHooks = {}): Promise<LaunchedPod> {
  const pod = await createVerified(api, manifest, hooks);
  await liftGate(api, pod);
  return pod;
}

/** Creates the pod gated and verifies the read-back; drift: deleted and refused. Nothing runs until liftGate. */
export async function createVerified(api: KubeApi, manifest: PodManifest, hooks: LaunchHooks = {}): Promise<LaunchedPod> {
  const name = manifest.metadata.name;
  await api.createPod(manifest);
  const admitted = await api.getPod(name);
  if (!admitted) throw new BrigError('jail_failed', `pod ${name} was created but cannot be read back`);
  const drift = verifyPod(manifest, admitted);
  if (drift.length > 0) {
    hooks.onDrift?.(name, drift);
    await api.deletePod(name).catch(() => undefined);
    throw new BrigError('jail_unverified', `pod ${name} was changed by admission before it ran (${drift.map((x) => x.field).join(', ')}): refused, deleted before it was scheduled`, {
      data: { drift: drift.map((x) => x.field) },
      hint: "Something in the cluster's admission chain (a mutating webhook, a policy engine) changes brig's pods: exempt brig's namespace from it.",
    });
  }
  return { name, uid: String(obj(admitted.metadata).uid ?? ''), admitted };
}

/** Lifts brig's gate at the verified version only: a change since the read-back is a conflict (409), not a run. */
export async function liftGate(api: KubeApi, pod: LaunchedPod): Promise<void> {
  await workspaceBound(api, pod);
  const meta = obj(pod.admitted.metadata);
  const gates = (obj(pod.admitted.spec).schedulingGates as { name: string }[] | undefined) ?? [];
  await api.patchPod(pod.name, { metadata: { resourceVersion: meta.resourceVersion }, spec: { schedulingGates: gates.filter((g) => g.name !== VERIFY_GATE) } });
}

/** How long a workspace claim may stay unbound before the run fails, and how often it is read. */
const CLAIM_BOUND_MS = 60_000;
const CLAIM_POLL_MS = 40;

/**
 * A pod whose workspace is a generic ephemeral volume: its claim (made by Kubernetes' ephemeral
 * volume controller as `<pod>-workspace`) read until Bound and compared with the verified
 * template — the class and the size asked, nothing else bound to it. Lifting the gate before
 * the claim is bound lets the scheduler try, fail ("unbound immediate PersistentVolumeClaims")
 * and back off a second; a claim changed after the template was verified is refused.
 */
export async function workspaceBound(api: KubeApi, pod: LaunchedPod): Promise<void> {
  const vol = ((obj(pod.admitted.spec).volumes as Obj[] | undefined) ?? []).find((v) => v.name === 'workspace');
  if (!vol?.ephemeral) return;
  const template = obj(obj(obj(vol.ephemeral).volumeClaimTemplate).spec);
  const claim = `${pod.name}-workspace`;
  const until = Date.now() + CLAIM_BOUND_MS;
  for (;;) {
    const pvc = await api.getClaim(claim);
    if (pvc) {
      const owner = ((obj(pvc.metadata).ownerReferences as Obj[] | undefined) ?? []).some((o) => o.kind === 'Pod' && o.uid === pod.uid);
      const spec = obj(pvc.spec);
      const size = (s: Obj) => quantity(obj(obj(s.resources).requests).storage);
      if (!owner || spec.storageClassName !== template.storageClassName || size(spec) !== size(template) || spec.dataSource !== undefined || spec.dataSourceRef !== undefined) {
        throw new BrigError('jail_unverified', `the workspace claim ${claim} is not the one the verified pod asked for (class ${String(spec.storageClassName)}, ${String(obj(obj(spec.resources).requests).storage)}, owned by this pod: ${owner})`, {
          hint: 'Something in the admission chain changed the claim (a mutating webhook on PersistentVolumeClaims?): brig does not run the pod on it.',
        });
      }
      if (obj(pvc.status).phase === 'Bound') return;
    }
    if (Date.now() > until) {
      throw new BrigError('jail_failed', `the workspace claim ${claim} (StorageClass ${String(template.storageClassName)}) was not bound within ${CLAIM_BOUND_MS / 1000} s`, {
        hint: `Does the StorageClass exist, with a provisioner that answers? kubectl describe pvc ${claim} shows why.`,
      });
    }
    await new Promise((r) => setTimeout(r, CLAIM_POLL_MS));
  }
}

export interface PodEnd {
  exitCode: number;
  oomKilled: boolean;
  /** Pod phase at the end (Succeeded, Failed). */
  phase: string;
  reason: string | null;
}

/**
 * Why the pod cannot run its child, when its state says so for good: the image is not on the
 * node (`imagePullPolicy: Never`), a container cannot be made. Null while it may still start. Waiting reasons that pass (ContainerCreating,
 * PodInitializing) are not failures.
 */
export function podStuck(pod: unknown): { reason: string; message: string } | null {
  const status = obj(obj(pod).status);
  const stuck = new Set(['ErrImageNeverPull', 'ErrImagePull', 'ImagePullBackOff', 'InvalidImageName', 'CreateContainerConfigError', 'CreateContainerError', 'RunContainerError']);
  for (const c of [...((status.initContainerStatuses as Obj[] | undefined) ?? []), ...((status.containerStatuses as Obj[] | undefined) ?? [])]) {
    const waiting = obj(obj(c.state).waiting);
    if (typeof waiting.reason === 'string' && stuck.has(waiting.reason)) return { reason: waiting.reason, message: `${String(c.name)}: ${String(waiting.message ?? waiting.reason).slice(0, 300)}` };
  }
  return null;
}

/** Why the scheduler cannot place the pod (its PodScheduled condition: Unschedulable), else null. */
export function podUnschedulable(pod: unknown): string | null {
  const conds = (obj(obj(pod).status).conditions as Obj[] | undefined) ?? [];
  const c = conds.find((x) => x.type === 'PodScheduled' && x.status === 'False' && x.reason === 'Unschedulable');
  return c ? String(c.message ?? 'Unschedulable').slice(0, 300) : null;
}

/** The child container's end, when the pod has one (null while it runs). */
export function podEnd(pod: unknown): PodEnd | null {
  const status = obj(obj(pod).status);
  const phase = String(status.phase ?? '');
  const cs = ((status.containerStatuses as Obj[] | undefined) ?? []).find((c) => c.name === CONTAINER);
  const term = obj(obj(cs?.state).terminated);
  if (cs && Object.keys(term).length > 0) {
    const reason = typeof term.reason === 'string' ? term.reason : null;
    return { exitCode: Number(term.exitCode ?? -1), oomKilled: reason === 'OOMKilled', phase, reason };
  }
  // Ended before its container did (activeDeadlineSeconds, eviction): no exit code of its own.
  if (phase === 'Failed' || phase === 'Succeeded') return { exitCode: phase === 'Succeeded' ? 0 : -1, oomKilled: false, phase, reason: typeof status.reason === 'string' ? status.reason : null };
  return null;
}

/** Polls the pod until its child ended (or `timeoutMs`): its end, or null at the timeout. */
export async function waitPodEnd(api: KubeApi, name: string, timeoutMs: number, everyMs = 250): Promise<PodEnd | null> {
  const until = Date.now() + timeoutMs;
  for (;;) {
    const pod = await api.getPod(name);
    if (!pod) throw new BrigError('jail_failed', `pod ${name} is gone`);
    const end = podEnd(pod);
    if (end) return end;
    if (Date.now() >= until) return null;
    await new Promise((r) => setTimeout(r, everyMs));
  }
}

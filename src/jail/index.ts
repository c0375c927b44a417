/**
 * The jail part's public surface. Callers get brig's words (JailDriver, Jail, JailSpec);
 * the Docker types stay inside jail/docker/.
 */
export type {
  CollectCaps,
  CollectObserver,
  CollectOptions,
  JailVerified,
  CollectReport,
  CollectedFile,
  EngineInfo,
  Jail,
  JailArtifact,
  JailDriver,
  JailExit,
  JailInput,
  JailLimits,
  JailSpec,
  LabelledResource,
  StreamTails,
} from './types.js';
export { POOL_KEY_PREFIX, isPoolKey } from './types.js';
export { WarmPool, type WarmPoolOptions, type PoolEvent } from './docker/pool.js';
export { DockerJailDriver, ownerForHome, type DockerJailDriverOptions } from './docker/docker-jail-driver.js';
export { K8sJailDriver, type K8sJailDriverOptions } from './k8s/k8s-jail-driver.js';
export { K8sWarmPool, type K8sWarmPoolOptions } from './k8s/k8s-pool.js';
export { foreignPolicies } from './k8s/pod-spec.js';
export { kubernetesDoctor, judgeK8sProbe, judgePids, judgePolicy, judgeWorkspace, allowPairPolicy, linkLocalHops, K8S_PROBE_SCRIPT, type K8sProbe } from './k8s/k8s-doctor.js';
export { HARDENED, JAIL_USER, WORKSPACE_DIR, BROKER_DIR, ARTIFACTS_DIR, renderCreateBody } from './docker/profile.js';
export { verifyInspect, type Drift } from './docker/verify.js';
export { LIMIT_FLOORS } from './docker/limits.js';
export { SECCOMP_PROFILE, SECCOMP_REMOVED, SECCOMP_RULES_REMOVED } from './docker/seccomp.js';
export { CHILD_IMAGE_REPO, CHILD_RUNTIME_DIR } from './docker/image.js';
export { TOOLBOX_NAME } from './docker/toolbox.js';
export { LABELS } from './docker/labels.js';
export { judgeDoctor, gatherDoctorFacts, helperHint, type DoctorFacts, type HomeFacts } from './doctor.js';
export { PROBE_SCRIPT, hostAddresses, judgeProbe, parseProbe, probeArgv, type ProbeReport, type ProbeCheck } from './probe.js';
export { runJailOnce, endReasonOf, DEFAULT_COLLECT_CAPS, type RunOnceOptions, type RunOnceResult, type RunOnceTimings } from './run-once.js';
export { artifactTreeProblem, identityOf, MAX_ARTIFACT_ENTRIES, type ArtifactIdentity } from './artifact-tree.js';
export { cisSection5, SENSITIVE_DIRS, type CisInspect, type CisRow } from './docker/cis.js';

/** runs/: the supervisor — admission, lifecycle, watchdog, control, resume, events. */
export { SpawnArgsSchema, toSpawnRequest, type SpawnArgs } from './spawn-args.js';
export {
  RUN_STATUSES,
  END_REASONS,
  KILLED_BY,
  TERMINAL_STATUSES,
  RUN_KINDS,
  SPAWN_BOUNDS,
  SPAWN_FIELDS,
  REF_ID_RE,
  DEFAULT_SETTINGS,
  SpawnRequestSchema,
  RunStatusSchema,
  EndReasonSchema,
  KilledBySchema,
} from './types.js';
export type {
  RunStatus,
  EndReason,
  KilledBy,
  TerminalStatus,
  RunKind,
  SpawnRequest,
  SpawnRequestInput,
  SpawnContext,
  SpawnPacket,
  RunRecord,
  RunError,
  ProgressEvent,
  SupervisorEvent,
  SupervisorEventType,
  ListFilter,
  WaitOptions,
  KillOptions,
  SteerOutcome,
  EventsOptions,
  ReconcileReport,
  Supervisor,
  SupervisorSettings,
  Brig,
} from './types.js';
export { createSupervisor } from './supervisor.js';
export { EventBus, passesRunFilter, type Subscription } from './event-bus.js';
export { jailLimitsFor, CHILD_PATHS, egressEnv } from './launch.js';
export type { ShutdownOptions, ShutdownReport, SupervisorCore } from './supervisor.js';
export { SupervisorSettingsSchema, resolveSettings } from './settings.js';
export type { LeasePort, LeaseGrant, LeaseIssue, BrokerPort, BrokerHandle, ResultsPort, Clock, SupervisorDeps, SupervisorHooks, RunEndMeta, AgentPort, StoragePort } from './ports.js';
export type { StorageState } from './admission.js';
export type { ModelPort, ModelInfo, ModelTurn, ModelUsage, ConversationMessage, ToolSchema, ToolCall } from './model-port.js';
export { decideAdmission, nextToStart } from './admission.js';
export { AdmissionSwitch, readAdmission, reasonHash, type AdmissionRecord } from './admission-pause.js';
export { RunStore, isRunId } from './run-store.js';
export { elapsedMs } from './state-machine.js';
export { splitTiming, renderTiming, PHASE_OF, type TimingSplit, type TimingPhase } from './run-timing.js';
export { SEND_MODES, MAX_SEND_WAIT_MS, MAX_HISTORY_PAGE } from './sessions.js';
export type { SendMode, SendOptions, SendOutcome, HistoryPage } from './sessions.js';

/**
 * brig's library entry: curated named exports only.
 */
export { BrigError, isBrigError } from './protocol/index.js';
export type { ErrorCode, ErrorKind, Brig, OperatorSurface, FleetReport, LeaseView, RunResult, ResultOptions } from './protocol/index.js';
export { loadConfig } from './config/index.js';
export type { BrigConfig } from './config/index.js';
export { EXPLAIN_REFS, FsResultStore, MAX_ENVELOPE_REFS, condense, renderEnvelope, renderExplain, savingsFor, rollUpSavings } from './results/index.js';
export type { ResultRef, ResultKind, RunManifest, Condensed, CondenseOptions, CondenseStrategy, EnvelopeInput, ExplainInput, Savings } from './results/index.js';
export { Slicer, DuckdbHelperPool, lockedQuery } from './slice/index.js';
export type { SliceOutput, ReadRange, GrepOptions, LockedQueryOptions, LockedQueryResult } from './slice/index.js';
export { OpenAICompatibleProvider, DEFAULT_MODEL, pullDefaultModel, registerGguf, DEFAULT_RUNTIME_DIR, localModelProblem } from './models/index.js';
export type { PullResult } from './models/index.js';
export type { ModelProvider } from './models/index.js';
export { LeaseStore, attenuate, grantAllows, loadPolicyFile, policyFileFor, profileOf, profileFor, explainPolicy, CAPABILITIES, LIMIT_KEYS } from './lease/index.js';
export type { Capability, Grant, Limits, Posture, LeaseRequest, LeaseRecord, Refusal, Policy, ResolvedProfile } from './lease/index.js';
export { FileLedger, verifyLedger } from './ledger/index.js';
export type { Ledger, LedgerEvent, LedgerReport } from './ledger/index.js';
export { BrokerServer, METHODS as BROKER_METHODS } from './broker/index.js';
export type { BrokerCall, Handler as BrokerHandler, Handlers as BrokerHandlers, Method as BrokerMethod, BrokerRunHandle } from './broker/index.js';
export { startDaemon, openOperator, explainRun, fleetReport, Operator } from './daemon/index.js';
export { openBrig, type OpenBrigOptions } from './open-brig.js';
export { open, clientOf, outcome } from './handles.js';
export type { BrigClient, RunHandle, RunRefs, EventStream, Outcome, SpawnOptions } from './handles.js';
export { brigPaths } from './config/index.js';
export { applyRun, type ApplyRunOptions, type ApplyOutcome } from './repo/index.js';
export type { Daemon, PolicyCheck } from './daemon/index.js';
export { agentCatalogFor, toolSurface } from './agents/index.js';
export { defineGraphText, definitionOf, explainGraph, GraphStore, graphEnvelope, renderGraphExplain } from './graphs/index.js';
export type { GraphDefinition, GraphRecord, GraphStarted, GraphSurface, GraphSpec } from './protocol/index.js';
export type { AgentSpec, AgentFrontmatter, AgentCatalog, AgentTool } from './agents/index.js';
export { ApiClient } from './client/index.js';
export {
  createSupervisor,
  SpawnArgsSchema,
  toSpawnRequest,
  SpawnRequestSchema,
  SPAWN_BOUNDS,
  SPAWN_FIELDS,
  REF_ID_RE,
  DEFAULT_SETTINGS as SUPERVISOR_DEFAULTS,
  END_REASONS,
  KILLED_BY,
  RUN_STATUSES,
  elapsedMs,
  renderTiming,
  splitTiming,
} from './runs/index.js';
export type { RefService } from './refs/index.js';
export type {
  Supervisor,
  SpawnRequest,
  SpawnRequestInput,
  SpawnPacket,
  RunRecord,
  RunStatus,
  EndReason,
  KilledBy,
  ProgressEvent,
  SupervisorEvent,
  SupervisorSettings,
  SteerOutcome,
} from './runs/index.js';

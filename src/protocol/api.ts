/**
 * The HTTP API's routes as plain data: each route's name (its OpenAPI operationId), method,
 * path template and what it answers. The server (api/routes.ts) attaches each route's schemas
 * and handler to these names; the API client builds its calls from them; the
 * `route_not_found` hint lists them. Nothing about a route is written twice.
 */
import type { Result } from './errors.js';
import type { AdmissionChange, AdmissionState, FleetReport, LeaseView, LedgerReport, DoctorCheck, QueryResult } from './operator.js';
import type { ResultRef, RunManifest, RunResult, SliceOutput, CondenseStrategy, GrepOptions } from './refs.js';
import type { KilledBy, RunKind, RunRecord, RunStatus, SpawnRequest, SpawnRequestInput } from './runs.js';
import type { HistoryPage, ResumeOptions, SendMode, SendOutcome, SteerOutcome } from './supervisor.js';
import type { GraphDefinition, GraphExplanation, GraphRecord, GraphStarted } from './graphs.js';

export const API_VERSION = 'v1';

export const API_ROUTES = {
  health: { method: 'GET', path: '/v1/health' },
  openapi: { method: 'GET', path: '/v1/openapi.json' },
  metrics: { method: 'GET', path: '/v1/metrics' },
  fleet: { method: 'GET', path: '/v1/fleet' },
  events: { method: 'GET', path: '/v1/events' },
  listRuns: { method: 'GET', path: '/v1/runs' },
  spawn: { method: 'POST', path: '/v1/runs' },
  checkSpawn: { method: 'POST', path: '/v1/runs/check' },
  getRun: { method: 'GET', path: '/v1/runs/{run}' },
  wait: { method: 'POST', path: '/v1/runs/{run}/wait' },
  kill: { method: 'POST', path: '/v1/runs/{run}/kill' },
  steer: { method: 'POST', path: '/v1/runs/{run}/steer' },
  resume: { method: 'POST', path: '/v1/runs/{run}/resume' },
  replay: { method: 'POST', path: '/v1/runs/{run}/replay' },
  send: { method: 'POST', path: '/v1/runs/{run}/send' },
  history: { method: 'GET', path: '/v1/runs/{run}/history' },
  listRefs: { method: 'GET', path: '/v1/runs/{run}/refs' },
  manifest: { method: 'GET', path: '/v1/runs/{run}/manifest' },
  result: { method: 'GET', path: '/v1/runs/{run}/result' },
  envelope: { method: 'GET', path: '/v1/runs/{run}/envelope' },
  listLeases: { method: 'GET', path: '/v1/leases' },
  getLease: { method: 'GET', path: '/v1/leases/{lease}' },
  revokeLease: { method: 'POST', path: '/v1/leases/{lease}/revoke' },
  auditVerify: { method: 'GET', path: '/v1/audit/verify' },
  auditQuery: { method: 'POST', path: '/v1/audit/query' },
  doctor: { method: 'GET', path: '/v1/doctor' },
  admissionStatus: { method: 'GET', path: '/v1/admission' },
  admissionPause: { method: 'POST', path: '/v1/admission/pause' },
  admissionResume: { method: 'POST', path: '/v1/admission/resume' },
  refRead: { method: 'POST', path: '/v1/refs/{ref}/read' },
  refGrep: { method: 'POST', path: '/v1/refs/{ref}/grep' },
  refJq: { method: 'POST', path: '/v1/refs/{ref}/jq' },
  refSql: { method: 'POST', path: '/v1/refs/{ref}/sql' },
  refJsonpath: { method: 'POST', path: '/v1/refs/{ref}/jsonpath' },
  graphDefine: { method: 'POST', path: '/v1/graphs/define' },
  graphRun: { method: 'POST', path: '/v1/graphs' },
  listGraphs: { method: 'GET', path: '/v1/graphs' },
  getGraph: { method: 'GET', path: '/v1/graphs/{graph}' },
  graphWait: { method: 'POST', path: '/v1/graphs/{graph}/wait' },
  graphCancel: { method: 'POST', path: '/v1/graphs/{graph}/cancel' },
  graphDecide: { method: 'POST', path: '/v1/graphs/{graph}/decide' },
  graphExplain: { method: 'GET', path: '/v1/graphs/{graph}/explain' },
} as const satisfies Record<string, { method: 'GET' | 'POST'; path: string }>;

export type RouteName = keyof typeof API_ROUTES;

/**
 * The faces that call the API, as each says in `X-Brig-Client` (the daemon's log line of a
 * request names its caller; anything else, or nothing, is `http`).
 */
export const API_CALLERS = ['cli', 'mcp', 'console', 'library'] as const;
export type ApiCaller = (typeof API_CALLERS)[number];

/**
 * Routes that may hold a request open as long as a run lasts (a wait, a synchronous spawn, the
 * event stream, a conversation turn): never "slow" in the daemon's log.
 */
export const LONG_ROUTES: ReadonlySet<RouteName> = new Set<RouteName>(['events', 'wait', 'spawn', 'send', 'graphWait', 'doctor']);

/** The names a path template takes (`{run}` → `run`). */
type ParamNames<P extends string> = P extends `${string}{${infer N}}${infer Rest}` ? N | ParamNames<Rest> : never;
export type RouteParams<N extends RouteName> = { [K in ParamNames<(typeof API_ROUTES)[N]['path']>]: string };

/** What each route takes: its query (GET) or its JSON body (POST), as a client sends it. */
export interface RouteInputs {
  health: undefined;
  openapi: undefined;
  metrics: undefined;
  fleet: { since?: string; top?: number };
  events: { runId?: string; rootRunId?: string; graph?: string; lastEventId?: string };
  listRuns: { status?: RunStatus[]; kind?: RunKind[]; rootRunId?: string; parentRunId?: string; label?: string; since?: number; limit?: number };
  spawn: SpawnRequestInput;
  checkSpawn: SpawnRequestInput;
  getRun: undefined;
  wait: { timeoutMs?: number };
  kill: { confirm: boolean; by?: Extract<KilledBy, 'operator' | 'system'> };
  steer: { message: string };
  resume: ResumeOptions;
  replay: Record<string, never>;
  send: { text: string; mode?: SendMode; timeoutMs?: number; maxTurns?: number; conversation?: string };
  history: { offset?: number; limit?: number };
  listRefs: undefined;
  manifest: undefined;
  result: { strategy?: CondenseStrategy };
  envelope: undefined;
  listLeases: undefined;
  getLease: undefined;
  revokeLease: { confirm: true; reason?: string };
  auditVerify: undefined;
  auditQuery: { sql: string; maxRows?: number };
  doctor: { build?: boolean };
  admissionStatus: undefined;
  admissionPause: AdmissionChange;
  admissionResume: AdmissionChange;
  refRead: { offset?: number; length?: number } | { line: number; lines?: number };
  refGrep: { pattern: string } & GrepOptions;
  refJq: { expr: string };
  refSql: { query: string; maxRows?: number };
  refJsonpath: { expr: string; maxRows?: number };
  graphDefine: { spec: string; source?: string };
  graphRun: { spec: string; source?: string; by?: string };
  listGraphs: undefined;
  getGraph: undefined;
  graphWait: { timeoutMs?: number };
  graphCancel: { confirm: boolean };
  graphDecide: { node: string; decision: 'approve' | 'reject'; note?: string; by?: string };
  graphExplain: undefined;
}

/** What each route answers on success (JSON routes; events and metrics stream text). */
export interface RouteReplies {
  health: { ok: true; api: string };
  openapi: Record<string, unknown>;
  metrics: string;
  fleet: { fleet: FleetReport };
  events: never;
  listRuns: { runs: RunRecord[]; more?: number };
  spawn: { run: RunRecord };
  checkSpawn: { request: SpawnRequest };
  getRun: { run: RunRecord };
  wait: { run: RunRecord };
  kill: { run: RunRecord };
  steer: { steer: SteerOutcome };
  resume: { run: RunRecord };
  replay: { run: RunRecord };
  send: { send: SendOutcome };
  history: { history: HistoryPage };
  listRefs: { refs: ResultRef[] };
  manifest: RunManifest;
  result: RunResult;
  envelope: RunResult;
  listLeases: { leases: LeaseView[]; unreadable: string[] };
  getLease: { lease: LeaseView; lineage: LeaseView[] };
  revokeLease: { revoked: LeaseView[] };
  auditVerify: LedgerReport;
  auditQuery: QueryResult;
  doctor: { checks: DoctorCheck[] };
  admissionStatus: { admission: AdmissionState };
  admissionPause: { admission: AdmissionState };
  admissionResume: { admission: AdmissionState };
  refRead: SliceOutput;
  refGrep: SliceOutput;
  refJq: SliceOutput;
  refSql: SliceOutput;
  refJsonpath: SliceOutput;
  graphDefine: { definition: GraphDefinition };
  graphRun: { graph: GraphStarted };
  listGraphs: { graphs: GraphRecord[] };
  getGraph: { graph: GraphRecord };
  graphWait: { graph: GraphRecord };
  graphCancel: { graph: GraphRecord };
  graphDecide: { graph: GraphRecord };
  graphExplain: { explanation: GraphExplanation };
}

export type RouteReply<N extends RouteName> = RouteReplies[N];
export type RouteResult<N extends RouteName> = Result<RouteReplies[N]>;

/** A route's path with its parameters filled in (each one URL-encoded). */
export function routePath<N extends RouteName>(name: N, params: RouteParams<N>): string {
  return API_ROUTES[name].path.replace(/\{([a-z]+)\}/g, (_, k: string) => encodeURIComponent((params as Record<string, string>)[k] ?? ''));
}

/** Every route, as the `route_not_found` hint lists them: `GET /v1/runs/{run}`, … */
export function routeList(): string {
  return Object.values(API_ROUTES)
    .map((r) => `${r.method} ${r.path}`)
    .join(', ');
}

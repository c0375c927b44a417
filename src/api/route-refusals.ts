/**
 * Which error codes each route can answer, for the OpenAPI document's declared error responses
 * (contract.ts). Part is derived from the route's shape — a query or a JSON body can be
 * `invalid_input` (a POST's also `body_too_large`), a path parameter that names nothing is its
 * kind's `*_not_found` (server.ts checkParams), anything can be `internal` — and part is what
 * the route's callee refuses with, listed here per route from the code that raises it. The
 * status of each code is the server's own (httpStatusOf), never written twice. A route left out
 * answers only its shape's errors.
 */
import type { ErrorCode, RouteName } from '../protocol/index.js';
import { API_ROUTES } from '../protocol/index.js';
import { httpStatusOf } from '../util/errors.js';

const BY_PARAM: Readonly<Record<string, ErrorCode>> = { run: 'run_not_found', ref: 'ref_not_found', lease: 'lease_not_found', graph: 'graph_not_found' };

/** What a spawn's pre-check and admission refuse with (runs/intake.ts, admission.ts, lease-store.ts, run-repo.ts). */
const ADMIT: readonly ErrorCode[] = ['invalid_input', 'invalid_policy', 'capability_denied', 'posture_downgrade', 'artifact_missing', 'repo_invalid', 'model_unavailable', 'depth_exceeded', 'children_exceeded', 'tree_exceeded', 'queue_full', 'admission_paused', 'storage_full'];
/** A new run from an old one (resume, replay, a steer's respawn) is admitted like a spawn. */
const AGAIN: readonly ErrorCode[] = ['admission_paused', 'queue_full', 'tree_exceeded', 'children_exceeded', 'storage_full', 'shutting_down'];
/** A bounded slice over a ref (slice/slicer.ts). */
const SLICE: readonly ErrorCode[] = ['rate_limited', 'timeout', 'output_too_large'];
/** A graph route on a Brig that serves none (routes.ts graphsOf). */
const GRAPHS: readonly ErrorCode[] = ['daemon_unavailable'];

export const ROUTE_REFUSALS: { readonly [N in RouteName]?: readonly ErrorCode[] } = {
  metrics: ['daemon_unavailable'],
  events: ['daemon_unavailable'],
  spawn: [...ADMIT, 'shutting_down'],
  checkSpawn: ADMIT,
  kill: ['invalid_input', 'not_running'],
  steer: ['invalid_input', 'rate_limited', 'not_running', ...AGAIN],
  resume: ['resume_unavailable', ...AGAIN],
  replay: ['replay_unavailable', ...AGAIN],
  send: ['invalid_input', 'not_running', 'conversation_not_found', 'rate_limited'],
  history: ['ref_not_found'], // a run with no transcript (runs/sessions.ts)
  listRefs: ['not_running'],
  manifest: ['not_running'],
  result: ['not_running', 'model_unavailable'],
  revokeLease: ['invalid_input'],
  auditQuery: ['query_refused', 'query_failed', 'timeout', 'output_too_large', 'rate_limited'],
  admissionPause: ['storage_full'],
  admissionResume: ['storage_full'],
  refRead: SLICE,
  refGrep: SLICE,
  refJq: [...SLICE, 'query_failed'],
  refSql: [...SLICE, 'query_refused', 'query_failed'],
  refJsonpath: [...SLICE, 'query_failed'],
  graphDefine: [...GRAPHS, 'invalid_input'],
  graphRun: [...GRAPHS, 'invalid_input', 'capability_denied', 'children_exceeded', 'depth_exceeded', 'storage_full'],
  listGraphs: GRAPHS,
  getGraph: GRAPHS,
  graphWait: GRAPHS,
  graphCancel: [...GRAPHS, 'invalid_input', 'not_running'],
  graphDecide: [...GRAPHS, 'invalid_input', 'not_running', 'capability_denied'],
  graphExplain: GRAPHS,
};

/** Every error code route N can answer, by HTTP status (ascending). */
export function routeRefusals(name: RouteName, shape: { query?: unknown; body?: unknown }): Map<number, ErrorCode[]> {
  const r = API_ROUTES[name];
  const codes = new Set<ErrorCode>();
  if (shape.query !== undefined || r.method === 'POST') codes.add('invalid_input');
  if (r.method === 'POST') codes.add('body_too_large');
  for (const m of r.path.matchAll(/\{([a-z]+)\}/g)) codes.add(BY_PARAM[m[1]!]!);
  for (const c of ROUTE_REFUSALS[name] ?? []) codes.add(c);
  codes.add('internal');
  const out = new Map<number, ErrorCode[]>();
  for (const c of codes) out.set(httpStatusOf(c), [...(out.get(httpStatusOf(c)) ?? []), c]);
  return new Map([...out].sort(([a], [b]) => a - b));
}

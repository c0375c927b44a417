/**
 * The API's one table: for every route of the contract (protocol/api.ts) its summary, the
 * schema of its query or body, what it answers, and its handler, typed by its own schema. The
 * server matches and validates from this table before any handler runs; the OpenAPI document
 * (contract.ts) and the client's calls (client/) come from the same names. A handler only
 * translates: behaviour lives behind the Brig it is handed (runs, refs, operator).
 */
import type http from 'node:http';
import { z } from 'zod';
import {
  API_VERSION,
  CAPABILITIES,
  END_REASONS,
  KILLED_BY,
  RUN_KINDS,
  RUN_STATUSES,
  MAX_HISTORY_PAGE,
  MAX_SEND_WAIT_MS,
  SEND_MODES,
  MAX_SEND_TURNS,
  GRAPH_STATES,
  GRAPH_ID,
  type Brig,
  type GraphSurface,
  type SpawnRequestInput,
  type RouteName,
  type RouteReplies,
} from '../protocol/index.js';
import { SpawnRequestSchema } from '../runs/index.js';
import { BrigError, type Result } from '../util/errors.js';
import type { Metrics } from '../util/metrics.js';
import { windowMinutes } from '../util/window.js';

const ID = z.string().min(1).max(200);
const num = z.coerce.number();
const many = <T extends z.ZodType>(t: T) => z.array(t);

/** A run record's fields a client can rely on; the record carries more (docs/supervisor.md). */
export const RunView = z.looseObject({
  id: z.string(),
  rootRunId: z.string(),
  parentRunId: z.string().nullable(),
  depth: z.number(),
  kind: z.enum(RUN_KINDS),
  label: z.string().nullable(),
  status: z.enum(RUN_STATUSES),
  endReason: z.enum(END_REASONS).nullable(),
  killedBy: z.enum(KILLED_BY).nullable(),
  createdAt: z.string(),
  startedAt: z.string().nullable(),
  endedAt: z.string().nullable(),
  stepsExecuted: z.number(),
  error: z.object({ code: z.string(), message: z.string() }).nullable(),
});
const Run = z.object({ run: RunView });
const Slice = z.looseObject({ ref: z.string(), verb: z.string(), returned: z.number(), more: z.number() });
const Lease = z.looseObject({ id: z.string(), state: z.string(), caps: z.array(z.enum(CAPABILITIES)) });

const GraphBody = z.object({ spec: z.string().min(1).max(2 * 1024 * 1024), source: z.string().min(1).max(200).optional(), by: z.string().min(1).max(128).optional() });
const GraphView = z.looseObject({ id: z.string(), state: z.enum(GRAPH_STATES), order: z.array(z.string()), envelope: z.string().nullable(), manifestRef: z.string().nullable() });
const sourceOf = (i: { source?: string | undefined; by?: string | undefined }) => ({ ...(i.source !== undefined ? { source: i.source } : {}), ...(i.by !== undefined ? { by: i.by } : {}) });

const Admission = z.object({ paused: z.boolean(), since: z.string().nullable(), by: z.string().nullable(), reasonHash: z.string().nullable(), queued: z.number().nullable() });
const AdmissionBody = z.object({ by: z.string().min(1).max(128).optional(), reason: z.string().max(4096).optional() });
const admissionChange = (i: { by?: string | undefined; reason?: string | undefined }) => ({ by: i.by ?? 'operator', ...(i.reason !== undefined ? { reason: i.reason } : {}) });

function graphsOf(brig: Brig): GraphSurface {
  if (!brig.graphs) throw new BrigError('daemon_unavailable', 'this API serves no graphs', { hint: 'Run graphs through a daemon (`brig serve`) or in this process (`brig graph run`).' });
  return brig.graphs;
}

/** What a handler is handed: the path's parameters, the validated input, the Brig, the exchange. */
export interface RouteContext<I> {
  params: Record<string, string>;
  input: I;
  brig: Brig;
  metrics?: Metrics | undefined;
  req: http.IncomingMessage;
  res: http.ServerResponse;
}

/** A handler's answer: a status (200 when left out) and a JSON body; `streamed` when it wrote the response itself. */
export type Answer<N extends RouteName> = { status?: number; body: RouteReplies[N] } | 'streamed';

export interface RouteDef<N extends RouteName, I = unknown> {
  summary: string;
  /** GET: the query's schema. A repeatable parameter is an array. */
  query?: z.ZodObject;
  /** POST: the body's schema. */
  body?: z.ZodType;
  /**
   * The body's schema is applied by the handler's callee, not here (spawn: the supervisor
   * parses with this same schema, so every face gets one error format); the handler gets the
   * JSON object as sent.
   */
  validatedBy?: 'supervisor';
  /** Success statuses and their body (`text` for non-JSON bodies): for the OpenAPI document. */
  ok: Record<number, z.ZodType | 'text/event-stream' | 'text/plain'>;
  handle(c: RouteContext<I>): Promise<Answer<N>>;
}

type InputOf<Q, B> = Q extends z.ZodType ? z.output<Q> : B extends z.ZodType ? z.output<B> : undefined;

/**
 * One entry for route N: its handler's input is typed by the entry's own query or body
 * schema (curried so that N is named and the schemas are inferred).
 */
const route =
  <N extends RouteName>() =>
  <Q extends z.ZodObject | undefined = undefined, B extends z.ZodType | undefined = undefined>(
    d: Omit<RouteDef<N>, 'handle' | 'query' | 'body'> & { query?: Q; body?: B; handle(c: RouteContext<InputOf<Q, B>>): Promise<Answer<N>> },
  ): RouteDef<N> =>
    d as unknown as RouteDef<N>;

function value<T>(r: Result<T>): T {
  if (!r.ok) throw r.error;
  return r.value;
}

/** A JSON answer; checked against the route's reply type where the table types the handler. */
const reply = <B>(body: B, status = 200): { status: number; body: B } => ({ status, body });


const window = z.string().max(40).refine((s) => windowMinutes(s) !== undefined, 'a window: minutes, or 30m, 24h, 7d');

export const ROUTE_TABLE: { [N in RouteName]: RouteDef<N> } = {
  health: route<'health'>()({ summary: 'Whether the daemon answers', ok: { 200: z.object({ ok: z.literal(true), api: z.string() }) }, handle: async () => reply({ ok: true, api: API_VERSION }) }),
  openapi: route<'openapi'>()({
    summary: 'This document',
    ok: { 200: z.looseObject({ openapi: z.string() }) },
    // Answered by the server from this very table (contract.ts); listed here for the document.
    handle: async () => {
      throw new BrigError('internal', 'the server answers openapi.json itself');
    },
  }),
  metrics: route<'metrics'>()({
    summary: 'Counters, gauges and histograms in the Prometheus text format',
    ok: { 200: 'text/plain' },
    async handle({ metrics, res }) {
      if (!metrics) throw new BrigError('daemon_unavailable', 'this API serves no metrics (only a daemon counts)', { hint: 'Scrape the daemon (`brig serve`).' });
      const text = await metrics.expose();
      res.writeHead(200, { 'content-type': 'text/plain; version=0.0.4; charset=utf-8', 'content-length': Buffer.byteLength(text) });
      res.end(text);
      return 'streamed';
    },
  }),
  fleet: route<'fleet'>()({
    summary: 'A content-free roll-up over a window, across every tree',
    query: z.object({ since: window.optional(), top: num.int().nonnegative().optional() }),
    ok: { 200: z.object({ fleet: z.looseObject({ runs: z.number() }) }) },
    async handle({ brig, input }) {
      const sinceMinutes = windowMinutes(input.since ?? '24h')!;
      return reply({ fleet: await brig.operator.fleet({ sinceMinutes, ...(input.top !== undefined ? { top: input.top } : {}) }) });
    },
  }),
  events: route<'events'>()({
    summary: "The content-free event stream (SSE) of runs and graphs; resume with Last-Event-ID; `graph` gives one graph's events only",
    query: z.object({ runId: ID.optional(), rootRunId: ID.optional(), graph: z.string().regex(GRAPH_ID, 'a graph id looks like g-…').optional(), lastEventId: z.string().max(64).optional() }),
    ok: { 200: 'text/event-stream' },
    // The server streams it (server.ts streamEvents): one event ring per API.
    handle: async () => 'streamed',
  }),
  listRuns: route<'listRuns'>()({
    summary: 'Runs on record, oldest first',
    query: z.object({
      status: many(z.enum(RUN_STATUSES)).optional(),
      kind: many(z.enum(RUN_KINDS)).optional(),
      rootRunId: ID.optional(),
      parentRunId: ID.optional(),
      label: z.string().max(200).optional(),
      since: num.positive().optional(),
      limit: num.int().nonnegative().optional(),
      before: ID.optional(),
    }),
    ok: { 200: z.object({ runs: z.array(RunView), more: z.number().int().nonnegative().optional().describe('matching runs older than this page, left out by limit (page back with before)') }) },
    async handle({ brig, input }) {
      const { since, ...rest } = input;
      const page = await brig.page({ ...rest, ...(since !== undefined ? { sinceMinutes: since } : {}) });
      return reply({ runs: page.runs, ...(page.more > 0 ? { more: page.more } : {}) });
    },
  }),
  spawn: route<'spawn'>()({
    summary: 'Spawn a child',
    body: SpawnRequestSchema,
    validatedBy: 'supervisor',
    ok: { 200: Run, 202: Run },
    async handle({ brig, input }) {
      // Parsed by the supervisor with SpawnRequestSchema (validatedBy): one schema, one error format.
      const run = value(await brig.spawn(input as SpawnRequestInput));
      return reply({ run }, run.status === 'ended' ? 200 : 202);
    },
  }),
  checkSpawn: route<'checkSpawn'>()({
    summary: 'The pre-check of a spawn alone: the request as it would be admitted, or the refusal a spawn would answer; starts nothing',
    body: SpawnRequestSchema,
    validatedBy: 'supervisor',
    ok: { 200: z.object({ request: z.looseObject({ task: z.string(), kind: z.enum(RUN_KINDS) }) }) },
    handle: async ({ brig, input }) => reply({ request: value(await brig.check(input as SpawnRequestInput)) }),
  }),
  getRun: route<'getRun'>()({
    summary: 'One run',
    ok: { 200: Run },
    async handle({ brig, params }) {
      const run = await brig.get(params.run!);
      if (!run) throw new BrigError('run_not_found', `no run ${params.run}`, { hint: '`brig list` shows the run ids.' });
      return reply({ run });
    },
  }),
  wait: route<'wait'>()({
    summary: 'Wait for the run to end (or the timeout)',
    body: z.object({ timeoutMs: z.number().positive().optional() }),
    ok: { 200: Run },
    async handle({ brig, params, input, req }) {
      const ac = new AbortController();
      req.on('close', () => ac.abort());
      const t = input.timeoutMs;
      return reply({ run: value(await brig.wait(params.run!, { signal: ac.signal, ...(t !== undefined ? { timeoutMs: t } : {}) })) });
    },
  }),
  kill: route<'kill'>()({
    summary: 'Kill a running child',
    body: z.object({ confirm: z.boolean(), by: z.enum(['operator', 'system']).optional() }),
    ok: { 200: Run },
    async handle({ brig, params, input }) {
      return reply({ run: value(await brig.kill(params.run!, { confirm: input.confirm, by: input.by ?? 'operator' })) });
    },
  }),
  steer: route<'steer'>()({
    summary: 'Steer a running child',
    body: z.object({ message: z.string().min(1) }),
    ok: { 200: z.object({ steer: z.looseObject({ mode: z.string() }) }) },
    handle: async ({ brig, params, input }) => reply({ steer: value(await brig.steer(params.run!, input.message)) }),
  }),
  resume: route<'resume'>()({
    summary: 'Resume a run: a timed-out script from its checkpoint, a cut-short agent from its conversation',
    body: z.object({ timeoutMs: z.number().int().positive().optional(), maxSteps: z.number().int().positive().optional() }),
    ok: { 202: Run },
    handle: async ({ brig, params, input }) => reply({ run: value(await brig.resume(params.run!, input)) }, 202),
  }),
  replay: route<'replay'>()({
    summary: 'Replay an ended agent run against its recorded model replies (a new run; its `replay` says where it diverged)',
    body: z.object({}),
    ok: { 202: Run },
    handle: async ({ brig, params }) => reply({ run: value(await brig.replay(params.run!)) }, 202),
  }),
  send: route<'send'>()({
    summary: 'A message to a running agent child; in ping-pong one round of a conversation (answer with its id)',
    // The same bounds as the broker's child.send: over one is refused, never clamped.
    body: z.object({ text: z.string().min(1), mode: z.enum(SEND_MODES).optional(), timeoutMs: z.number().int().positive().max(MAX_SEND_WAIT_MS).optional(), maxTurns: z.number().int().min(0).max(MAX_SEND_TURNS).optional(), conversation: z.string().min(1).max(64).optional() }),
    ok: { 200: z.object({ send: z.looseObject({}) }) },
    async handle({ brig, params, input }) {
      const { text, ...opts } = input;
      return reply({ send: value(await brig.send(params.run!, text, opts)) });
    },
  }),
  history: route<'history'>()({
    summary: "A bounded page of the run's transcript",
    query: z.object({ offset: num.int().nonnegative().optional(), limit: num.int().positive().max(MAX_HISTORY_PAGE).optional() }),
    ok: { 200: z.object({ history: z.looseObject({}) }) },
    handle: async ({ brig, params, input }) => reply({ history: value(await brig.history(params.run!, input)) }),
  }),
  listRefs: route<'listRefs'>()({
    summary: "The run's ResultRefs",
    ok: { 200: z.object({ refs: z.array(z.looseObject({ ref: z.string() })) }) },
    handle: async ({ brig, params }) => reply({ refs: value(await brig.refs.list(params.run!)) }),
  }),
  manifest: route<'manifest'>()({
    summary: "The result store's manifest of the run",
    ok: { 200: z.looseObject({ refs: z.array(z.unknown()) }) },
    handle: async ({ brig, params }) => reply(value(await brig.refs.manifest(params.run!))),
  }),
  result: route<'result'>()({
    summary: 'The envelope of an ended run (cast once, then kept)',
    query: z.object({ strategy: z.enum(['auto', 'always', 'never']).optional() }),
    ok: { 200: z.looseObject({ runId: z.string() }) },
    handle: async ({ brig, params, input }) => reply(value(await brig.refs.result(params.run!, input))),
  }),
  envelope: route<'envelope'>()({
    summary: 'The envelope without deciding it, in any status',
    ok: { 200: z.looseObject({ runId: z.string() }) },
    handle: async ({ brig, params }) => reply(value(await brig.refs.peek(params.run!))),
  }),
  listLeases: route<'listLeases'>()({
    summary: 'Every lease (no token hash), with its state',
    ok: { 200: z.object({ leases: z.array(Lease), unreadable: z.array(z.string()) }) },
    handle: async ({ brig }) => reply(await brig.operator.leases.list()),
  }),
  getLease: route<'getLease'>()({
    summary: 'A lease — granted beside requested, refusals — and its lineage up to the root',
    ok: { 200: z.object({ lease: Lease, lineage: z.array(Lease) }) },
    handle: async ({ brig, params }) => reply(value(await brig.operator.leases.show(params.lease!))),
  }),
  revokeLease: route<'revokeLease'>()({
    summary: 'Revoke a lease and its subtree (their runs end killed)',
    body: z.object({ confirm: z.literal(true), reason: z.string().max(200).optional() }),
    ok: { 200: z.object({ revoked: z.array(Lease) }) },
    handle: async ({ brig, params, input }) => reply({ revoked: value(await brig.operator.leases.revoke(params.lease!, input.reason)) }),
  }),
  auditVerify: route<'auditVerify'>()({
    summary: "The ledger's hash chain and anchor, verified",
    ok: { 200: z.looseObject({ ok: z.boolean() }) },
    handle: async ({ brig }) => reply(await brig.operator.audit.verify()),
  }),
  auditQuery: route<'auditQuery'>()({
    summary: 'One read-only SELECT over the view `ledger`',
    body: z.object({ sql: z.string().min(1).max(10_000), maxRows: z.number().int().positive().max(10_000).optional() }),
    ok: { 200: z.looseObject({ columns: z.array(z.string()) }) },
    async handle({ brig, input }) {
      return reply(value(await brig.operator.audit.query(input.sql, input.maxRows)));
    },
  }),
  doctor: route<'doctor'>()({
    summary: 'The host checked, and a probe from inside a real jail',
    query: z.object({ build: z.enum(['true', 'false']).optional() }),
    ok: { 200: z.object({ checks: z.array(z.looseObject({ name: z.string(), ok: z.boolean() })) }) },
    handle: async ({ brig, input }) => reply({ checks: await brig.operator.doctor({ build: input.build === 'true' }) }),
  }),
  admissionStatus: route<'admissionStatus'>()({
    summary: 'Whether admission is paused, since when and by whom, and how many spawns wait in the queue',
    ok: { 200: z.object({ admission: Admission }) },
    handle: async ({ brig }) => reply({ admission: await brig.operator.admission.status() }),
  }),
  admissionPause: route<'admissionPause'>()({
    summary: 'Pause admission: running children go on, new spawns wait in the queue (refused admission_paused when it is full); kept across a restart, ledgered with who, when and the reason\'s hash',
    body: AdmissionBody,
    ok: { 200: z.object({ admission: Admission }) },
    handle: async ({ brig, input }) => reply({ admission: value(await brig.operator.admission.pause(admissionChange(input))) }),
  }),
  admissionResume: route<'admissionResume'>()({
    summary: 'Resume admission: the queue starts in order; ledgered like a pause',
    body: AdmissionBody,
    ok: { 200: z.object({ admission: Admission }) },
    handle: async ({ brig, input }) => reply({ admission: value(await brig.operator.admission.resume(admissionChange(input))) }),
  }),
  refRead: route<'refRead'>()({
    summary: 'A slice by line or byte range',
    body: z.object({ offset: z.number().int().nonnegative().optional(), length: z.number().int().positive().optional(), line: z.number().int().positive().optional(), lines: z.number().int().positive().optional() }),
    ok: { 200: Slice },
    async handle({ brig, params, input }) {
      const range = input.line !== undefined ? { line: input.line, lines: input.lines ?? 1 } : { offset: input.offset ?? 0, length: input.length ?? 4096 };
      return reply(value(await brig.refs.read(params.ref!, range)));
    },
  }),
  refGrep: route<'refGrep'>()({
    summary: 'Matching lines, bounded',
    body: z.object({ pattern: z.string().min(1), maxMatches: z.number().int().positive().optional(), context: z.number().int().nonnegative().optional(), ignoreCase: z.boolean().optional(), fixed: z.boolean().optional() }),
    ok: { 200: Slice },
    async handle({ brig, params, input }) {
      const { pattern, ...opts } = input;
      return reply(value(await brig.refs.grep(params.ref!, pattern, opts)));
    },
  }),
  refJq: route<'refJq'>()({
    summary: 'A jq filter, bounded',
    body: z.object({ expr: z.string().min(1) }),
    ok: { 200: Slice },
    handle: async ({ brig, params, input }) => reply(value(await brig.refs.jq(params.ref!, input.expr))),
  }),
  refSql: route<'refSql'>()({
    summary: 'One SELECT over the view `ref`, locked down',
    body: z.object({ query: z.string().min(1).max(100_000), maxRows: z.number().int().positive().optional() }),
    ok: { 200: Slice },
    async handle({ brig, params, input }) {
      return reply(value(await brig.refs.sql(params.ref!, input.query, input.maxRows !== undefined ? { maxRows: input.maxRows } : {})));
    },
  }),
  refJsonpath: route<'refJsonpath'>()({
    summary: 'A JSONPath, bounded',
    body: z.object({ expr: z.string().min(1), maxRows: z.number().int().positive().optional() }),
    ok: { 200: Slice },
    async handle({ brig, params, input }) {
      return reply(value(await brig.refs.jsonpath(params.ref!, input.expr, input.maxRows !== undefined ? { maxRows: input.maxRows } : {})));
    },
  }),
  graphDefine: route<'graphDefine'>()({
    summary: 'Check a graph spec (YAML or JSON text): its order and nodes, or every refusal with its line; starts nothing',
    body: GraphBody,
    ok: { 200: z.object({ definition: z.looseObject({ order: z.array(z.string()) }) }) },
    handle: async ({ brig, input }) => reply({ definition: value(await graphsOf(brig).define(input.spec, sourceOf(input))) }),
  }),
  graphRun: route<'graphRun'>()({
    summary: 'Check and start a graph: its id, order and nodes at once',
    body: GraphBody,
    ok: { 202: z.object({ graph: z.looseObject({ graphId: z.string(), order: z.array(z.string()) }) }) },
    handle: async ({ brig, input }) => reply({ graph: value(await graphsOf(brig).run(input.spec, sourceOf(input))) }, 202),
  }),
  listGraphs: route<'listGraphs'>()({
    summary: 'The graphs on record, oldest first',
    ok: { 200: z.object({ graphs: z.array(GraphView) }) },
    handle: async ({ brig }) => reply({ graphs: await graphsOf(brig).list() }),
  }),
  getGraph: route<'getGraph'>()({
    summary: 'A graph record: every node, its attempts (each a run), and once ended the envelope and the manifest ref',
    ok: { 200: z.object({ graph: GraphView }) },
    handle: async ({ brig, params }) => reply({ graph: value(await graphsOf(brig).status(params.graph!)) }),
  }),
  graphWait: route<'graphWait'>()({
    summary: 'Wait for a graph to end (or the timeout)',
    body: z.object({ timeoutMs: z.number().positive().optional() }),
    ok: { 200: z.object({ graph: GraphView }) },
    async handle({ brig, params, input, req }) {
      const ac = new AbortController();
      req.on('close', () => ac.abort());
      const t = input.timeoutMs;
      return reply({ graph: value(await graphsOf(brig).wait(params.graph!, { signal: ac.signal, ...(t !== undefined ? { timeoutMs: t } : {}) })) });
    },
  }),
  graphCancel: route<'graphCancel'>()({
    summary: 'Cancel a running graph: its running nodes killed, the rest skipped',
    body: z.object({ confirm: z.boolean() }),
    ok: { 200: z.object({ graph: GraphView }) },
    handle: async ({ brig, params, input }) => reply({ graph: value(await graphsOf(brig).cancel(params.graph!, { confirm: input.confirm })) }),
  }),
  graphExplain: route<'graphExplain'>()({
    summary: 'A graph explained for an operator: per node its attempts and end reasons, why it was skipped (which when failed), why it waited (dependencies, a slot, a gate), its retries and the lease each attempt got',
    ok: { 200: z.object({ explanation: z.looseObject({ graphId: z.string(), state: z.enum(GRAPH_STATES), nodes: z.array(z.looseObject({ id: z.string(), attempts: z.array(z.looseObject({ n: z.number() })) })) }) }) },
    handle: async ({ brig, params }) => reply({ explanation: value(await graphsOf(brig).explain(params.graph!)) }),
  }),
  graphDecide: route<'graphDecide'>()({
    summary: "An operator's decision on a waiting gate (approve or reject, with a note kept only as its hash)",
    body: z.object({ node: z.string().min(1).max(200), decision: z.enum(['approve', 'reject']), note: z.string().max(4096).optional(), by: z.string().min(1).max(128).optional() }),
    ok: { 200: z.object({ graph: GraphView }) },
    async handle({ brig, params, input }) {
      const d = { decision: input.decision, by: input.by ?? 'operator', ...(input.note !== undefined ? { note: input.note } : {}) };
      return reply({ graph: value(await graphsOf(brig).decide(params.graph!, input.node, d)) });
    },
  }),
};

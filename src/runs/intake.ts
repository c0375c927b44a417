/**
 * Intake: from a spawn request to an admitted (or queued) run on disk.
 *
 * Guarantees: the request is validated by the one schema; the parent's history crosses only
 * as a bounded summary (INV-3: over the bound is refused, not cut); a child may not hand host
 * paths or pick an image; admission is decided and recorded in the same tick (no await in
 * between), so concurrent requests see each other and every cap holds; nothing is announced
 * before its request, pinned script and checkpoint are on disk, and a failure before that is
 * rolled back. Refusals are Result values with a code, a limit and a hint.
 */
import { promises as fs } from 'node:fs';
import path from 'node:path';
import { BrigError, err, ok, publicError, type Result } from '../util/errors.js';
import { nearest } from '../util/nearest.js';
import { headBytes } from '../util/utf8.js';
import { DEFAULT_AGENT, type AgentSpec } from '../agents/index.js';
import type { JailArtifact } from '../jail/index.js';
import { decideAdmission, storageRefusal, type StorageState } from './admission.js';
import { attestedConversation, pairedMessages } from './agent-resume.js';
import { checkArtifact, checkCommittedOutput } from './artifact-check.js';
import { checkRefArtifact, isRefArtifact, uniqueNames } from './ref-artifact.js';
import { repoForSpawn } from './run-repo.js';
import type { SupervisorDeps } from './ports.js';
import { createRunRecord, newRunId, requestHash } from './record.js';
import type { RunTable } from './run-table.js';
import { effectiveMaxSteps, runTimeoutMs } from './timeouts.js';
import { SPAWN_BOUNDS, SUMMARY_BOUNDS } from '../protocol/index.js';
import { SpawnRequestSchema, type LlmMessage, type RunRecord, type SpawnContext, type SpawnRequest, type SpawnRequestInput, type SupervisorSettings } from './types.js';
import { hookWhy } from './ender.js';

export type Intake =
  | { kind: 'duplicate'; runId: string; async: boolean }
  | { kind: 'created'; run: RunRecord; started: boolean; async: boolean };

export interface IntakeDeps {
  table: RunTable;
  deps: SupervisorDeps;
  settings: SupervisorSettings;
  /** Whether an operator paused admission now (admission-pause.ts): new runs then wait in the queue. */
  paused?: () => { since: string | null } | null;
}

/** The first problem of a request, said for the caller: an unknown name of a closed set with the nearest one and the set. */
function invalid(parsed: { error: { issues: { path: PropertyKey[]; message: string; code?: string }[] } }): BrigError {
  const first = parsed.error.issues[0] as { path: PropertyKey[]; message: string; code?: string; values?: unknown[]; input?: unknown } | undefined;
  const field = first?.path.join('.') || '(root)';
  if (first?.code === 'invalid_value' && Array.isArray(first.values) && typeof first.input === 'string') {
    const known = first.values.map(String);
    const near = nearest(first.input, known);
    const what = first.path[0] === 'caps' ? 'capability' : field;
    return new BrigError('invalid_input', `spawn request: unknown ${what} ${first.input.slice(0, 60)}`, {
      data: { field },
      hint: `${near ? `Did you mean "${near}"? ` : ''}Known: ${known.join(', ')}`,
    });
  }
  return new BrigError('invalid_input', `spawn request: ${field}: ${first?.message ?? 'invalid'}`, { data: { field } });
}

/**
 * The one pre-check of a spawn request, for every face and for intake itself: the spawn
 * schema, the agent spec and model it names, the profile it asks for. What it answers is the
 * request as it would be admitted (defaults filled, the spec's narrowing applied).
 */
export function checkSpawn(d: Pick<IntakeDeps, 'deps' | 'settings'>, input: SpawnRequestInput): Result<{ req: SpawnRequest; spec?: AgentSpec }, BrigError> {
  const parsed = SpawnRequestSchema.safeParse(input, { reportInput: true });
  if (!parsed.success) return err(invalid(parsed));
  const steps = maxStepsRefusal(d.settings, parsed.data.max_steps);
  if (steps) return err(steps);
  const agent = agentRequest(d, parsed.data);
  if (!agent.ok) return agent;
  const profile = agent.value.req.profile;
  if (profile !== undefined && d.deps.leases.checkProfile) {
    const known = d.deps.leases.checkProfile(profile);
    if (!known.ok) return known;
  }
  // The image the run will use (the request's or its agent spec's), against the profile's list.
  const image = agent.value.req.image;
  if (image !== undefined && d.deps.leases.checkImage) {
    const allowed = d.deps.leases.checkImage(profile, image);
    if (!allowed.ok) return allowed;
  }
  return agent;
}

/**
 * `max_steps` within its bounds — at least SPAWN_BOUNDS.maxStepsFloor (or the configured
 * default when that is smaller), at most the configured default — or why not, with the bounds.
 * Refused, never clamped: a caller asking for 10 steps learns it cannot have them.
 */
export function maxStepsRefusal(s: Pick<SupervisorSettings, 'defaultMaxSteps'>, asked: number | undefined): BrigError | null {
  if (asked === undefined) return null;
  const max = s.defaultMaxSteps;
  const min = Math.min(SPAWN_BOUNDS.maxStepsFloor, max);
  if (asked >= min && asked <= max) return null;
  return new BrigError('invalid_input', `spawn request: max_steps ${asked} is outside ${min}..${max}`, {
    data: { field: 'max_steps', min, max, current: asked },
    hint: `Give max_steps between ${min} and ${max}, or leave it out for the default ${max} (the supervisor's defaultMaxSteps is the cap).`,
  });
}

export async function intake(d: IntakeDeps, input: SpawnRequestInput, ctx: SpawnContext): Promise<Result<Intake, BrigError>> {
  const { table, settings } = d;
  const agent = checkSpawn(d, input);
  if (!agent.ok) return agent;
  const req = agent.value.req;
  // A graph node's upstream summaries (in-process only): bounded here, whoever built them.
  if (ctx.summaries && ctx.summaries.length > 0) req.upstream = ctx.summaries.slice(0, SUMMARY_BOUNDS.count).map((u) => ({ node: u.node.slice(0, 200), text: headBytes(u.text, SUMMARY_BOUNDS.bytes) }));
  const maxSummaryChars = settings.parentSummaryMaxTokens * 4;
  if (req.parent_summary !== undefined && req.parent_summary.length > maxSummaryChars) {
    return err(new BrigError('invalid_input', `parent_summary is ${req.parent_summary.length} characters; the bound is ${maxSummaryChars} (parentSummaryMaxTokens ${settings.parentSummaryMaxTokens} × 4)`, {
      data: { limit: maxSummaryChars, current: req.parent_summary.length },
      hint: 'Summarize the parent history further, or send include_parent_history `none`.',
    }));
  }
  if (req.include_parent_history === 'summary' && req.parent_summary === undefined && !ctx.parentRunId) {
    return err(new BrigError('invalid_input', 'include_parent_history `summary` needs parent_summary: brig holds no conversation of an operator', {
      data: { field: 'parent_summary' },
      hint: 'Give the summary text (--parent-summary, parentSummary), or leave include_parent_history `none`. A lead spawning from its jail gets one written by brig.',
    }));
  }
  const parent = ctx.parentRunId ? (table.get(ctx.parentRunId) ?? null) : null;
  if (ctx.parentRunId && (!parent || parent.status === 'ended')) {
    return err(new BrigError('not_running', `parent run ${ctx.parentRunId} is not running`, { data: { status: parent?.status ?? 'unknown' } }));
  }
  // An image named by the agent spec is the operator's (the spec file); only the request's own is the child's pick.
  if (parent && (req.artifact_refs.some((a) => !isRefArtifact(a)) || (input as { image?: unknown }).image !== undefined)) {
    return err(new BrigError('capability_denied', 'a child cannot hand host paths or pick an image for a grandchild', {
      data: { what: 'artifact_refs/image' },
      hint: 'Hand ResultRef ids (ref_…) of your own children instead: they are mounted read-only from the result store.',
    }));
  }
  // A child's run (an agent spec's image, named by the operator's spec file) is checked again
  // against the profile its lease will inherit from the parent's — not root's.
  if (parent?.leaseId && req.image !== undefined && d.deps.leases.checkImage) {
    const allowed = d.deps.leases.checkImage(req.profile, req.image, parent.leaseId);
    if (!allowed.ok) return allowed;
  }
  // Each artifact is judged once, here; what the jail binds is the object judged (its identity).
  // A ResultRef id is its own kind: resolved from the result store, never a path (ref-artifact.ts).
  const artifacts: (JailArtifact & { runId?: string })[] = [];
  for (const a of req.artifact_refs) {
    if (isRefArtifact(a)) {
      const checked = await checkRefArtifact({ table, results: d.deps.results }, a, parent);
      if (!checked.ok) return checked;
      artifacts.push(checked.value);
      continue;
    }
    const st = await fs.stat(path.resolve(a)).catch(() => null);
    if (!st || !(st.isFile() || st.isDirectory())) {
      return err(new BrigError('artifact_missing', `artifact ${path.basename(a)} is not an existing regular file or directory`, { data: { artifact: a } }));
    }
    const checked = await checkArtifact(a, [path.dirname(d.deps.paths.runs), d.deps.paths.brokers]);
    if (!checked.ok) return checked;
    artifacts.push({ name: path.basename(a), hostPath: checked.value.realPath, identity: checked.value });
  }
  const repo = await repoForSpawn(req.repo, parent, [path.dirname(d.deps.paths.runs), d.deps.paths.brokers]);
  if (!repo.ok) return repo;
  const named = uniqueNames(artifacts).map(({ runId: _r, ...a }) => a);
  // Graph inputs (in-process only): completed runs' committed out/, named `as`.
  const inputs = await committedInputs(d, ctx.inputs ?? [], named.map((a) => a.name), parent);
  if (!inputs.ok) return inputs;
  named.push(...inputs.value);
  const callerId = ctx.callerId ?? ctx.parentRunId ?? 'operator';
  const depth = parent ? parent.depth + 1 : 1;
  const hash = requestHash(req);
  const live = table.all().filter((r) => r.status !== 'ended');
  const decided = decideAdmission(live, { depth, parentRunId: parent?.id ?? null, rootRunId: parent?.rootRunId ?? null, callerId, agent: req.agent, requestHash: hash }, settings, table.blockedSet(), d.paused?.() ?? null, table.heldSlots(), table.heldGlobally());
  // A home with no room for the run's records (or below its reserve) admits nothing new.
  const full = decided.kind === 'admit' || decided.kind === 'queue' ? storageRefusal(storageState(d), settings.minFreeBytes) : undefined;
  const decision = full ? ({ kind: 'refuse', error: full } as const) : decided;
  if (decision.kind === 'refuse') {
    table.refusals.note({ code: decision.error.code, parentRunId: parent?.id ?? null, depth });
    return err(decision.error);
  }
  if (decision.kind === 'duplicate') return ok({ kind: 'duplicate', runId: decision.runId, async: req.async });

  const maxSteps = effectiveMaxSteps(settings, req.max_steps);
  const rec = createRunRecord({
    id: newRunId(),
    parent,
    callerId,
    agent: req.agent,
    kind: req.kind,
    label: req.label ?? null,
    task: req.task,
    requestHash: hash,
    now: table.clock.now(),
    timeoutMs: runTimeoutMs(settings, maxSteps, req.timeout),
    maxSteps,
    async: req.async,
    expectedOutputs: req.expected_outputs,
    resumeOf: ctx.resumeOf ?? null,
  });
  if (ctx.replayOf) rec.replayOf = ctx.replayOf;
  if (agent.value.spec) {
    rec.agentSpec = agent.value.spec.name;
    rec.model = req.model;
    rec.tokens = 0;
    rec.costUsd = 0;
  }
  if (repo.value) rec.repo = repo.value;
  if (ctx.parentStep !== undefined) rec.parentStep = ctx.parentStep;
  // Saved with the admitted record: a re-sent spawn call finds this run, before or after a restart.
  if (ctx.callId !== undefined) rec.spawnCallId = ctx.callId;
  // Decided and recorded in the same tick. An admitted run is `starting` at once;
  // `preparing` keeps the pump and the health tick off it until it is on disk.
  if (decision.kind === 'admit') rec.status = 'starting';
  table.runs.set(rec.id, rec);
  table.preparing.add(rec.id);
  const forget = () => {
    table.runs.delete(rec.id);
    table.preparing.delete(rec.id);
  };
  const prepared = await prepare(d, rec, req, agent.value.spec, named);
  if (!prepared.ok) {
    forget();
    return prepared;
  }
  try {
    // Never held: a home with no space for the run refuses it (`storage_full`), it does not admit it.
    await table.store.save(rec, { hold: false });
  } catch (e) {
    forget();
    await prepared.value.rollback().catch(() => {});
    return err(hostFree(e));
  }
  table.preparing.delete(rec.id);
  // A launch that fails later (no image, no lease, the engine refusing) undoes the hook too (starter.ts).
  if (prepared.value.hookRollback) table.rollbacks.set(rec.id, prepared.value.hookRollback);
  // The starter takes the parsed request from memory; the file is for a restart or a respawn.
  table.requests.set(rec.id, req);
  if (named.length > 0) table.artifacts.set(rec.id, named);
  table.emit(rec, { type: 'spawned', parentRunId: rec.parentRunId, agent: rec.agent, kind: rec.kind, queued: decision.kind === 'queue', parentStep: rec.parentStep ?? null });
  return ok({ kind: 'created', run: rec, started: decision.kind === 'admit', async: req.async });
}

/** The home's storage now: its free space and every writer holding what the disk refused. */
export function storageState(d: Pick<IntakeDeps, 'deps' | 'table'>): StorageState {
  const space = d.deps.storage?.space();
  const own = d.table.store.held().files;
  return {
    ...(space ? { freeBytes: space.freeBytes } : {}),
    held: [...(d.deps.storage?.held() ?? []), ...(own > 0 ? [{ what: 'run file(s)', count: own }] : [])],
  };
}

/** The run's directory, its request, pinned script and carried checkpoint; then the hook. */
/** A transcript's carried start (a resumed run's first `reset` line), its messages re-paired (pure). */
export function carriedStart(transcript: string): { messages: LlmMessage[]; resumedFrom: string } | undefined {
  const nl = transcript.indexOf('\n');
  try {
    const first = JSON.parse(nl < 0 ? transcript : transcript.slice(0, nl)) as { t?: unknown; messages?: unknown; resumedFrom?: unknown };
    if (first.t !== 'reset' || typeof first.resumedFrom !== 'string' || !Array.isArray(first.messages)) return undefined;
    return { messages: pairedMessages(first.messages), resumedFrom: first.resumedFrom };
  } catch {
    return undefined;
  }
}

async function prepare(d: IntakeDeps, rec: RunRecord, req: SpawnRequest, spec: AgentSpec | undefined, artifacts: JailArtifact[]): Promise<Result<{ rollback(): Promise<void>; hookRollback?: () => Promise<void> }, BrigError>> {
  const { store } = d.table;
  try {
    await store.ensureDir(rec.id);
    // Carried by the admitted save (one sync for all): a crash before it leaves a run without a
    // record, which the next start removes (withoutRecord), never one without its request.
    await store.writeJson(rec.id, 'request', req, { carried: true });
    if (artifacts.length > 0) await store.writeJson(rec.id, 'artifacts', artifacts, { carried: true });
    // The spec is pinned like a script: a restart or a respawn runs what was admitted.
    if (spec) await store.writeJson(rec.id, 'agent', spec, { carried: true });
    if (req.kind === 'script' && req.script !== undefined) await store.write(rec.id, 'script', req.script, { carried: true });
    // A resumed agent starts from the conversation its predecessor held, re-attested as data (agent-resume.ts).
    const held = rec.resumeOf && req.kind === 'agent' ? await store.read(rec.resumeOf, 'transcript') : null;
    const from = held ? d.table.get(rec.resumeOf!) : undefined;
    if (held && from) {
      const messages = attestedConversation(held.toString('utf8'), from);
      await store.write(rec.id, 'transcript', `${JSON.stringify({ at: new Date().toISOString(), t: 'reset', messages, resumedFrom: from.id })}\n`);
    }
    // A replay starts where its source started: a resumed run's carried conversation (the
    // first line of its transcript, written above for it) is carried again, re-checked as data.
    const source = rec.replayOf && req.kind === 'agent' ? (await store.read(rec.replayOf, 'transcript'))?.toString('utf8') : undefined;
    const start = source ? carriedStart(source) : undefined;
    if (start) await store.write(rec.id, 'transcript', `${JSON.stringify({ at: new Date().toISOString(), t: 'reset', messages: start.messages, resumedFrom: start.resumedFrom })}\n`);
    const carried = rec.resumeOf && req.kind !== 'agent' ? await store.read(rec.resumeOf, 'checkpoint') : null;
    if (carried) {
      await store.write(rec.id, 'checkpoint', carried, { carried: true });
      rec.hasCheckpoint = true;
    }
    // A failing hook degrades: ledgered, and the spawn goes on without it.
    const hook = await Promise.resolve(d.deps.hooks?.prepareSpawn?.(rec)).catch((e: unknown) => {
      d.table.ledger.append({ type: 'run.hook_failed', runId: rec.id, hook: 'prepareSpawn', why: hookWhy(e) });
      return undefined;
    });
    const hookRollback = hook
      ? async () => {
          await hook.rollback().catch((e: unknown) => {
            d.table.ledger.append({ type: 'run.hook_failed', runId: rec.id, hook: 'prepareSpawn.rollback', why: hookWhy(e) });
          });
        }
      : undefined;
    return ok({
      rollback: async () => {
        await hookRollback?.();
        await store.remove(rec.id);
      },
      ...(hookRollback ? { hookRollback } : {}),
    });
  } catch (e) {
    await store.remove(rec.id).catch(() => {});
    return err(hostFree(e));
  }
}

/**
 * Kind `agent`: the spec it names (default `general`) and the model it will use, both checked
 * now so a bad name fails at once with the nearest one; the spec narrows the request (its
 * profile when none is asked, and the smaller of the steps and timeouts) — never widens it.
 */
function agentRequest(d: Pick<IntakeDeps, 'deps'>, req: SpawnRequest): Result<{ req: SpawnRequest; spec?: AgentSpec }, BrigError> {
  if (req.kind !== 'agent') return ok({ req });
  if (!d.deps.agents) return err(new BrigError('invalid_input', 'this supervisor has no agent catalog: kind `agent` is not served'));
  const name = req.agent === 'default' ? DEFAULT_AGENT : req.agent;
  const spec = d.deps.agents.spec(name);
  if (!spec.ok) return spec;
  if (!d.deps.models) {
    return err(new BrigError('model_unavailable', 'an agent child needs a model, and none is configured', { hint: 'Set BRIG_MODEL_BASE_URL and BRIG_MODEL (or $BRIG_HOME/config.yaml) and restart `brig serve`.' }));
  }
  const model = d.deps.models.resolve(req.model ?? spec.value.model);
  if (!model.ok) return model;
  const min = (a: number | undefined, b: number | undefined) => (a === undefined ? b : b === undefined ? a : Math.min(a, b));
  const maxSteps = min(req.max_steps, spec.value.maxSteps);
  const timeout = min(req.timeout, spec.value.timeout === undefined ? undefined : spec.value.timeout * 1000);
  if (req.tool_groups && d.deps.agents.checkGroups) {
    const groups = d.deps.agents.checkGroups(req.tool_groups);
    if (!groups.ok) return groups;
  }
  const profile = req.profile ?? spec.value.profile;
  const image = req.image ?? spec.value.image;
  return ok({
    req: { ...req, agent: name, model: model.value.alias, ...(maxSteps !== undefined ? { max_steps: maxSteps } : {}), ...(timeout !== undefined ? { timeout } : {}), ...(profile ? { profile } : {}), ...(image ? { image } : {}) },
    spec: spec.value,
  });
}

/** The artifacts as intake checked them: from memory, else their file (a restart). */
export async function loadArtifacts(table: RunTable, runId: string): Promise<JailArtifact[]> {
  return table.artifacts.get(runId) ?? (await table.store.readArtifacts(runId)) ?? [];
}

/** The admitted request: from memory when this supervisor admitted it, else its file (parsed again). */
export async function loadRequest(table: RunTable, runId: string): Promise<SpawnRequest | null> {
  return table.requests.get(runId) ?? (await table.store.readRequest(runId));
}

/** A failure as a caller may see it: brig's own errors as they are, any other with its host paths scrubbed. */
function hostFree(e: unknown): BrigError {
  if (e instanceof BrigError) return e;
  const pe = publicError(e);
  return new BrigError(pe.code, pe.message);
}

/**
 * Graph inputs (SpawnContext.inputs): each an ended, completed run's committed out/, or a graph
 * input's ResultRef — judged by the rule a spawner's artifact_refs obey (checkRefArtifact: a
 * run's own descendants' refs, under refs.read and artifacts.read) — named `as`.
 */
async function committedInputs(d: IntakeDeps, inputs: NonNullable<SpawnContext['inputs']>, taken: string[], parent: RunRecord | null): Promise<Result<JailArtifact[], BrigError>> {
  const out: JailArtifact[] = [];
  const names = new Set(taken);
  for (const i of inputs) {
    if (!/^[a-z][a-z0-9_-]{0,47}$/.test(i.as) || names.has(i.as)) {
      return err(new BrigError('invalid_input', `input name ${i.as.slice(0, 60)} is not a free name under /artifacts`, { data: { field: 'inputs' } }));
    }
    names.add(i.as);
    if ('ref' in i) {
      const checked = await checkRefArtifact({ table: d.table, results: d.deps.results }, i.ref, parent);
      if (!checked.ok) return checked;
      out.push({ name: i.as, hostPath: checked.value.hostPath, identity: checked.value.identity });
      continue;
    }
    const run = d.table.get(i.runId);
    if (!run || run.status !== 'ended' || run.endReason !== 'completed') {
      return err(new BrigError('artifact_missing', `input ${i.as}: run ${i.runId} has not completed, so it committed nothing`, { data: { artifact: i.as, runId: i.runId } }));
    }
    if (!d.deps.results) return err(new BrigError('artifact_missing', `input ${i.as}: this supervisor keeps no results`, { data: { artifact: i.as } }));
    const checked = await checkCommittedOutput(d.deps.results.outDir(run.rootRunId, run.id), i.as);
    if (!checked.ok) return checked;
    out.push({ name: i.as, hostPath: checked.value.realPath, identity: checked.value });
  }
  return ok(out);
}

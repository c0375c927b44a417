/**
 * The supervisor's side of the child SDK: what a child's broker calls do — progress,
 * checkpoint/resume, result, spawn, wait, its own children's status/explain/history/send/
 * kill/steer, and its model calls (llm.*).
 *
 * Guarantees: `runId` is the calling run as the broker authenticated it, never a value from
 * the params; a run that is not running is refused (`not_running`); a run reaches only its
 * own direct children (any other id is `run_not_found`, never a sibling or another subtree);
 * spawn needs the lease's `spawn` (grantAllows, the broker's predicate too); what a call keeps
 * or returns is bounded — a checkpoint ≤ 1 MiB (read back marked untrusted), an inline result
 * ≤ 256 KiB or a spooled one within the lease's result cap, a child's result crossing to its
 * parent ≤ 16 000 chars (INV-3), a progress line ≤ 200 chars and only a closed-set tool name
 * (INV-7), a wait ≤ 10 min, one salvage model call per run.
 * Threat: a hostile child using its broker calls to reach other runs, widen its lease, flood
 * its parent's context or the ledger. Trusts: the broker's authentication and its method →
 * capability table (broker/dispatch.ts checks the lease before a call gets here).
 * Fails closed: an unknown method, an id that is not the caller's child, a missing capability
 * → refused with a code; a param of the wrong type is treated as absent, never coerced into a
 * wider request.
 */
import { AGENT_TOOL_NAMES } from '../agents/index.js';
import { grantAllows } from '../lease/index.js';
import { BrigError } from '../util/errors.js';
import type { RunPorts } from './run-table.js';
import type { SendMode } from './session-types.js';
import type { RunRecord } from './types.js';

const MAX_CHECKPOINT_BYTES = 1024 * 1024;
const MAX_RESULT_BYTES = 256 * 1024;
/**
 * What a child's result may bring into its parent's context (INV-3): maxResultTokens (4000)
 * × 4 chars. A larger value stays on disk as the child's `result.json` ResultRef; the parent
 * gets its size and drills in (refs.read) instead.
 */
export const MAX_SUMMARY_RESULT_CHARS = 16_000;

const CUT_HINT = 'the whole value is the result.json ref: slice it with refs.read / refs.jq';

/** The child's result as it may cross back to its parent: whole when small, else a pointer. */
export function boundedResult(result: unknown, spooledBytes?: number | null): { result: unknown; resultCut?: { chars: number; hint: string } } {
  if (spooledBytes) return { result: null, resultCut: { chars: spooledBytes, hint: CUT_HINT } };
  if (result === undefined || result === null) return { result: result ?? null };
  const chars = JSON.stringify(result).length;
  if (chars <= MAX_SUMMARY_RESULT_CHARS) return { result };
  return { result: null, resultCut: { chars, hint: CUT_HINT } };
}

/** What a parent learns of one child when a spawn or a wait returns. */
export function childSummary(c: RunRecord): Record<string, unknown> {
  return {
    runId: c.id,
    status: c.status,
    endReason: c.endReason,
    ...boundedResult(c.result, c.resultSpooled),
    error: c.error,
    missingOutputs: c.missingOutputs,
    ...(c.partial ? { partial: true } : {}),
  };
}

/** Longest a broker `wait` blocks. */
export const MAX_CHILD_WAIT_MS = 600_000;

function obj(params: unknown): Record<string, unknown> {
  return params && typeof params === 'object' && !Array.isArray(params) ? (params as Record<string, unknown>) : {};
}

export async function handleChildCall(sup: RunPorts, runId: string, method: string, params: unknown): Promise<unknown> {
  const r = sup.table.get(runId);
  // The child's first call can beat the engine's reply to `start` (the supervisor records
  // `running` only after it): a `starting` run whose container exists is the one calling.
  const live = r !== undefined && (r.status === 'running' || (r.status === 'starting' && sup.table.live.get(runId)?.jail !== undefined));
  if (!r || !live) {
    throw new BrigError('not_running', `run ${runId} is not running`, { data: { status: r?.status ?? 'unknown' } });
  }
  const p = obj(params);
  switch (method.startsWith('run.') ? method.slice(4) : method) {
    case 'progress': {
      // An agent's step is its model call (llm-calls.ts counts and bounds it); its progress
      // call only says where it is.
      const agent = r.kind === 'agent';
      if (!agent && r.stepsExecuted >= r.maxSteps) {
        // The step budget is spent: the script ends; the reply tells it why.
        void sup.actions.endRun(runId, 'failed', { collect: true, error: { code: 'timeout', message: `max_steps ${r.maxSteps} spent` } });
        throw new BrigError('timeout', `max_steps ${r.maxSteps} spent`, { data: { limit: r.maxSteps, current: r.stepsExecuted + 1 } });
      }
      const line = typeof p.line === 'string' ? p.line.slice(0, 200) : r.progressLine;
      // Only a name of the closed tool set is kept: events and the ledger stay content-free (INV-7).
      const tool = typeof p.tool === 'string' && (AGENT_TOOL_NAMES as readonly string[]).includes(p.tool) ? p.tool : null;
      await sup.table.update(runId, (x) => ({ ...x, stepsExecuted: agent ? x.stepsExecuted : x.stepsExecuted + 1, progressLine: line, activeTool: tool, lastProgressAt: sup.table.clock.now().toISOString() }));
      const live = sup.table.live.get(runId);
      const steers = live ? live.steers.splice(0, live.steers.length) : [];
      return { steers, stepsExecuted: agent ? r.stepsExecuted : r.stepsExecuted + 1 };
    }
    case 'checkpoint': {
      const json = JSON.stringify(p.state ?? null);
      if (Buffer.byteLength(json) > MAX_CHECKPOINT_BYTES) {
        throw new BrigError('ref_too_large', `a checkpoint is at most ${MAX_CHECKPOINT_BYTES} bytes`, { data: { limit: MAX_CHECKPOINT_BYTES } });
      }
      await sup.table.store.write(runId, 'checkpoint', json);
      await sup.table.update(runId, (x) => ({ ...x, hasCheckpoint: true, lastProgressAt: sup.table.clock.now().toISOString() }));
      return { saved: true };
    }
    case 'resume': {
      const buf = await sup.table.store.read(runId, 'checkpoint');
      return { checkpoint: buf ? (JSON.parse(buf.toString('utf8')) as unknown) : null, untrusted: true };
    }
    case 'result': {
      if (p.spooled && typeof p.spooled === 'object') {
        // The value is in the workspace (too big for a line); the collect fetches it, capped.
        const bytes = Number((p.spooled as { bytes?: unknown }).bytes ?? 0);
        const cap = r.resultCapBytes ?? Infinity;
        if (bytes > cap) throw new BrigError('ref_too_large', `the result is ${bytes} bytes; the lease allows ${cap}`, { data: { limit: cap, current: bytes } });
        await sup.table.update(runId, (x) => ({ ...x, result: null, resultSpooled: bytes }));
        return { saved: true, spooled: true };
      }
      const json = JSON.stringify(p.value ?? null);
      if (Buffer.byteLength(json) > MAX_RESULT_BYTES) {
        throw new BrigError('ref_too_large', `result() takes at most ${MAX_RESULT_BYTES} bytes; write bigger output to /workspace/out`, { data: { limit: MAX_RESULT_BYTES } });
      }
      const value = JSON.parse(json) as unknown;
      // An agent that ended without `finish` says so in its result: the run's result is partial.
      const partial = r.kind === 'agent' && !!value && typeof value === 'object' && (value as { partial?: unknown }).partial === true;
      await sup.table.update(runId, (x) => ({ ...x, result: value, resultSpooled: null, ...(partial ? { partial: true } : {}) }));
      return { saved: true };
    }
    case 'spawn': {
      const live = sup.table.live.get(runId);
      if (!live || !grantAllows(live, 'spawn')) throw new BrigError('capability_denied', 'the lease does not grant `spawn`', { data: { what: 'spawn' } });
      const req = obj(p.request);
      // A parent blocked on its child must not hold the slot the child needs (no deadlock).
      // Attribution (reference 001): the child carries the step of its parent that spawned it.
      const spawn = () => sup.actions.spawn(req as never, { parentRunId: runId, parentStep: r.stepsExecuted });
      const res = req.async === true ? await spawn() : await sup.actions.whileBlocked(runId, spawn);
      if (!res.ok) throw res.error;
      return childSummary(res.value);
    }
    case 'wait': {
      const ids = Array.isArray(p.runs) ? p.runs.filter((x): x is string => typeof x === 'string') : [];
      for (const id of ids) {
        const c = sup.table.get(id);
        if (!c || c.parentRunId !== runId) throw new BrigError('run_not_found', `run ${id.slice(0, 80)} is not a child of this run`, { hint: 'Wait on the run ids your own spawn calls returned.' });
      }
      const timeoutMs = Math.min(typeof p.timeoutMs === 'number' ? p.timeoutMs : MAX_CHILD_WAIT_MS, MAX_CHILD_WAIT_MS);
      const deadline = Date.now() + timeoutMs;
      await sup.actions.whileBlocked(runId, () => Promise.all(ids.map((id) => sup.actions.wait(id, { timeoutMs: Math.max(0, deadline - Date.now()) }))));
      return { runs: ids.map((id) => childSummary(sup.table.get(id)!)) };
    }
    case 'child.send':
    case 'child.explain':
    case 'child.history':
    case 'child.status': {
      const childId = typeof p.child === 'string' ? p.child : '';
      const child = sup.table.get(childId);
      if (!child || child.parentRunId !== runId) throw new BrigError('run_not_found', `run ${childId.slice(0, 80)} is not a child of this run`);
      if (method === 'child.history') {
        const h = await sup.actions.history(childId, { ...(typeof p.offset === 'number' ? { offset: p.offset } : {}), limit: typeof p.limit === 'number' ? Math.min(p.limit, 20) : 10 });
        if (!h.ok) throw h.error;
        return h.value;
      }
      if (method === 'child.explain') {
        return {
          ...childSummary(child),
          caps: sup.table.live.get(childId)?.caps ?? null,
          budget: child.budget ?? null,
          maxSteps: child.maxSteps,
          timeoutMs: child.timeoutMs,
          tokens: child.tokens ?? null,
          costUsd: child.costUsd ?? null,
          outputs: child.outputs.slice(0, 50),
          hint: 'refs.list / ref_* slice its outputs; status for its state; history for its transcript',
        };
      }
      if (method === 'child.status') {
        return { ...childSummary(child), stepsExecuted: child.stepsExecuted, tokens: child.tokens ?? null, costUsd: child.costUsd ?? null, progressLine: child.progressLine };
      }
      const mode = typeof p.mode === 'string' ? (p.mode as SendMode) : undefined;
      const s = await sup.actions.send(childId, typeof p.text === 'string' ? p.text : '', {
        ...(mode ? { mode } : {}),
        ...(typeof p.timeoutMs === 'number' ? { timeoutMs: p.timeoutMs } : {}),
        ...(typeof p.maxTurns === 'number' ? { maxTurns: p.maxTurns } : {}),
      });
      if (!s.ok) throw s.error;
      return s.value;
    }
    case 'child.kill':
    case 'child.steer': {
      const childId = typeof p.child === 'string' ? p.child : '';
      const child = sup.table.get(childId);
      // Only its own direct children: a run cannot reach into another subtree.
      if (!child || child.parentRunId !== runId) throw new BrigError('run_not_found', `run ${childId.slice(0, 80)} is not a child of this run`);
      if (method === 'child.kill') {
        const k = await sup.actions.kill(childId, { confirm: true, by: 'parent' });
        if (!k.ok) throw k.error;
        return { runId: childId, endReason: k.value.endReason };
      }
      const s = await sup.actions.steer(childId, typeof p.message === 'string' ? p.message : '', { by: 'parent' });
      if (!s.ok) throw s.error;
      return s.value;
    }
    case 'llm.append':
    case 'llm.reset': {
      if (!sup.llm) throw new BrigError('model_unavailable', 'this supervisor serves no model calls');
      const msgs = Array.isArray(p.messages) ? p.messages : [];
      const n = method === 'llm.append' ? await sup.llm.append(runId, msgs) : await sup.llm.reset(runId, msgs);
      return { messages: n };
    }
    case 'llm.complete': {
      if (!sup.llm) throw new BrigError('model_unavailable', 'this supervisor serves no model calls');
      if (p.purpose === 'salvage') {
        if (r.salvaged) throw new BrigError('budget_exceeded', 'the one salvage call of this run was made');
        await sup.table.update(runId, (x) => ({ ...x, salvaged: true }));
      }
      return sup.llm.complete(sup.table.get(runId)!, p);
    }
    case 'steer.poll': {
      const live = sup.table.live.get(runId);
      return { steers: live ? live.steers.splice(0, live.steers.length) : [] };
    }
    default:
      throw new BrigError('invalid_input', `unknown method ${method}`, { data: { method } });
  }
}

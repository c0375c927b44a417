import { BrigError, err, ok, type Result } from '../util/errors.js';
import { resumeAgent } from './agent-resume.js';
import type { RunPorts } from './run-table.js';
import type { KilledBy, ResumeOptions, RunRecord, SteerOutcome } from './types.js';

/**
 * Steer and resume, given a run the supervisor already looked up and found in the right
 * state. A steer is a message, never a grant: the respawn derives its lease again from the
 * same parent. A resume re-spawns only the pinned script bytes; it never reads script text
 * from the caller.
 */

export const MAX_STEER_CHARS = 64 * 1024;
/** Steers and messages a child may have waiting (not yet taken at a step boundary). */
export const MAX_PENDING_STEERS = 16;

/** Refusal when a child already has MAX_PENDING_STEERS waiting (else undefined). */
export function steerBacklog(pending: readonly string[] | undefined, runId: string): BrigError | undefined {
  if ((pending?.length ?? 0) < MAX_PENDING_STEERS) return undefined;
  return new BrigError('rate_limited', `run ${runId} has ${MAX_PENDING_STEERS} steers it has not taken yet`, { hint: 'A child takes steers at its next step boundary (or its next progress call); retry once it has.' });
}

export async function steerRun(sup: RunPorts, r: RunRecord, message: string, by: KilledBy): Promise<Result<SteerOutcome, BrigError>> {
  if (typeof message !== 'string' || message.length === 0 || message.length > MAX_STEER_CHARS) {
    return err(new BrigError('invalid_input', `a steer message is 1..${MAX_STEER_CHARS} characters`));
  }
  // A command child has no broker loop to read a steer, and no task a respawn could replace.
  if (r.kind === 'command') {
    return err(new BrigError('invalid_input', `run ${r.id} is a command child: it cannot take a steer (only agent and script children do)`, {
      data: { runId: r.id, kind: r.kind },
      hint: `Kill it (\`brig kill ${r.id}\`) and spawn the command you want instead.`,
    }));
  }
  if (sup.settings.steerInject) {
    const backlog = steerBacklog(sup.table.live.get(r.id)?.steers, r.id);
    if (backlog) return err(backlog);
    sup.table.live.get(r.id)?.steers.push(message);
    sup.table.emit(r, { type: 'steered', mode: 'inject', newRunId: null });
    return ok({ mode: 'inject', runId: r.id, newRunId: null });
  }
  const req = await sup.actions.loadRequest(r.id);
  if (!req) return err(new BrigError('internal', `run ${r.id} has no stored request`));
  const script = r.kind === 'script' ? (await sup.table.store.read(r.id, 'script'))?.toString('utf8') : undefined;
  // Only the steer whose kill ended the run respawns it: a concurrent second steer gets not_running.
  if (!(await sup.actions.endRun(r.id, 'killed', { killedBy: by }))) {
    return err(new BrigError('not_running', `Run ${r.id} is not running (status: ended) -- cannot steer`, { data: { runId: r.id, status: 'ended' } }));
  }
  const again = await sup.actions.spawn(
    { ...req, task: message, async: true, ...(script !== undefined ? { script } : {}) },
    r.parentRunId ? { parentRunId: r.parentRunId } : { callerId: r.callerId },
  );
  if (!again.ok) return again;
  const old = await sup.table.update(r.id, (x) => ({ ...x, steeredTo: again.value.id }));
  sup.table.emit(old, { type: 'steered', mode: 'respawn', newRunId: again.value.id });
  return ok({ mode: 'respawn', runId: r.id, newRunId: again.value.id });
}

export async function resumeRun(sup: RunPorts, r: RunRecord, o: ResumeOptions = {}): Promise<Result<RunRecord, BrigError>> {
  const again = r.kind === 'agent' ? await resumeAgent(sup, r, o) : await resumeScript(sup, r, o);
  // Content-free, like every ledger line: which run continues which.
  if (again.ok) sup.table.ledger.append({ type: 'run.resumed', runId: again.value.id, resumeOf: r.id, rootRunId: again.value.rootRunId, kind: r.kind, from: r.endReason });
  return again;
}

async function resumeScript(sup: RunPorts, r: RunRecord, o: ResumeOptions): Promise<Result<RunRecord, BrigError>> {
  const refuse = (reason: string, msg: string) => err(new BrigError('resume_unavailable', msg, { data: { runId: r.id, reason, status: r.status } }));
  if (r.status === 'ended' && !r.resumable && r.error?.code === 'resume_unavailable') {
    return refuse(r.error.message, `run ${r.id} lost what a resume needs (${r.error.message})`);
  }
  if (r.status !== 'ended' || !r.resumable) return refuse('not_resumable', `run ${r.id} is not resumable (status ${r.status}, end ${r.endReason ?? 'none'})`);
  if (r.resumedBy) return refuse('already_resumed', `run ${r.id} was already resumed as ${r.resumedBy}`);
  const script = await sup.table.store.read(r.id, 'script');
  if (!script) return refuse('script_missing', `the pinned script of ${r.id} is gone`);
  if (!(await sup.table.store.read(r.id, 'checkpoint'))) return refuse('checkpoint_missing', `run ${r.id} has no checkpoint on disk`);
  const req = await sup.actions.loadRequest(r.id);
  if (!req) return refuse('request_missing', `run ${r.id} has no stored request`);
  const again = await sup.actions.spawn({ ...req, script: script.toString('utf8'), async: true, ...(o.timeoutMs !== undefined ? { timeout: o.timeoutMs } : {}), ...(o.maxSteps !== undefined ? { max_steps: o.maxSteps } : {}) }, {
    ...(r.parentRunId ? { parentRunId: r.parentRunId } : { callerId: r.callerId }),
    resumeOf: r.id,
  });
  if (again.ok) await sup.table.update(r.id, (x) => ({ ...x, resumedBy: again.value.id }));
  return again;
}

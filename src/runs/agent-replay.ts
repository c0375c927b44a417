/**
 * Replaying an ended agent run (`brig replay RUN`): a new run of the same stored request —
 * same spec, same image, its lease derived again exactly as a spawn's (never wider) — in a
 * fresh jail, whose model calls are answered from the old run's recorded replies instead of
 * the provider (llm-calls.ts `replayComplete`: no network, no key). The first request the
 * replayed loop sends that differs from the recorded one is its divergence (content-free:
 * step, roles, tool names, lengths), kept on the new run's record (`replay`) and ledgered
 * (`run.replay`) when it ends. Deterministic replay for debugging: the old run is untouched.
 */
import { BrigError, err, type Result } from '../util/errors.js';
import { recordedCalls } from './replay-recording.js';
import type { RunPorts } from './run-table.js';
import type { RunRecord } from './types.js';

/** Why a run cannot be replayed (null: it can). */
export function agentReplayRefusal(r: RunRecord): 'not_an_agent' | 'not_ended' | null {
  if (r.kind !== 'agent') return 'not_an_agent';
  if (r.status !== 'ended') return 'not_ended';
  return null;
}

export async function replayAgent(sup: RunPorts, r: RunRecord): Promise<Result<RunRecord, BrigError>> {
  const refuse = (reason: string, msg: string, hint?: string) => err(new BrigError('replay_unavailable', msg, { data: { runId: r.id, reason, status: r.status }, ...(hint ? { hint } : {}) }));
  const why = agentReplayRefusal(r);
  if (why === 'not_an_agent') return refuse(why, `run ${r.id} is a ${r.kind} child: only an agent run is replayed`, 'A script run is re-run from its pinned bytes with `brig resume` (when it timed out), or spawned again.');
  if (why === 'not_ended') return refuse(why, `run ${r.id} has not ended (status ${r.status}): only an ended agent run is replayed`, `Wait for it (\`brig wait ${r.id}\`) or kill it, then replay.`);
  const text = (await sup.table.store.read(r.id, 'transcript'))?.toString('utf8');
  const calls = text ? recordedCalls(text) : [];
  if (calls.length === 0) return refuse('recording_missing', `run ${r.id} has no recorded model replies on disk (runs/${r.id}/transcript.jsonl)`, 'Only a run whose transcript is still on disk (not pruned) and made at least one model call can be replayed.');
  if (calls.some((c) => c.stamp === null)) return refuse('recording_incomplete', `run ${r.id} was recorded without request digests (an older brig): its replies cannot be compared`, 'Replay a run made by this version of brig.');
  const req = await sup.actions.loadRequest(r.id);
  if (!req) return refuse('request_missing', `run ${r.id} has no stored request`);
  const again = await sup.actions.spawn({ ...req, async: true }, { ...(r.parentRunId ? { parentRunId: r.parentRunId } : { callerId: r.callerId }), replayOf: r.id });
  if (!again.ok) return again;
  const id = again.value.id;
  // Content-free, like every ledger line: which run replays which, and where it diverged.
  sup.table.onEnded(id, () => {
    const x = sup.table.get(id);
    sup.table.ledger.append({ type: 'run.replay', runId: id, replayOf: r.id, rootRunId: again.value.rootRunId, calls: x?.replay?.calls ?? 0, recorded: calls.length, divergenceStep: x?.replay?.divergence?.step ?? null, endReason: x?.endReason ?? null });
  });
  return again;
}

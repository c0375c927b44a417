/**
 * The run tools: start a child, find runs, look at one, steer it, kill it. Each translates to
 * one call of the library's Brig (the daemon's supervisor, or this process's); what the
 * supervisor refuses comes back as a refusal result with its code and hint.
 */
import { z } from 'zod';
import { RUN_STATUSES, type RunStatus } from '../index.js';
import { BrigError } from '../util/errors.js';
import { SpawnArgsSchema, toSpawnRequest } from '../index.js';
import { READ_ONLY, tool, type ToolDef } from './tool-def.js';
import { answer, outputShape, refusal } from './tool-result.js';
import { RunStatusSchema, RunSummarySchema, runLine, runStatus, runSummary, statusText } from './views.js';

export const RunIdSchema = z.string().min(1).max(128).describe('a run id (r-…), as spawn or list gave it');

const spawn = tool({
  name: 'spawn',
  title: 'Spawn a jailed child',
  description:
    'Use to hand work to a child running in its own fresh, network-less, hardened container — a command (argv), a script (script) or an agent (agent) — when you want its output kept out of your context; it returns the run id at once (the child runs on), then call `wait` with that id.',
  annotations: { readOnlyHint: false, destructiveHint: false, idempotentHint: false, openWorldHint: false },
  input: SpawnArgsSchema,
  output: outputShape({ runId: z.string(), status: z.string(), kind: z.string(), label: z.string().nullable() }),
  async run(args, { brig }) {
    const req = toSpawnRequest(args);
    if (!req.ok) return refusal(req.error);
    const r = await brig.spawn(req.value);
    if (!r.ok) return refusal(r.error);
    const run = r.value;
    return answer(
      { runId: run.id, status: run.status, kind: run.kind, label: run.label },
      `spawned ${run.id} (${run.kind}, ${run.status}). Call \`wait\` with runIds ["${run.id}"] for its envelope.`,
    );
  },
});

const list = tool({
  name: 'list',
  title: 'List runs',
  description: 'Use to find runs and their ids — newest first, filtered by status, label, root or parent run — when you do not have the id at hand or want to see what is still going.',
  annotations: READ_ONLY,
  input: z.strictObject({
    status: z.array(z.enum(RUN_STATUSES)).min(1).optional().describe('only runs in these statuses'),
    label: z.string().min(1).optional().describe('only runs spawned with this label'),
    rootRunId: z.string().min(1).optional().describe('only the runs of the tree under this root'),
    parentRunId: z.string().min(1).optional().describe('only the children of this run'),
    kind: z.array(z.enum(['script', 'command', 'agent'])).min(1).optional().describe('only runs of these kinds'),
    since: z.number().positive().optional().describe('only runs created in the last this-many minutes'),
    limit: z.number().int().min(1).max(200).default(20).describe('at most this many, the newest'),
  }),
  output: outputShape({ runs: z.array(RunSummarySchema), total: z.number().describe('runs matching the filters'), more: z.number().describe('matching runs left out by limit') }),
  async run(a, { brig, now }) {
    const all = await brig.list({
      ...(a.status ? { status: a.status as RunStatus[] } : {}),
      ...(a.label ? { label: a.label } : {}),
      ...(a.rootRunId ? { rootRunId: a.rootRunId } : {}),
      ...(a.parentRunId ? { parentRunId: a.parentRunId } : {}),
      ...(a.kind ? { kind: a.kind } : {}),
      ...(a.since !== undefined ? { sinceMinutes: a.since } : {}),
    });
    const t = now();
    const runs = [...all].sort((x, y) => y.createdAt.localeCompare(x.createdAt)).slice(0, a.limit).map((r) => runSummary(r, t));
    const more = all.length - runs.length;
    const text = runs.length === 0 ? 'no runs' : `${runs.map(runLine).join('\n')}${more > 0 ? `\n… ${more} more (raise limit or filter)` : ''}`;
    return answer({ runs, total: all.length, more }, text);
  },
});

const status = tool({
  name: 'status',
  title: 'Status of one run',
  description: 'Use to check on one run without waiting: its status or end reason (and who killed it), steps, elapsed time, tokens and cost, and its last progress line.',
  annotations: READ_ONLY,
  input: z.strictObject({ runId: RunIdSchema }),
  output: outputShape(RunStatusSchema.shape),
  async run({ runId }, { brig, now }) {
    const r = await brig.get(runId);
    if (!r) return refusal(new BrigError('run_not_found', `no run ${runId}`));
    const s = runStatus(r, now());
    return answer(s, statusText(s));
  },
});

const steer = tool({
  name: 'steer',
  title: 'Steer a running child',
  description:
    'Use to change a running child’s course without killing its work: the message reaches it at its next step (or, where the supervisor steers by respawn, the run is replaced and the new run id returned).',
  annotations: { readOnlyHint: false, destructiveHint: false, idempotentHint: false, openWorldHint: false },
  input: z.strictObject({ runId: RunIdSchema, message: z.string().min(1).max(4096).describe('what the child should do differently') }),
  output: outputShape({ mode: z.enum(['inject', 'respawn']), runId: z.string(), newRunId: z.string().nullable() }),
  async run({ runId, message }, { brig }) {
    const r = await brig.steer(runId, message);
    if (!r.ok) return refusal(r.error);
    const s = r.value;
    const text = s.mode === 'inject' ? `steered ${runId}: delivered at its next step` : `steered ${runId}: killed and respawned as ${s.newRunId}; \`wait\` on that id`;
    return answer({ mode: s.mode, runId: s.runId, newRunId: s.newRunId }, text);
  },
});

const kill = tool({
  name: 'kill',
  title: 'Kill a run',
  description:
    'Use only to stop a run you no longer want (stuck, wrong, too costly): it ends `killed` by operator and its in-flight work is discarded (what it had written is kept as a partial result); pass confirm: true — this call is the confirmation.',
  annotations: { readOnlyHint: false, destructiveHint: true, idempotentHint: true, openWorldHint: false },
  input: z.strictObject({ runId: RunIdSchema, confirm: z.literal(true).describe('must be true: killing discards the run’s in-flight work') }),
  output: outputShape(RunStatusSchema.shape),
  async run({ runId }, { brig, now }) {
    const r = await brig.kill(runId, { confirm: true, by: 'operator' });
    if (!r.ok) return refusal(r.error);
    const s = runStatus(r.value, now());
    return answer(s, statusText(s));
  },
});

const send = tool({
  name: 'send',
  title: 'Send a message to a running agent child',
  description:
    'Use to tell a running agent child something mid-run (a correction, an answer, new information): it reaches the child at its next step; mode `wait` returns its next reply, `fire-and-forget` returns at once, and `ping-pong` is a conversation of max_turns turns, one round per call: it returns the child\'s reply and a conversation id — answer it with another send passing `conversation` and your answer as text.',
  annotations: { readOnlyHint: false, destructiveHint: false, idempotentHint: false, openWorldHint: false },
  input: z.strictObject({
    runId: RunIdSchema,
    text: z.string().min(1).max(16_000).describe('the message for the child (in a conversation: your answer to its last reply)'),
    mode: z.enum(['fire-and-forget', 'wait', 'ping-pong']).optional().describe('default fire-and-forget (ping-pong when conversation is given)'),
    timeoutMs: z.number().int().positive().max(50_000).optional().describe('wait / ping-pong: how long to wait for the reply (≤ 50000)'),
    // Out of range is refused by brig (invalid_input, with the bounds), not by the schema.
    max_turns: z.number().int().optional().describe('ping-pong: turns of the conversation (0–5, default 3; outside is refused)'),
    conversation: z.string().min(1).max(64).optional().describe('ping-pong: the conversation id a round before returned; text is your answer'),
  }),
  output: outputShape({
    runId: z.string(),
    mode: z.string(),
    replies: z.array(z.object({ step: z.number(), text: z.string(), toolCalls: z.array(z.string()) })),
    status: z.string(),
    endReason: z.string().nullable(),
    timedOut: z.boolean(),
    conversation: z.object({ id: z.string(), turn: z.number(), maxTurns: z.number(), open: z.boolean() }).optional(),
  }),
  async run({ runId, text, mode, timeoutMs, max_turns, conversation }, { brig }) {
    const r = await brig.send(runId, text, { ...(mode ? { mode } : {}), ...(timeoutMs ? { timeoutMs } : {}), ...(max_turns !== undefined ? { maxTurns: max_turns } : {}), ...(conversation ? { conversation } : {}) });
    if (!r.ok) return refusal(r.error);
    const s = r.value;
    const lines = [`sent to ${runId} (delivered at its next step)`, ...s.replies.map((x) => `reply at step ${x.step}: ${x.text}`)];
    if (s.timedOut) lines.push(`no reply within the timeout; the run is ${s.status}`);
    const c = s.conversation;
    if (c) lines.push(c.open ? `conversation ${c.id}: turn ${c.turn} of ${c.maxTurns} — answer with send {conversation: "${c.id}", text}` : `conversation ${c.id} ended at turn ${c.turn} of ${c.maxTurns}`);
    return answer({ runId: s.runId, mode: s.mode, replies: s.replies, status: s.status, endReason: s.endReason, timedOut: s.timedOut, ...(c ? { conversation: c } : {}) }, lines.join('\n'));
  },
});

const history = tool({
  name: 'history',
  title: "Page a run's transcript",
  description: "Use only when an envelope is not enough and you need what an agent child's model was actually sent and answered: returns a bounded page (≤ 50 entries) of its transcript.",
  annotations: { readOnlyHint: true, destructiveHint: false, idempotentHint: true, openWorldHint: false },
  input: z.strictObject({ runId: RunIdSchema, offset: z.number().int().min(0).optional(), limit: z.number().int().min(1).max(50).optional() }),
  output: outputShape({ runId: z.string(), offset: z.number(), entries: z.array(z.unknown()), total: z.number(), more: z.number() }),
  async run({ runId, offset, limit }, { brig }) {
    const r = await brig.history(runId, { ...(offset !== undefined ? { offset } : {}), ...(limit !== undefined ? { limit } : {}) });
    if (!r.ok) return refusal(r.error);
    const h = r.value;
    return answer({ ...h }, `${h.entries.map((e, i) => `#${h.offset + i} ${JSON.stringify(e)}`).join('\n')}\n(${h.entries.length} of ${h.total}${h.more ? `; ${h.more} more` : ''})`);
  },
});

export const RUN_TOOLS: ToolDef[] = [spawn, list, status, steer, kill, send, history];

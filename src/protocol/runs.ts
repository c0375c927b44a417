/**
 * The run vocabulary: statuses, end reasons, kinds, the run record, the spawn request and the
 * packet the child reads. What every face (library, HTTP, CLI, MCP, console) and the child
 * speak; runs/ declares its schemas against these types.
 */
import type { EgressAsk } from './egress.js';
import type { ErrorCode } from './error-codes.js';
import type { Capability, Limits } from './leases.js';

export const RUN_STATUSES = ['queued', 'starting', 'running', 'materializing', 'ended'] as const;
export type RunStatus = (typeof RUN_STATUSES)[number];
/** INV-8: every run ends with exactly one of these. */
export const END_REASONS = ['completed', 'failed', 'killed', 'swept', 'watchdog_timeout', 'ghost_sweep'] as const;
export type EndReason = (typeof END_REASONS)[number];
export const KILLED_BY = ['parent', 'health_monitor', 'operator', 'system'] as const;
export type KilledBy = (typeof KILLED_BY)[number];
/** The `failed` event's classification of a non-completed end. */
export const TERMINAL_STATUSES = ['cancelled', 'failed', 'timeout'] as const;
export type TerminalStatus = (typeof TERMINAL_STATUSES)[number];
export const RUN_KINDS = ['script', 'command', 'agent'] as const;
export type RunKind = (typeof RUN_KINDS)[number];

/**
 * The jail as the engine reported it after create, once verification passed: what an operator
 * audits (the console's run detail, the run record). Content-free: ids, enums and numbers.
 */
export interface JailVerified {
  containerId: string;
  image: string;
  user: string;
  network: string;
  readOnlyRoot: boolean;
  capDrop: string[];
  noNewPrivileges: boolean;
  /** sha256 (12 hex) of the seccomp profile the engine holds for the container. */
  seccompSha: string | null;
  ipc: string;
  limits: { cpu: number | null; memoryMb: number | null; memorySwapMb: number | null; pids: number | null; tmpfsMb: number | null; diskMb: number | null };
  workspace: { driver: string; type: string | null; options: string | null };
  /** Host paths bound into the jail (the broker socket directory, artifacts), all read-only. */
  binds: { target: string; readOnly: boolean }[];
  verifiedAt: string;
  /**
   * A jail from the warm pool: its slot, when it was made and verified, and when it was
   * verified again and handed this run. Absent: made for this run (the cold path).
   */
  pooled?: {
    slot: string;
    readyAt: string;
    assignedAt: string;
    /** The child was the slot's pre-started agent runtime (loaded before the run, given the run at assignment), not an argv exec'd then. */
    prestarted?: true;
  };
  /**
   * A foreign image (not brig's child image): what the image contract overrode of its config
   * (`user`, `entrypoint`, `cmd`, `workdir`, `healthcheck`, `env:NAME`), the names of the image
   * ENV the child kept, and the runtime directory's content hash bound at /opt/brig.
   */
  foreignImage?: { overridden: string[]; envKept: string[]; runtime: string };
  /** The image asked for was not there and the jail runs in brig's child image instead (an agent spec's `image: toolbox`): why. */
  imageFallback?: { asked: string; note: string };
}

/** Why a run did not complete: a code of the one catalog (util/error-codes.ts) and a message with no host paths. */
export interface RunError {
  code: ErrorCode;
  message: string;
}

/** How a run being materialized will end; saved first, so a crash mid-way is redone on restart. */
export interface PendingEnd {
  reason: EndReason;
  killedBy?: KilledBy;
  error?: RunError;
  exitCode?: number;
  oomKilled?: boolean;
}

/** Where a replay stands: calls answered from the recording, and its first divergence (null: none). */
export interface ReplayReport {
  of: string;
  calls: number;
  recorded: number;
  divergence: { step: number; call: number; what: string } | null;
}

/** The steps of a run's life the supervisor stamps, in the order they usually happen (runs/run-timing.ts). */
export const TIMING_MARKS = ['requested', 'admitted', 'launched', 'leased', 'jail_ready', 'started', 'exit_detected', 'pending_end_durable', 'collect_cleared', 'outputs_read', 'collected', 'ended_durable', 'envelope', 'released'] as const;
export type TimingMark = (typeof TIMING_MARKS)[number];

/**
 * Where a run's time went: each mark's time in ms since `requested`, on the supervisor's
 * monotonic clock (never the wall clock). Content-free; absent on runs ended by another
 * supervisor or before this existed; a mark is missing when the run never got there.
 */
export interface RunTiming {
  marks: Partial<Record<TimingMark, number>>;
}

/** One run. Persisted as JSON under $BRIG_HOME/runs/<id>/run.json with atomic writes. */
export interface RunRecord {
  v: 1;
  id: string;
  rootRunId: string;
  parentRunId: string | null;
  /** Run ids from the root to this run (inclusive): the namespace path. */
  path: string[];
  depth: number;
  callerId: string;
  agent: string;
  kind: RunKind;
  label: string | null;
  status: RunStatus;
  /** Set exactly once, when status becomes `ended`. */
  endReason: EndReason | null;
  killedBy: KilledBy | null;
  terminalStatus: TerminalStatus | null;
  leaseId: string | null;
  /** sha256 of the task text. */
  taskHash: string;
  /**
   * sha256 of the whole canonical request (kind, task, argv or script bytes, caps, profile,
   * limits, artifacts, …; not `async`): the duplicate-detection key. Absent on old records.
   */
  requestHash?: string;
  createdAt: string;
  /**
   * When the run last began waiting for a slot, if not at `createdAt`: the start of the
   * supervisor that took it over from a drained or dead one (a wait while no supervisor ran
   * is not the queue's, so `queueTimeoutMs` counts from here).
   */
  queuedAt?: string;
  startedAt: string | null;
  endedAt: string | null;
  timeoutMs: number;
  maxSteps: number;
  stepsExecuted: number;
  /** The child's last progress line (bounded); shown by list, never put into the ledger. */
  progressLine: string | null;
  lastProgressAt: string | null;
  exitCode: number | null;
  /** The engine said the kernel's OOM killer ended a process of the jail (State.OOMKilled); absent otherwise. */
  oomKilled?: boolean;
  async: boolean;
  /** True when ended by the watchdog after a checkpoint with a pinned script. */
  resumable: boolean;
  resumeOf: string | null;
  resumedBy: string | null;
  /** `brig replay`: the agent run this one re-runs against its recorded model replies. */
  replayOf?: string;
  /** A replay's report so far: model calls answered, and the first request that differed (content-free). */
  replay?: ReplayReport;
  hasCheckpoint: boolean;
  expectedOutputs: string[];
  missingOutputs: string[];
  /** Host directory of the collected /workspace/out, once materialized. */
  resultDir: string | null;
  /** The host repository the run was given (--repo), resolved at intake: its top directory, the ref, its commit. */
  repo?: RunRepo;
  /** What the child changed in that repository, computed on the host at its end (absent: no repo, or not ended). */
  changes?: RunChanges;
  /** The lease's resultBytes: the ceiling on what this run may materialize (absent on old records). */
  resultCapBytes?: number;
  /** The lease's maxChildren: how many children this run may have active at once. */
  childCap?: number;
  outputBytes: number;
  outputFiles: number;
  /** The collected files (first 1000), relative to out/. */
  outputs: { path: string; bytes: number }[];
  /** Entries of /workspace/out not copied and why (symlink, device…). */
  skipped: { path: string; reason: string }[];
  /** Bounded tails of stdout/stderr (stdout goes into the result). */
  stdoutTail: string;
  stderrTail: string;
  /** The value passed to result(), JSON, when it fits a broker line; else null and resultSpooled. */
  result: unknown;
  /** Bytes of a result too big for a line: the SDK spooled it and it became the `result.json` ref. */
  resultSpooled?: number | null;
  /**
   * The run was killed or timed out: its outputs and stdio are what it had written by then
   * (collected all the same, INV-8), not a finished result.
   */
  partial?: boolean;
  /** Where this run's time went, stamped by the supervisor that ran it (`brig explain RUN --timing`). */
  timing?: RunTiming;
  /** Set only while `materializing`: the end it is collecting for. */
  pendingEnd?: PendingEnd;
  error: RunError | null;
  /** Set when the run is steered with steerInject off: the replacement run. */
  steeredTo: string | null;
  /** Kind `agent`: the spec and model alias it runs. */
  agentSpec?: string;
  model?: string;
  /** Tokens (provider-reported input + output, summed over every model call of this run). */
  tokens?: number;
  /** Cost in USD of those calls; null once any call's price was unknown (cost unknown, never 0). */
  costUsd?: number | null;
  /** Its model calls were served by brig's own local provider (priced 0): the envelope's cost line says `local`. */
  modelLocal?: boolean;
  /** The lease's token and cost budgets for this run (0 = none; set at launch). */
  budget?: { tokens: number; costUsd: number };
  /** The tool the child reported last (content-free: a tool name). */
  activeTool?: string | null;
  /** The jail as the engine reported it once verification passed (what an operator audits). */
  jail?: JailVerified;
  /**
   * The name the engine knows this run's jail by when it is not the run id: the warm-pool
   * slot it was handed (set before the child starts, so a restart finds and sweeps by it).
   */
  jailKey?: string;
  /** Attribution: the parent's step count when it spawned this run (reference 001). */
  parentStep?: number | null;
  /**
   * The id of the parent's broker call that spawned this run: a `spawn` the parent's client
   * re-sends after a reconnect (`resent`) with this id is this run, never a second one.
   */
  spawnCallId?: string | number;
  /**
   * The id of the last `progress` call counted: the same call re-sent after a reconnect
   * (`resent`) is answered without counting the step again. Saved with the count it made.
   */
  progressCallId?: string | number;
  /** Kind `agent`: its one salvage call was made. */
  salvaged?: boolean;
  /**
   * Set with the end, cleared once its resources are released and its end announced: a
   * supervisor that died in between finishes the job at its next start (exactly one
   * `lifecycle_ended`, nothing left behind).
   */
  unreleased?: boolean;
}

/** Bounds on what a request may carry; over a bound is `invalid_input`, never truncated. */
export const SPAWN_BOUNDS = {
  taskChars: 64 * 1024,
  scriptBytes: 1024 * 1024,
  labelChars: 128,
  parentSummaryMaxTokens: 2000,
  domainKnowledgeChars: 64 * 1024,
  /** At most this many entries in `domain_knowledge` (their characters together ≤ domainKnowledgeChars). */
  domainKnowledgeItems: 64,
  argvItems: 256,
  /**
   * `max_steps` may not ask for fewer steps than this (the reference's floor: a child given too
   * few steps only salvages); the cap is the supervisor's configured default (defaultMaxSteps,
   * 50 unless configured), and the floor never passes the cap. Outside is refused, never clamped.
   */
  maxStepsFloor: 30,
} as const;

/**
 * A tool group's name (the reference's `tool_groups`): a group of the policy in force
 * (`groups:` in policy.yaml — workspace, delegation, slicing, models, artifacts in the default
 * one). A spawn naming groups has its agent child offered only those groups' tools (and
 * `finish`), within what its lease and spec allow: a group never widens anything.
 */
export type ToolGroup = string;
export const TOOL_GROUP_RE = /^[a-z][a-z0-9_-]{0,63}$/;

/**
 * The limits a spawn may narrow — the jail's size and the child's token and cost budgets (a
 * parent gives a child less than it holds). The lease clamps each to the parent's; never widens.
 */
export type SpawnLimits = Partial<Pick<Limits, 'cpu' | 'memoryMb' | 'pids' | 'diskMb' | 'tokens' | 'costUsd'>>;

/**
 * One spawn request, for every face, as parsed (defaults filled). snake_case because it is
 * wire-visible: the HTTP body, the broker's spawn params and the library call are one shape.
 */
/** A jailed spawner's `repo`: the repository it was given itself, at the same base. */
export const REPO_INHERIT = 'inherit';

export interface RunRepo {
  path: string;
  ref: string;
  base: string;
}

export interface RunChanges {
  filesChanged: number;
  insertions: number;
  deletions: number;
  /** The child's own commits on the base (their messages are in the stat ref). */
  commits: number;
  /** The `changes.patch` ResultRef (absent when it could not be kept: `error` says why). */
  patchRef?: string;
  /** The `changes.stat` ResultRef (JSON: per-file counts, commit messages). */
  statRef?: string;
  patchBytes: number;
  error?: string;
}

export interface SpawnRequest {
  task: string;
  /** Kind `agent`: the agent spec it runs (`general` by default). Otherwise a name for the run. */
  agent: string;
  /** Kind `agent`: a model alias of the supervisor's configuration. */
  model?: string;
  kind: RunKind;
  /** Script source (an ES module exporting `default async function (brig)`); kind `script`. */
  script?: string;
  /** argv run directly in the jail (never a shell string); kind `command`. */
  argv?: string[];
  image?: string;
  caps?: Capability[];
  limits?: SpawnLimits;
  /** Egress rules the child asks for (policy rule ids or narrowed rules); never inherited. */
  egress?: EgressAsk;
  profile?: string;
  objective?: string;
  /**
   * Handed to the child read-only at /artifacts/<name>: host paths (operator spawns only), or
   * ResultRef ids (`ref_…`, REF_ID_RE) of runs the spawner may read — a lead's own
   * descendants' — resolved by the supervisor from the result store, never a path a child names.
   */
  artifact_refs: string[];
  /** Facts the child should know, one entry each (the prompt's `Domain knowledge` section). */
  domain_knowledge?: string[];
  /** Kind `agent`: only the tools of these policy groups (and `finish`) are offered. */
  tool_groups?: ToolGroup[];
  include_parent_history: 'none' | 'summary';
  /**
   * Only with include_parent_history `summary`; bounded by parentSummaryMaxTokens (chars / 4).
   * A lead's spawn leaves it out: the supervisor condenses the lead's conversation into it.
   */
  parent_summary?: string;
  /** Paths under /workspace/out that must exist afterwards (relative, no `..`). */
  expected_outputs: string[];
  /**
   * A host repository `PATH[@REF]` (an operator's; absolute PATH, REF default HEAD) cloned clean
   * into /workspace/repo; its change comes back as the `changes.patch` ref (docs/results.md).
   * From a jailed spawner only REPO_INHERIT: the repository it was given, at the same base.
   */
  repo?: string;
  /** SPAWN_BOUNDS.maxStepsFloor … the configured default; default: the configured default. */
  max_steps?: number;
  /** Run timeout in ms (clamped by maxRunTimeoutMs and the lease). */
  timeout?: number;
  label?: string;
  async: boolean;
  /**
   * Never from a wire (the schema has no such key): a graph node's upstream summaries
   * (SpawnContext.summaries) as intake admitted them, kept with the request so a relaunch
   * hands the same packet.
   */
  upstream?: { node: string; text: string }[];
}

/** A spawn request as a caller writes it: the fields with defaults may be left out. */
export type SpawnRequestInput = Omit<SpawnRequest, 'agent' | 'kind' | 'artifact_refs' | 'include_parent_history' | 'expected_outputs' | 'async'> &
  Partial<Pick<SpawnRequest, 'agent' | 'kind' | 'artifact_refs' | 'include_parent_history' | 'expected_outputs' | 'async'>>;

/** Who is asking. Faces set it; the broker sets parentRunId from the authenticated token. */
export interface SpawnContext {
  /** The parent run (a grandchild spawn through the broker); absent for operator spawns. */
  parentRunId?: string;
  /** Caller identity for duplicate detection; defaults to parentRunId or `operator`. */
  callerId?: string;
  /** Internal: this spawn re-runs a resumable run's pinned script. */
  resumeOf?: string;
  /** Internal: this spawn replays an ended agent run against its recorded model replies. */
  replayOf?: string;
  /** Set by the broker: the parent's step count when it spawned this child (attribution). */
  parentStep?: number;
  /** Set by the broker: the id of the parent's spawn call, kept on the child (`spawnCallId`) so a re-sent call finds it. */
  callId?: string | number;
  /** Aborting it kills the run (killedBy operator); its outputs are still collected. */
  signal?: AbortSignal;
  /**
   * In-process only (graphs/, never from a wire): the committed out/ of each named run — ended
   * `completed` — bound read-only at /artifacts/<as>, checked as an artifact is; or a ResultRef
   * (a graph input), checked as a spawner's `artifact_refs` are and bound at /artifacts/<as>.
   */
  inputs?: ({ as: string; runId: string } | { as: string; ref: string })[];
  /**
   * In-process only (graphs/ `context.summaries_of`): upstream nodes' bounded summaries, carried
   * in the packet (`upstream`) as data — never spliced into the task.
   */
  summaries?: { node: string; text: string }[];
}

/** Read-only to the child: written into /workspace/.brig/packet.json, 0444. */
export interface SpawnPacket {
  v: 1;
  runId: string;
  task: string;
  objective: string | null;
  /** The names under /artifacts. */
  artifactRefs: string[];
  domainKnowledge: string[];
  /** The tool groups the request narrowed an agent's tools to (empty: not narrowed). */
  toolGroups: ToolGroup[];
  parentSummary: string | null;
  workspaceDir: string;
  depth: number;
  maxDepth: number;
  expectedOutputs: string[];
  maxSteps: number;
  timeoutMs: number;
  lease: { id: string; caps: Capability[]; expiresAt: string };
  /** Present on a resumed run: the checkpoint is untrusted input from an earlier child. */
  resumed: boolean;
  /** Kind `agent`: what its in-jail loop runs (docs/agents.md, "The packet's agent part"). */
  agent?: AgentPacket;
  /**
   * A graph node's attempt: where the outputs it declared as inputs are — `/artifacts`, bound
   * read-only (the seeds' `graphSharedDir`, made safe: nothing a node can write is shared).
   */
  graphSharedDir?: '/artifacts';
  /**
   * A graph node's `context.summaries_of`: each upstream node's committed result, its head
   * (≤ 1 KiB). Data written by other children: an agent's prompt shows it fenced and labelled
   * as data, never as instructions.
   */
  upstream?: { node: string; text: string }[];
}

export interface AgentPacket {
  name: string;
  /** The spec's markdown body. */
  instructions: string;
  /** The tools this lease allows (finish always). */
  tools: string[];
  maxSteps: number;
  workspaceAware: boolean;
  role: 'worker' | 'coordinator';
  autoCompactThreshold: number;
  toolResultMaxChars: number;
  maxConsecutiveFormatErrors: number;
  contextWindow: number;
  maxOutputTokens: number;
  /** With `web_search` among the tools: the operator's search endpoint, `{query}` (and optionally `{count}`) to fill in. */
  webSearchUrl?: string;
  /**
   * How often the loop reports `progress` while one tool call runs (a long build is work, not
   * silence: the stuck-kill counts silence). Absent (an older supervisor): 30 s.
   */
  heartbeatMs?: number;
}

// ── The run directory and the records in it ──

/**
 * May `callerRunId` read the refs of `target`? Only a strict descendant in its tree: a run
 * whose path (root → run) passes through the caller. The drill-in (refs/child-refs.ts) and the
 * hand-off of refs to a new child (runs/ref-artifact.ts) ask this one predicate.
 */
export function isDescendant(callerRunId: string, callerRootRunId: string, target: Pick<RunRecord, 'id' | 'rootRunId' | 'path'> | undefined): boolean {
  if (!target || target.id === callerRunId || target.rootRunId !== callerRootRunId) return false;
  if (target.path[target.path.length - 1] !== target.id) return false;
  return target.path.slice(0, -1).includes(callerRunId);
}

/** Run ids are `r-` and lowercase letters, digits and dashes: safe as a directory name. */
export const RUN_ID = /^r-[a-z0-9-]{6,64}$/;
export function isRunId(id: string): boolean {
  return RUN_ID.test(id);
}

/** The files of $BRIG_HOME/runs/<id>/ (runs/run-store.ts is the one door that writes them). */
export const RUN_FILES = {
  record: 'run.json',
  /** The spawn request as admitted (parsed, defaults filled): what a restart or a respawn runs. */
  request: 'request.json',
  /** Kind `agent`: the spec as admitted, pinned like a script. */
  agent: 'agent.json',
  /** The artifacts as the spawn's check saw them (real path, device, inode): what the jail binds. */
  artifacts: 'artifacts.json',
  /** The packet the child was handed (the supervisor's copy; the jail's is /workspace/.brig/packet.json). */
  packet: 'packet.json',
  script: 'script.mjs',
  checkpoint: 'checkpoint.json',
  /** Kind `agent`: every message and reply of its conversation, one JSON line each (runs/llm-calls.ts). */
  transcript: 'transcript.jsonl',
  out: 'out',
} as const;

/** Wall time of a run: from its start (or creation) to its end (or now). */
export function elapsedMs(rec: Pick<RunRecord, 'startedAt' | 'createdAt' | 'endedAt'>, now: Date): number {
  const from = Date.parse(rec.startedAt ?? rec.createdAt);
  const to = rec.endedAt ? Date.parse(rec.endedAt) : now.getTime();
  return Math.max(0, to - from);
}

const isStr = (v: unknown): v is string => typeof v === 'string';
const isStrOrNull = (v: unknown) => v === null || typeof v === 'string';
const isInt = (v: unknown) => typeof v === 'number' && Number.isSafeInteger(v) && v >= 0;
const oneOf = (list: readonly string[]) => (v: unknown) => typeof v === 'string' && list.includes(v);
const orNull = (f: (v: unknown) => boolean) => (v: unknown) => v === null || f(v);

/** Every field a run record must carry, with its check: what a reader relies on. */
const RECORD_FIELDS: Record<string, (v: unknown) => boolean> = {
  id: (v) => isStr(v) && isRunId(v),
  rootRunId: isStr,
  parentRunId: isStrOrNull,
  path: (v) => Array.isArray(v) && v.every(isStr),
  depth: isInt,
  callerId: isStr,
  agent: isStr,
  kind: oneOf(RUN_KINDS),
  label: isStrOrNull,
  status: oneOf(RUN_STATUSES),
  endReason: orNull(oneOf(END_REASONS)),
  killedBy: orNull(oneOf(KILLED_BY)),
  terminalStatus: orNull(oneOf(TERMINAL_STATUSES)),
  leaseId: isStrOrNull,
  taskHash: isStr,
  createdAt: isStr,
  startedAt: isStrOrNull,
  endedAt: isStrOrNull,
  timeoutMs: isInt,
  maxSteps: isInt,
  stepsExecuted: isInt,
  progressLine: isStrOrNull,
  lastProgressAt: isStrOrNull,
  exitCode: (v) => v === null || (typeof v === 'number' && Number.isInteger(v)),
  async: (v) => typeof v === 'boolean',
  resumable: (v) => typeof v === 'boolean',
  resumeOf: isStrOrNull,
  resumedBy: isStrOrNull,
  hasCheckpoint: (v) => typeof v === 'boolean',
  expectedOutputs: (v) => Array.isArray(v) && v.every(isStr),
  missingOutputs: (v) => Array.isArray(v) && v.every(isStr),
  resultDir: isStrOrNull,
  outputBytes: isInt,
  outputFiles: isInt,
  outputs: Array.isArray,
  skipped: Array.isArray,
  stdoutTail: isStr,
  stderrTail: isStr,
  error: (v) => v === null || (!!v && typeof v === 'object' && isStr((v as RunError).code) && isStr((v as RunError).message)),
  steeredTo: isStrOrNull,
};

/**
 * Checks a parsed run.json against the record's shape: the first field that is missing or of
 * the wrong type, or null when it is a record. Plain code (no schema library), so the thin
 * read-only view and the supervisor's store judge a file the same way: a bad file is
 * `corrupt`, never a cast.
 */
export function runRecordProblem(x: unknown): string | null {
  if (!x || typeof x !== 'object' || Array.isArray(x)) return 'not a JSON object';
  const o = x as Record<string, unknown>;
  if (o.v !== 1) return `v is ${JSON.stringify(o.v)}, not 1`;
  for (const [k, ok] of Object.entries(RECORD_FIELDS)) if (!ok(o[k])) return `${k} is missing or of the wrong type`;
  return null;
}

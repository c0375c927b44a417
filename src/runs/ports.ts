import type { EgressAsk, EgressBudgets, EgressGrant } from '../protocol/index.js';
import type { Capability, Limits } from '../lease/index.js';
import type { CollectObserver, CollectedFile, JailDriver } from '../jail/index.js';
import type { Ledger } from '../ledger/index.js';
import type { BrigError, Result } from '../util/errors.js';
import type { AgentSpec } from '../agents/index.js';
import type { ModelPort } from './model-port.js';
import type { Timers } from './progress-fork.js';
import type { ChildRefHandle, ResultRef, SpawnPacket, SupervisorSettings, RunRecord, ToolGroup } from './types.js';
import type { DurableWriter } from '../util/write-journal.js';

/**
 * What the supervisor needs from the parts around it, in its own words. The composition
 * root (src/daemon) adapts the real LeaseStore, BrokerServer and ResultStore to these; unit
 * tests use in-memory twins. Keeping them narrow keeps runs/ testable without Docker.
 */

export interface LeaseGrant {
  leaseId: string;
  /** The bearer the child presents to the broker. Never persisted by the supervisor. */
  token: string;
  caps: Capability[];
  limits: Limits;
  expiresAt: string;
  /** The egress the lease holds; absent: none (no egress socket, no proxy variables). */
  egress?: EgressGrant | undefined;
  /** Each ancestor lease's egress budgets, nearest first: a child's connections and bytes count against them too. */
  egressAncestors?: { leaseId: string; budgets: EgressBudgets }[] | undefined;
}

export interface LeaseIssue {
  runId: string;
  rootRunId: string;
  depth: number;
  /** The parent run's lease, or null for an operator (root) spawn. */
  parentLeaseId: string | null;
  /** What the parent does to make this child: `spawn` (a broker spawn) or `graph` (a node of a graph it runs with graph_run); the parent's lease must hold it. */
  via?: 'spawn' | 'graph';
  /** The run's own timeout: the lease never outlives it. */
  timeoutMs: number;
  /** The bearer stays valid this long past timeoutMs (never past the parent lease). */
  graceMs?: number;
  profile?: string;
  caps?: Capability[];
  limits?: Partial<Limits>;
  egress?: EgressAsk;
}

/** The egress gate, per run: its socket beside broker.sock; close() destroys open connections. */
export interface EgressPort {
  openRun(o: { runId: string; leaseId: string; dir: string; grant: EgressGrant; ancestors?: { leaseId: string; budgets: EgressBudgets }[] }): Promise<{ socketPath: string; close(reason?: 'ended' | 'lease_revoked'): Promise<void> }>;
  /** The child's environment for its lease's credential bindings that ask for a placeholder (never a secret). */
  placeholders?(runId: string, grant: EgressGrant): Record<string, string>;
}

export interface LeasePort {
  issue(req: LeaseIssue): Promise<Result<LeaseGrant, BrigError>>;
  /** Whether the policy in force has this profile (the nearest name in the refusal); absent: not checked before launch. */
  checkProfile?(name: string): Result<void, BrigError>;
  /** Whether a spawn under this profile (absent: the operator's) may run in `image` (policy `images`); absent: any. */
  /** The image against the profile the run's lease will have: the named one, else the parent lease's, else root's. */
  checkImage?(profile: string | undefined, image: string, parentLeaseId?: string): Result<void, BrigError>;
  revoke(leaseId: string, by: string, reason: string): Promise<void>;
  /**
   * Revokes the live lease this run holds, if any — also one a launch issued that no record
   * names (a crash before its save): a run caught `starting` launches again with a fresh one.
   */
  revokeRun(runId: string, by: string, reason: string): Promise<void>;
  /** Called for every lease revoked by anyone (cascades included) with who revoked it. */
  onRevoked(cb: (leaseId: string, by: string) => void): () => void;
  /** A live lease's egress and its ancestors' budgets (a reattached run's gate socket); undefined: none, revoked or unknown. */
  egressOf?(leaseId: string): Pick<LeaseGrant, 'egress' | 'egressAncestors'> | undefined;
}

export interface BrokerHandle {
  socketPath: string;
  close(): Promise<void>;
}

export interface BrokerPort {
  /** Listen on `<dir>/broker.sock` for this run; calls reach Supervisor.handleChildCall. */
  /** `methods`: the only methods the run's bearer may call (an agent's tool surface); absent: what the lease allows. */
  openRun(o: { runId: string; leaseId: string; dir: string; packet: SpawnPacket; methods?: readonly string[] | undefined }): Promise<BrokerHandle>;
}

/** What a run leaves besides /workspace/out: each becomes a ResultRef of its own. */
export interface RunExtras {
  result?: unknown;
  /** A result value too big for a broker line, collected to this host file (JSON text). */
  resultFile?: string;
  /** An agent's transcript (runs/<id>/transcript.jsonl), materialized as the `transcript.jsonl` ref. */
  transcriptFile?: string;
  stdout?: string;
  stderr?: string;
  /** A repository's change: the patch and its stat (host files), kept as the `changes.patch` / `changes.stat` refs. */
  changesPatch?: string;
  changesStat?: string;
  /** An agent's run: its answer is kept as `answer.txt` beside its value. */
  agent?: boolean;
  /** The out/ files as the jail's collect reported them, each with what `observe` returned: index reuses those scans instead of re-reading. */
  collected?: readonly CollectedFile[];
}

export interface ResultsPort {
  /** Where a run's /workspace/out is collected to (must not exist yet). */
  outDir(rootRunId: string, runId: string): string;
  /** Fed each out/ file's bytes by the jail's collect as they are written (hash, line index, kind in that one pass). */
  observe?: (relPath: string) => CollectObserver;
  /**
   * Index a run's materialized output directory as ResultRefs, plus the child's result value
   * and its bounded stdout/stderr tails when present; returns how many refs the run has.
   */
  index(rootRunId: string, runId: string, dir: string, extras?: RunExtras): Promise<number>;
  /** A live ref and the host path of its file (a ref handed to a child as an artifact); null when there is none. */
  resolveRef?(ref: string): Promise<{ ref: ResultRef; hostPath: string } | null>;
  /** Drop a run's ResultRefs (retention sweep). */
  remove(rootRunId: string, runId: string): Promise<void>;
  /** At start: remove what interrupted materializations left (temps, never-indexed dirs of ended runs). */
  sweepInterrupted?(isLive: (runId: string) => boolean): Promise<{ removed: number; bytes: number }>;
}

export interface Clock {
  now(): Date;
}

export const systemClock: Clock = { now: () => new Date() };

/**
 * Lifecycle hooks (reference 000). A failing hook degrades: it is ledgered
 * (`run.hook_failed`) and never blocks or breaks a run.
 */
export interface SupervisorHooks {
  /**
   * Before a run is announced (its record, request and pinned script are on disk, its child
   * not started): prepare what it needs; the rollback undoes that if the spawn then fails.
   */
  prepareSpawn?(run: RunRecord): Promise<{ rollback(): Promise<void> }>;
  /** After a run ended, was collected and released: its content-free end. */
  onEnded?(end: RunEndMeta): Promise<void> | void;
}

/** A run's end without content: ids, enums, counts, durations (INV-7). */
export interface RunEndMeta {
  runId: string;
  rootRunId: string;
  parentRunId: string | null;
  path: string[];
  depth: number;
  kind: RunRecord['kind'];
  endReason: NonNullable<RunRecord['endReason']>;
  killedBy: RunRecord['killedBy'];
  exitCode: number | null;
  errorCode: string | null;
  stepsExecuted: number;
  runtimeMs: number;
  outputFiles: number;
  outputBytes: number;
  tokens: number | null;
  costUsd: number | null;
  partial: boolean;
  resumable: boolean;
  parentStep: number | null;
  /** Set when the composition root cast the envelope first (openBrig's local hooks): tokens kept out of context. */
  estSavedTokens?: number | null;
  /** Set with estSavedTokens: the condensation level (1 passthrough, 2 LLM summary, 3 head+tail) the envelope used. */
  condensationLevel?: 1 | 2 | 3 | null;
  /** Where the run's kept result lives on the host (its result directory), null when none was kept. */
  resultPath: string | null;
}

/**
 * The home's storage as admission sees it (the composition root reads the file system and
 * the ledger): no new run is admitted while the home is below its reserve or a writer holds
 * what the disk refused.
 */
export interface StoragePort {
  /** The home's file system now; undefined when it cannot be read. */
  space(): { freeBytes: number; totalBytes: number } | undefined;
  /** Writers outside runs/ holding what the disk refused (the ledger's lines), by what they hold. */
  held(): { what: string; count: number }[];
}

export interface SupervisorDeps {
  jail: JailDriver;
  leases: LeasePort;
  broker: BrokerPort;
  /** The egress gate; absent: a lease with egress fails its run (never a child without the gate it was promised). */
  egress?: EgressPort;
  ledger: Ledger;
  results?: ResultsPort;
  clock?: Clock;
  timers?: Timers;
  /**
   * $BRIG_HOME/runs, the broker sockets' runtime directory (config brokersDirFor), and the
   * admission state's file ($BRIG_HOME/admission.json; absent: admission is open and a pause
   * lasts as long as this supervisor).
   */
  paths: { runs: string; brokers: string; admission?: string };
  /**
   * How the run store writes a run's files: the home's journal (util/write-journal.ts, group
   * commit) in the supervisor that holds the home; absent: each write its own fsyncs.
   */
  writer?: DurableWriter;
  settings?: Partial<SupervisorSettings>;
  hooks?: SupervisorHooks;
  /** Sweep labelled leftovers of runs this supervisor does not know (default true). */
  sweepUnknown?: boolean;
  /** Reattach or ghost-sweep persisted runs on start (default true). An in-process CLI
   * supervisor passes false: it must not touch runs another process supervises. */
  reconcile?: boolean;
  /** Health tick period (watchdog, stuck-kill, ghost sweep, queue timeout). */
  tickMs?: number;
  /** Model calls of agent children (and any run with `llm`); absent: they are refused model_unavailable. */
  models?: ModelPort;
  /** Agent specs and the tool surface a lease allows; absent: kind `agent` is refused. */
  agents?: AgentPort;
  /** A run's ResultRef handles for the summaries a spawn or a wait returns (refs/ChildRefs); absent: none listed. */
  handlesOf?: HandlesOf;
  /** The home's free space and the writers holding what it refused; absent: only the run store's own holds are checked. */
  storage?: StoragePort;
  /**
   * An ended run's envelope as every face shows it (RefService.result: cast once, kept), for
   * the summary a spawn or a wait returns to a parent run; absent: summaries carry none.
   */
  envelopeOf?: EnvelopeOf;
}

/** An ended run's narrative-cast envelope (throws a BrigError when it cannot be cast). */
export type EnvelopeOf = (runId: string) => Promise<string>;

/** A run's ResultRef handles, bounded: `more` counts those left out. */
export type HandlesOf = (runId: string) => Promise<{ refs: ChildRefHandle[]; more: number }>;

/** Agent specs, in the supervisor's words (the composition root adapts src/agents). */
export interface AgentPort {
  spec(name: string): Result<AgentSpec, BrigError>;
  /** The tools a run with these capabilities may be offered under this spec (narrowed to `groups` when given). */
  tools(spec: AgentSpec, caps: readonly string[], groups?: readonly ToolGroup[]): string[];
  /** Whether the policy in force has these tool groups (the nearest name in the refusal); absent: not checked. */
  checkGroups?(names: readonly ToolGroup[]): Result<void, BrigError>;
  /** The operator's search endpoint (config `egress.searchUrl`, `{query}` in it): `web_search` is offered only with one. */
  webSearchUrl?: string;
}

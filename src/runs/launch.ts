/**
 * What goes into a jail and what comes out of it: the spawn packet, the jail spec, the
 * capabilities that bind at the jail, and the collection of a run's outputs.
 *
 * Guarantees: the packet and jail spec are pure data built from the run, the request and the
 * lease — the lease's limits, never the request's, size the jail (INV-1); the child's
 * environment is built from nothing (INV-6): no variable of ours is passed, and the bearer
 * token travels as a 0400 file in the workspace, never in argv or env; a command or script
 * child needs `exec` and artifacts need `artifacts.read` (grantAllows), refused before any
 * container exists; collection is capped by the settings and the lease's resultBytes, and a
 * collection redone after a crash starts from nothing.
 * Threat: a spawn (a child's, through its broker) asking for more than its lease, carrying
 * host state into the jail, or bringing back more than its cap. Trusts: the lease as the lease
 * store granted it; the jail's collect (regular files only, per-file and per-run caps, INV-4).
 * Fails closed: a missing capability refuses the run; over a cap is the run's error — what was
 * refused is not indexed, never truncated (the rest of what the run left is kept, INV-8: the
 * files beside one over the per-file cap, or its value and stdio when out/ is over the run cap).
 */
import { promises as fs } from 'node:fs';
import path from 'node:path';
import type { CollectCaps, CollectReport, Jail, JailArtifact, JailExit, JailInput, JailSpec } from '../jail/index.js';
import { grantAllows } from '../lease/index.js';
import { agentMethodSurface } from '../agents/index.js';
import { EGRESS_JAIL, isGraphAttemptKey } from '../protocol/index.js';
import { BrigError, publicError } from '../util/errors.js';
import { isNoSpace, mkdirAll } from '../util/disk-space.js';
import type { LeaseGrant, ResultsPort } from './ports.js';
import type { RunTable } from './run-table.js';
import type { AgentPacket, EndReason, RunError, RunRecord, SpawnPacket, SpawnRequest, SupervisorSettings } from './types.js';
import { mark } from '../util/timing.js';
import { collectChanges, dropStage, type CollectedChanges } from './run-repo.js';

/** What collecting a run's outputs needs: the table (record and store), the results port, the caps. */
export interface CollectContext {
  table: RunTable;
  results: ResultsPort | undefined;
  settings: SupervisorSettings;
}

/**
 * A child with egress: the proxy variables every common client reads (both cases), loopback
 * kept direct. No ALL_PROXY/SOCKS (a socks5:// client resolves names itself). The jail has no
 * resolver and no route, so a tool that ignores them fails closed.
 */
export function egressEnv(inspect = false): Record<string, string> {
  const url = `http://${EGRESS_JAIL.proxyHost}:${EGRESS_JAIL.proxyPort}`;
  // An inspect rule: the run's CA with the system roots (the gate writes it beside egress.sock), for every common TLS stack.
  const ca = EGRESS_JAIL.caBundle;
  const caEnv: Record<string, string> = inspect ? { SSL_CERT_FILE: ca, NODE_EXTRA_CA_CERTS: ca, REQUESTS_CA_BUNDLE: ca, CURL_CA_BUNDLE: ca, GIT_SSL_CAINFO: ca } : {};
  return {
    ...caEnv,
    HTTP_PROXY: url,
    HTTPS_PROXY: url,
    http_proxy: url,
    https_proxy: url,
    NO_PROXY: 'localhost,127.0.0.1,::1',
    no_proxy: 'localhost,127.0.0.1,::1',
    NODE_USE_ENV_PROXY: '1',
    // Node before 24 ignores the proxy variables for fetch(): brig's preload sets its dispatcher (scripts/fetch-proxy.cjs).
    NODE_OPTIONS: `--require ${CHILD_PATHS_FETCH_PROXY}`,
    JAVA_TOOL_OPTIONS: `-Dhttp.proxyHost=${EGRESS_JAIL.proxyHost} -Dhttp.proxyPort=${EGRESS_JAIL.proxyPort} -Dhttps.proxyHost=${EGRESS_JAIL.proxyHost} -Dhttps.proxyPort=${EGRESS_JAIL.proxyPort}`,
  };
}

/** The fetch() preload every node of a child with egress loads (built by scripts/bundle-cli.mjs). */
const CHILD_PATHS_FETCH_PROXY = '/opt/brig/child/fetch-proxy.cjs';

export const CHILD_PATHS = {
  netrelay: '/opt/brig/child/netrelay.js',
  runtime: '/opt/brig/child/runtime.js',
  agentRuntime: '/opt/brig/child/agent-runtime.js',
  // The same path in every image: the child image links it to its node, a foreign image has
  // brig's runtime bound read-only at /opt/brig (jail/docker/runtime-bundle.ts).
  node: '/opt/brig/bin/node',
  packet: '.brig/packet.json',
  token: '.brig/token',
  script: '.brig/script.mjs',
  workspace: '/workspace',
  out: 'out',
} as const;

/** The caps for one run's collection: the settings, bounded by the lease's resultBytes. */
export function collectCapsFor(s: Pick<SupervisorSettings, 'resultPerFileBytes' | 'resultPerRunBytes' | 'resultMaxEntries'>, leaseResultBytes?: number): CollectCaps {
  const perRunBytes = Math.min(s.resultPerRunBytes, leaseResultBytes ?? Infinity);
  return { perFileBytes: Math.min(s.resultPerFileBytes, perRunBytes), perRunBytes, maxEntries: s.resultMaxEntries };
}

/** `artifacts`: the names under /artifacts intake gave them (a ref's is its file's name); default: the requested paths' basenames. */
export function buildPacket(r: RunRecord, req: SpawnRequest, lease: Pick<LeaseGrant, 'leaseId' | 'caps' | 'expiresAt'>, s: SupervisorSettings, agent?: AgentPacket, artifacts?: readonly Pick<JailArtifact, 'name'>[]): SpawnPacket {
  const maxSummaryChars = s.parentSummaryMaxTokens * 4;
  return {
    v: 1,
    runId: r.id,
    task: req.task,
    objective: req.objective ?? null,
    artifactRefs: artifacts ? artifacts.map((a) => a.name) : req.artifact_refs.map((a) => path.basename(a)),
    domainKnowledge: [...(req.domain_knowledge ?? [])],
    toolGroups: [...(req.tool_groups ?? [])],
    parentSummary: req.include_parent_history === 'summary' && req.parent_summary ? req.parent_summary.slice(0, maxSummaryChars) : null,
    workspaceDir: CHILD_PATHS.workspace,
    depth: r.depth,
    maxDepth: s.maxSpawnDepth,
    expectedOutputs: r.expectedOutputs,
    maxSteps: r.maxSteps,
    timeoutMs: r.timeoutMs,
    lease: { id: lease.leaseId, caps: [...lease.caps], expiresAt: lease.expiresAt },
    resumed: r.resumeOf !== null,
    ...(agent ? { agent } : {}),
    ...(isGraphAttemptKey(r.callerId) ? { graphSharedDir: '/artifacts' as const } : {}),
    ...(req.upstream && req.upstream.length > 0 ? { upstream: req.upstream.map((u) => ({ ...u })) } : {}),
  };
}

/**
 * The capabilities a request asks for. A command or script child asks for `exec` by what it
 * is, and artifacts ask for `artifacts.read`: a request's `caps` list narrows everything else,
 * and the lease is still the parent's (or the profile's) ∩ this, so nothing widens.
 */
export function requestedCaps(kind: RunRecord['kind'], req: Pick<SpawnRequest, 'caps' | 'artifact_refs'>): SpawnRequest['caps'] {
  if (!req.caps) return undefined;
  const caps = new Set(req.caps);
  if (kind === 'command' || kind === 'script') caps.add('exec');
  if (req.artifact_refs.length > 0) caps.add('artifacts.read');
  return [...caps];
}

/**
 * Capabilities bind at the jail, not only at the broker: running the child's own code (a
 * command or a script) needs `exec`, and artifacts are mounted only under `artifacts.read`.
 * An agent child's loop is brig's code; its `shell` tool is what `exec` gates (tool surface).
 * A refusal is the run's error before any container exists.
 */
export function jailCapabilityRefusal(kind: RunRecord['kind'], req: Pick<SpawnRequest, 'artifact_refs'>, caps: readonly string[]): BrigError | null {
  if ((kind === 'command' || kind === 'script') && !grantAllows({ caps }, 'exec')) {
    return new BrigError('capability_denied', `a ${kind} child needs \`exec\` in its lease: its own code runs in the jail`, {
      data: { what: 'exec' },
      hint: 'Spawn it under a profile that grants exec (worker, researcher, root), or as an agent child.',
    });
  }
  if (req.artifact_refs.length > 0 && !grantAllows({ caps }, 'artifacts.read')) {
    return new BrigError('capability_denied', 'artifacts are handed over only under `artifacts.read`, which this lease does not grant', {
      data: { what: 'artifacts.read' },
      hint: 'Drop the artifacts, or spawn under a profile that grants artifacts.read.',
    });
  }
  return null;
}

/**
 * The broker methods a run's bearer may call: an agent's, its loop's and its offered tools'
 * (the packet's, as written at launch — a reattach after a restart reads the same); a script
 * or command child's, every method its lease allows (undefined).
 */
export function brokerSurface(packet: Pick<SpawnPacket, 'agent'>): string[] | undefined {
  return packet.agent ? agentMethodSurface(packet.agent.tools) : undefined;
}

/**
 * How often an agent reports progress while one tool call runs: three beats within the
 * stuck-kill threshold, at most every 30 s (the reference systems' progress interval), at
 * least every second.
 */
export function agentHeartbeatMs(stuckKillThresholdMs: number): number {
  return Math.max(1000, Math.min(30_000, Math.floor(stuckKillThresholdMs / 3)));
}

/** /tmp's size in every jail (MiB): not a lease limit, the same for every run. */
export const JAIL_TMPFS_MB = 64;

/** A jail's limits from its lease's: the lease's, never the request's (INV-1). */
export function jailLimitsFor(l: Pick<LeaseGrant['limits'], 'memoryMb' | 'cpu' | 'pids' | 'diskMb'>): JailSpec['limits'] {
  return { memoryMb: l.memoryMb, cpu: l.cpu, pids: l.pids, tmpfsMb: JAIL_TMPFS_MB, diskMb: l.diskMb };
}

/** The jail spec of a run; `artifacts` are the ones intake checked (their identities, bound as checked). */
export function jailSpecFor(r: RunRecord, req: SpawnRequest, lease: LeaseGrant, packet: SpawnPacket, brokerDir: string, script: Buffer | null, artifacts: JailArtifact[] = [], placeholders: Record<string, string> = {}): JailSpec {
  const inputs: JailInput[] = [
    { path: CHILD_PATHS.packet, data: JSON.stringify(packet), mode: 0o444 },
    { path: CHILD_PATHS.token, data: lease.token, mode: 0o400 },
  ];
  if (r.kind === 'script' && script) inputs.push({ path: CHILD_PATHS.script, data: script, mode: 0o444 });
  const base = r.kind === 'script' ? [CHILD_PATHS.node, CHILD_PATHS.runtime] : r.kind === 'agent' ? [CHILD_PATHS.node, CHILD_PATHS.agentRuntime] : [...(req.argv ?? [])];
  // Egress: the relay (on the jail's own loopback, to egress.sock) starts first, then the child's argv.
  const argv = lease.egress ? [CHILD_PATHS.node, CHILD_PATHS.netrelay, '--', ...base] : base;
  return {
    runId: r.id,
    leaseId: lease.leaseId,
    rootRunId: r.rootRunId,
    argv,
    // A credential binding's placeholder (never its secret) first: brig's own variables win.
    env: { ...placeholders, BRIG_RUN_ID: r.id, HOME: CHILD_PATHS.workspace, ...(lease.egress ? egressEnv(lease.egress.rules.some((x) => x.scheme === 'https' && x.tls === 'inspect')) : {}) },
    limits: jailLimitsFor(lease.limits),
    artifacts,
    brokerDir,
    inputs,
    // The warm pool learns limit shapes from an operator's spawns only, never a child's.
    askedBy: r.parentRunId === null ? 'operator' : 'child',
    ...(req.image ? { image: req.image } : {}),
  };
}

/**
 * Agent ends that are failures, though the loop exits 0 once it sent its salvage (docs/agents.md,
 * "How an agent run ends"): its result's `endReason` → the run's error code.
 */
const AGENT_FAILED_ENDS: Readonly<Record<string, { code: RunError['code']; message: string }>> = {
  budget_exceeded: { code: 'budget_exceeded', message: "the agent's token or cost budget was spent before it called finish" },
  model_error: { code: 'model_unavailable', message: "the agent's model could not be reached (or refused the call) before it called finish" },
};

/**
 * How a run ends when its child exits on its own: exit 0 completes it, anything else fails it
 * with `child_failed`. An agent that exits 0 after a salvage for a spent budget or an
 * unreachable model fails, with that code: its partial result is kept, but the run did not
 * complete. (The result is the child's word; it can only make its own run fail.) An OOM kill
 * is the engine's fact carried as data (`oomKilled` on the record), never read back out of a
 * message.
 */
export function exitEnd(exit: JailExit, rec?: Pick<RunRecord, 'kind' | 'result'>): { reason: Extract<EndReason, 'completed' | 'failed'>; exitCode: number; oomKilled?: true; error?: RunError } {
  const oom = exit.oomKilled ? { oomKilled: true as const } : {};
  if (exit.exitCode === 0) {
    const said = rec?.kind === 'agent' && rec.result && typeof rec.result === 'object' ? (rec.result as { partial?: unknown; endReason?: unknown }) : undefined;
    const failed = said?.partial === true && typeof said.endReason === 'string' && Object.hasOwn(AGENT_FAILED_ENDS, said.endReason) ? AGENT_FAILED_ENDS[said.endReason] : undefined;
    if (failed) return { reason: 'failed', exitCode: 0, ...oom, error: { ...failed } };
    return { reason: 'completed', exitCode: 0, ...oom };
  }
  const message = exit.oomKilled ? 'the child ran out of memory' : `the child exited with code ${exit.exitCode}`;
  return { reason: 'failed', exitCode: exit.exitCode, ...oom, error: { code: 'child_failed', message } };
}

/** Normalizes an expected output to a path relative to /workspace/out. */
export function outputRel(p: string): string {
  return p.replace(/^\/?workspace\//, '').replace(/^\/+/, '').replace(/^out\//, '');
}

export function missingOutputs(expected: readonly string[], files: readonly { path: string }[]): string[] {
  const have = new Set(files.map((f) => f.path));
  const dirs = new Set(files.flatMap((f) => f.path.split('/').slice(0, -1).map((_, i, a) => a.slice(0, i + 1).join('/'))));
  return expected.filter((e) => {
    const rel = outputRel(e).replace(/\/+$/, '');
    return !have.has(rel) && !dirs.has(rel);
  });
}

/** Where the SDK spools a result too big for a broker line (child/sdk.ts RESULT_SPOOL). */
const RESULT_SPOOL_DIR = '.brig/result';
const RESULT_SPOOL_FILE = 'value.json';

/** The run's error for files skipped as over the per-file cap: the first one named, the others counted. */
function tooLargeError(files: NonNullable<CollectReport['tooLarge']>, cap: number, under: string): BrigError {
  const first = files[0]!;
  const more = files.length > 1 ? ` (and ${files.length - 1} more)` : '';
  const size = first.bytes !== undefined ? `${first.bytes} bytes, ` : '';
  return new BrigError('ref_too_large', `${under}/${first.path} (${size}over the per-file cap of ${cap} bytes) was not collected${more}; the other outputs were`, {
    data: { path: `${under}/${first.path}`, perFileBytes: cap, files: files.length },
  });
}

/** The run's error for files brig's home had no room for: the others were kept. */
function noSpaceError(n: NonNullable<CollectReport['noSpace']>, under: string): BrigError {
  return new BrigError('storage_full', `${n.files} file(s) of ${under} (${n.bytes} bytes) did not fit in brig's home and were not collected (listed as skipped: no_space); the other outputs were`, {
    data: { files: n.files, bytes: n.bytes },
  });
}

/**
 * Collects /workspace/out, a spooled result value and the stream tails; over a cap is an
 * error on the run, never a truncation: a file over the per-file cap is left out (the others
 * are kept), over the per-run cap refuses out/ whole. The spooled value shares the run's byte
 * budget. What brig's home has no room for (its reserve, `minFreeBytes`, kept free) is left
 * out too, `storage_full` on the run, and the rest kept.
 */
export async function collectOutputs(sup: CollectContext, runId: string, jail: Jail): Promise<Partial<RunRecord>> {
  const r = sup.table.get(runId)!;
  const dest = sup.results ? sup.results.outDir(r.rootRunId, runId) : path.join(sup.table.store.dir(runId), 'out');
  const spool = path.join(sup.table.store.dir(runId), 'result-spool');
  const patch: Partial<RunRecord> = {};
  let indexed = false;
  let collected: CollectReport | undefined;
  let changes: CollectedChanges | undefined;
  const transcriptPath = path.join(sup.table.store.dir(runId), 'transcript.jsonl');
  const transcript = (await fs.stat(transcriptPath).catch(() => null))?.isFile() ? transcriptPath : undefined;
  try {
    const t = jail.tails();
    patch.stdoutTail = t.stdoutTail.slice(-sup.settings.stdoutTailBytes);
    patch.stderrTail = t.stderrTail.slice(-sup.settings.stdoutTailBytes);
  } catch {
    // tails are best effort: a reattached jail may not have them
  }
  try {
    // A redo (the supervisor died mid-materialization) starts from nothing: refs an earlier
    // attempt indexed would be doubled, or refused as already there. A first collection finds
    // neither the run's result directory (where its manifest, refs and out/ live) nor a spool.
    const [earlier, spooled] = await Promise.all([fs.lstat(path.dirname(dest)).catch(() => null), fs.lstat(spool).catch(() => null)]);
    if (earlier) {
      await sup.results?.remove(r.rootRunId, runId);
      await fs.rm(dest, { recursive: true, force: true });
    }
    if (spooled) await fs.rm(spool, { recursive: true, force: true });
    // A home with no room even for the run's directory: collect still reads the archive and names every file no_space.
    await mkdirAll(path.dirname(dest), 0o700).catch((e: unknown) => {
      if (!isNoSpace(e)) throw e;
    });
    sup.table.mark(runId, 'collect_cleared');
    const caps = collectCapsFor(sup.settings, r.resultCapBytes);
    const rep = await jail.collect(dest, caps, CHILD_PATHS.out, { observe: sup.results?.observe, minFreeBytes: sup.settings.minFreeBytes });
    mark('run: outputs collected');
    sup.table.mark(runId, 'outputs_read');
    collected = rep;
    patch.resultDir = dest;
    patch.outputBytes = rep.totalBytes;
    patch.outputFiles = rep.files.length;
    patch.outputs = rep.files.slice(0, 1000).map((f) => ({ path: f.path, bytes: f.bytes }));
    patch.skipped = rep.skipped.slice(0, 1000);
    patch.missingOutputs = missingOutputs(r.expectedOutputs, rep.files);
    // No room even for out/'s directory: nothing to index there (the error names every file).
    if (rep.noSpace && !(await fs.stat(dest).catch(() => null))) throw noSpaceError(rep.noSpace, CHILD_PATHS.out);
    let resultFile: string | undefined;
    if (r.resultSpooled) {
      const left = Math.max(0, caps.perRunBytes - rep.totalBytes);
      const got = await jail.collect(spool, { perFileBytes: left, perRunBytes: left, maxEntries: 4 }, RESULT_SPOOL_DIR, { minFreeBytes: sup.settings.minFreeBytes });
      if (got.tooLarge) throw tooLargeError(got.tooLarge, left, RESULT_SPOOL_DIR);
      if (got.noSpace) throw noSpaceError(got.noSpace, RESULT_SPOOL_DIR);
      if (!got.files.some((f) => f.path === RESULT_SPOOL_FILE)) {
        throw new BrigError('invalid_input', 'the child spooled a result but left no regular /workspace/.brig/result/value.json');
      }
      resultFile = path.join(spool, RESULT_SPOOL_FILE);
    }
    // A repository: its change, computed on the host from the collected tree, in what out/ left of the cap.
    if (r.repo) {
      const repoCtx = { runDir: (id: string) => sup.table.store.dir(id), minFreeBytes: sup.settings.minFreeBytes };
      changes = await collectChanges(repoCtx, r, jail, caps, Math.max(0, caps.perRunBytes - rep.totalBytes)).catch((e: unknown) => ({
        changes: { filesChanged: 0, insertions: 0, deletions: 0, commits: 0, patchBytes: 0, error: `the change could not be computed: ${publicError(e).message}` },
        cleanup: async () => {},
      }));
      patch.changes = changes.changes;
    }
    indexed = true;
    await sup.results?.index(r.rootRunId, runId, dest, {
      ...(changes?.patchFile ? { changesPatch: changes.patchFile } : {}),
      ...(changes?.statFile ? { changesStat: changes.statFile } : {}),
      ...(r.result !== undefined && r.result !== null ? { result: r.result } : {}),
      ...(resultFile ? { resultFile } : {}),
      ...(transcript ? { transcriptFile: transcript } : {}),
      ...(patch.stdoutTail ? { stdout: patch.stdoutTail } : {}),
      ...(patch.stderrTail ? { stderr: patch.stderrTail } : {}),
      ...(r.kind === 'agent' ? { agent: true } : {}),
      collected: rep.files,
    });
    // A file over the per-file cap was skipped, never read: the rest is kept and indexed, and
    // the refusal is still the run's error.
    if (changes) await dropStage(sup.table.store.dir(runId));
    if (rep.tooLarge) patch.error = publicError(tooLargeError(rep.tooLarge, caps.perFileBytes, CHILD_PATHS.out));
    else if (changes && !changes.patchFile && changes.statFile) patch.error = { code: 'ref_too_large', message: changes.changes.error ?? 'the patch was not kept' };
    else if (rep.noSpace) patch.error = publicError(noSpaceError(rep.noSpace, CHILD_PATHS.out));
  } catch (e) {
    // The index meeting the same full disk as the files: the run's error still names what was not kept.
    patch.error = publicError(collected?.noSpace && publicError(e).code === 'storage_full' ? noSpaceError(collected.noSpace, CHILD_PATHS.out) : e);
    patch.missingOutputs = [...r.expectedOutputs];
    // A refusal (out/ or the spooled value over a byte cap) costs the run only what was
    // refused, never its inline value, transcript or stdio: those are indexed beside the out/
    // files that did arrive (an empty out/ when out/ itself was refused). The refusal stays the error.
    if (!indexed && sup.results) {
      const results = sup.results;
      const files = collected?.files ?? [];
      await (collected ? Promise.resolve() : fs.rm(dest, { recursive: true, force: true }).then(() => fs.mkdir(dest, { recursive: true, mode: 0o700 })))
        .then(() =>
          results.index(r.rootRunId, runId, dest, {
            ...(r.result !== undefined && r.result !== null ? { result: r.result } : {}),
            ...(transcript ? { transcriptFile: transcript } : {}),
            ...(patch.stdoutTail ? { stdout: patch.stdoutTail } : {}),
            ...(patch.stderrTail ? { stderr: patch.stderrTail } : {}),
            ...(r.kind === 'agent' ? { agent: true } : {}),
            collected: files,
          }),
        )
        .catch(() => {}); // best effort: the run already carries the refusal
    }
  } finally {
    await fs.rm(spool, { recursive: true, force: true }).catch(() => {});
    await changes?.cleanup().catch(() => {});
  }
  return patch;
}

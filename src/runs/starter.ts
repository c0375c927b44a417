/**
 * Launch and watch: from an admitted run to a started, watched child.
 *
 * Guarantees: the lease is issued before anything else is acquired and bounds the jail (its
 * limits, never the request's); a kill can land at any await and whatever was acquired so
 * far is given back; the watchdog fires a grace before the bearer expires; a started run is
 * watched (progress fork, exit) until the end door takes it. Reattach after a restart gives
 * a run exactly the capabilities its packet was written with, never what a child says.
 * Fails closed: any error while starting ends the run `failed` and releases what it got.
 */
import { promises as fs } from 'node:fs';
import path from 'node:path';
import { TOOLBOX_NAME, type Jail } from '../jail/index.js';
import { grantAllows } from '../lease/index.js';
import { BrigError, publicError, toBrigError } from '../util/errors.js';
import { isGraphAttemptKey } from '../protocol/index.js';
import { nextToStart } from './admission.js';
import { loadArtifacts } from './intake.js';
import { bestEffort } from './best-effort.js';
import { agentHeartbeatMs, brokerSurface, buildPacket, exitEnd, jailCapabilityRefusal, jailSpecFor, requestedCaps } from './launch.js';
import type { SupervisorDeps } from './ports.js';
import { progressLineFor, type ProgressFork } from './progress-fork.js';
import type { Live, RunActions, RunTable } from './run-table.js';
import { elapsedMs, transition } from './state-machine.js';
import type { AgentSpec } from '../agents/index.js';
import { jailKeyOf } from './run-record.js';
import type { AgentPacket, RunRecord, SpawnPacket, SupervisorSettings, ToolGroup } from './types.js';
import { stageRepo } from './run-repo.js';
import { mark } from '../util/timing.js';

export interface StarterDeps {
  table: RunTable;
  deps: SupervisorDeps;
  settings: SupervisorSettings;
  fork: ProgressFork;
  actions: Pick<RunActions, 'endRun' | 'loadRequest'>;
  /** False once the supervisor closed: nothing new starts. */
  accepting: () => boolean;
  /** True while draining: the operator's queued runs stay queued (kept for the next start). */
  holdRootQueue?: () => boolean;
  /** True while an operator paused admission: no queued run starts (running ones go on). */
  paused?: () => boolean;
  /** Told how many runs are live after each pump (the health tick keeps the process up while > 0). */
  onLive: (n: number) => void;
}

export class RunStarter {
  constructor(private readonly d: StarterDeps) {}

  /** Starts whatever queued runs now fit. */
  pump(): void {
    const { table } = this.d;
    if (!this.d.accepting()) return;
    const live = table.all().filter((r) => r.status !== 'ended' && !table.ending.has(r.id));
    // Preparing admitted runs count as active (they are `starting`); preparing queued ones
    // are not candidates yet.
    const hold = this.d.holdRootQueue?.() === true;
    const startable = live.filter((r) => !(r.status === 'queued' && (table.preparing.has(r.id) || (hold && r.parentRunId === null))));
    this.d.onLive(live.length);
    if (this.d.paused?.() === true) return;
    for (const id of nextToStart(startable, this.d.settings, table.blockedSet(), table.heldSlots(), table.heldGlobally())) {
      const t = transition(table.get(id)!, 'starting', table.clock.now());
      if (!t.ok) continue;
      table.runs.set(id, t.value);
      table.background(this.launch(id));
    }
  }

  /** An agent whose spec names the toolbox runs in brig's child image when it is not built (the driver notes it); a request's own `toolbox` does not. */
  #specNamesToolbox(agent: string | undefined, image: string | undefined): boolean {
    if (image !== TOOLBOX_NAME || !agent) return false;
    const spec = this.d.deps.agents?.spec(agent);
    return spec?.ok === true && spec.value.image === TOOLBOX_NAME;
  }

  async #clearCutLaunch(runId: string, brokerDir: string): Promise<void> {
    const { table, deps } = this.d;
    await bestEffort(table, runId, 'lease', () => deps.leases.revokeRun(runId, 'system', 'launch_cut'));
    await bestEffort(table, runId, 'jail', async () => void (await deps.jail.sweep((key) => key !== runId)));
    await bestEffort(table, runId, 'socket_dir', () => fs.rm(brokerDir, { recursive: true, force: true }));
  }

  async launch(runId: string): Promise<void> {
    const { table, deps, settings } = this.d;
    const handle: Live = { caps: [], steers: [] };
    table.live.set(runId, handle);
    table.mark(runId, 'launched');
    const brokerDir = path.join(deps.paths.brokers, runId);
    // A kill can land at any await below: after each, a run that is no longer `starting`
    // gives back whatever this launch acquired so far (the end door releases what it saw).
    const gone = () => table.ending.has(runId) || table.get(runId)?.status !== 'starting';
    const abandon = async () => {
      await handle.jail?.kill().catch(() => {}); // it may never have started: only the destroy counts
      if (handle.jail) await bestEffort(table, runId, 'jail', () => handle.jail!.destroy());
      if (handle.broker) await bestEffort(table, runId, 'broker', () => handle.broker!.close());
      if (handle.egress) await bestEffort(table, runId, 'egress', () => handle.egress!.close());
      await bestEffort(table, runId, 'socket_dir', () => fs.rm(brokerDir, { recursive: true, force: true }));
      if (handle.lease) await bestEffort(table, runId, 'lease', () => deps.leases.revoke(handle.lease!.leaseId, 'system', 'run_ended'));
    };
    try {
      // Nothing is saved before the lease and the jail exist: a crash until then leaves the run
      // as intake (or the queue) saved it, and the next start launches it again — after
      // clearing what the cut launch made (a queued run's own keys only: its lease, the
      // volume, disk and container named by its id; a warm slot it took is swept as unheld).
      if (table.queuedAtStart.delete(runId)) await this.#clearCutLaunch(runId, brokerDir);
      if (gone()) return await abandon();
      const stored = await this.d.actions.loadRequest(runId);
      if (!stored) throw new BrigError('internal', 'stored request missing');
      // What the jail binds is what intake checked: graph inputs count as artifacts (artifacts.read, the packet's names).
      const artifacts = await loadArtifacts(table, runId);
      const req = artifacts.length > stored.artifact_refs.length ? { ...stored, artifact_refs: artifacts.map((a) => a.name) } : stored;
      const rec = table.get(runId)!;
      const parentLease = rec.parentRunId ? table.live.get(rec.parentRunId)?.lease?.leaseId ?? table.get(rec.parentRunId)?.leaseId ?? null : null;
      const lease = await deps.leases.issue({
        runId,
        rootRunId: rec.rootRunId,
        depth: rec.depth,
        parentLeaseId: parentLease,
        ...(parentLease && isGraphAttemptKey(rec.callerId) ? { via: 'graph' as const } : {}),
        timeoutMs: rec.timeoutMs,
        graceMs: settings.leaseGraceMs,
        ...(req.profile ? { profile: req.profile } : {}),
        ...(req.caps ? { caps: requestedCaps(rec.kind, req) } : {}),
        ...(req.limits ? { limits: req.limits } : {}),
        ...(req.egress ? { egress: req.egress } : {}),
      });
      if (!lease.ok) throw lease.error;
      handle.lease = lease.value;
      handle.caps = lease.value.caps;
      const refused = jailCapabilityRefusal(rec.kind, req, lease.value.caps);
      if (refused) throw refused;
      if (gone()) return await abandon();
      // The watchdog fires a grace before the bearer expires, also when a parent's lease
      // leaves its child less time than it asked for (INV-1: limits only shrink).
      const leaseLeftMs = Date.parse(lease.value.expiresAt) - table.clock.now().getTime() - settings.leaseGraceMs;
      const timeoutMs = Math.max(1, Math.min(rec.timeoutMs, lease.value.limits.timeoutMs, leaseLeftMs));
      // Limits only shrink (INV-1): a lease's maxSteps of 0 means no steps, not "unbounded".
      const maxSteps = Math.min(rec.maxSteps, lease.value.limits.maxSteps);
      const resultCapBytes = lease.value.limits.resultBytes;
      const childCap = lease.value.limits.maxChildren;
      const budget = { tokens: lease.value.limits.tokens, costUsd: lease.value.limits.costUsd };
      table.patch(runId, (x) => ({ ...x, leaseId: lease.value.leaseId, timeoutMs, maxSteps, resultCapBytes, childCap, budget }));
      const agent = rec.kind === 'agent' ? await this.#agentPacket(runId, lease.value.caps, maxSteps, req.tool_groups) : undefined;
      const packet = buildPacket(table.get(runId)!, req, lease.value, settings, agent, artifacts);
      await fs.mkdir(brokerDir, { recursive: true, mode: 0o700 });
      // Carried by the durable save before the child starts (below): one sync for both.
      await table.store.writeJson(runId, 'packet', packet, { carried: true });
      const jailed = { ...jailSpecFor(table.get(runId)!, req, lease.value, packet, brokerDir, await table.store.read(runId, 'script'), artifacts, lease.value.egress ? deps.egress?.placeholders?.(runId, lease.value.egress) : undefined), ...(this.#specNamesToolbox(rec.agent, req.image) ? { imageFallback: true } : {}) };
      // A repository: a clean clone in the run's directory, copied onto the workspace disk (never mounted).
      const spec = rec.repo ? { ...jailed, repoDir: await stageRepo(table.store.dir(runId), rec.repo, Math.min(resultCapBytes, jailed.limits.diskMb * 1024 * 1024)) } : jailed;
      if (gone()) return await abandon();
      // The driver may hand a warm-pool jail made before this run: its key and socket
      // directory are the slot's, kept on the record before the child starts.
      mark('run: leased, packet written');
      table.mark(runId, 'leased');
      handle.jail = await deps.jail.create(spec);
      table.mark(runId, 'jail_ready');
      if (gone()) return await abandon();
      const jail = handle.jail;
      const key = jail.key ?? runId;
      if (jail.brokerDir !== undefined && jail.brokerDir !== brokerDir) await fs.rm(brokerDir, { recursive: true, force: true });
      // The durable point before the child starts (its lease, limits and jail key survive a
      // crash) and the broker's socket, in the directory its jail binds: side by side, both
      // before the child's first instruction. An opened socket is the rollback's to close
      // whichever of the two failed.
      const [saved, opened] = await Promise.allSettled([
        table.update(runId, (x) => ({ ...x, ...(jail.verified ? { jail: jail.verified } : {}), ...(key !== runId ? { jailKey: key } : {}) })),
        deps.broker.openRun({ runId, leaseId: lease.value.leaseId, dir: jail.brokerDir ?? brokerDir, packet, methods: brokerSurface(packet) }),
      ]);
      if (opened.status === 'fulfilled') handle.broker = opened.value;
      if (saved.status === 'rejected') throw saved.reason;
      if (opened.status === 'rejected') throw opened.reason;
      mark('run: durable before start, broker socket open');
      if (gone()) return await abandon();
      // Egress: the gate's socket beside broker.sock (the jail still has no network, INV-2).
      if (lease.value.egress) {
        if (!deps.egress) throw new BrigError('capability_denied', 'the lease holds egress rules but this supervisor runs no egress gate', { hint: 'Start the child through the daemon (brig serve) or a supervisor composed with the egress gate.' });
        handle.egress = await deps.egress.openRun({ runId, leaseId: lease.value.leaseId, dir: jail.brokerDir ?? brokerDir, grant: lease.value.egress, ancestors: lease.value.egressAncestors ?? [] });
        if (gone()) return await abandon();
      }
      await handle.jail.start();
      mark('run: child started');
      table.mark(runId, 'started');
      if (gone()) return await abandon();
      const running = transition(table.get(runId)!, 'running', table.clock.now());
      if (!running.ok) return await abandon();
      // Not durable: a restart reattaches a `starting` run whose container started (reconcile.ts).
      await table.update(runId, () => ({ ...running.value, lastProgressAt: running.value.startedAt }), { durable: false });
      if (table.get(runId)!.status === 'ended') return; // killed while saving: the end door released it
      table.emit(running.value, { type: 'started' });
      table.rollbacks.delete(runId);
      this.watch(runId, handle.jail);
    } catch (e) {
      // The spawn failed after prepareSpawn: its rollback runs (once), whatever failed.
      const rollback = table.rollbacks.get(runId);
      table.rollbacks.delete(runId);
      await rollback?.();
      // Kept on the record and handed to a parent: no host path of an unknown error crosses.
      if (!(await this.d.actions.endRun(runId, 'failed', { collect: false, error: publicError(e) }))) await abandon();
    }
  }

  /** Kind `agent`: its pinned spec, the tools its lease allows, its model's window. */
  async #agentPacket(runId: string, caps: readonly string[], maxSteps: number, groups?: readonly ToolGroup[]): Promise<AgentPacket> {
    const { deps, table } = this.d;
    if (!grantAllows({ caps }, 'llm')) {
      throw new BrigError('capability_denied', 'an agent child needs `llm` in its lease (its model calls go through the broker)', { data: { what: 'llm' } });
    }
    if (!deps.agents || !deps.models) throw new BrigError('model_unavailable', 'this supervisor serves no agent children');
    const spec = await table.store.readAgent(runId);
    if (!spec) throw new BrigError('state_corrupt', `the agent spec of run ${runId} is missing`, { data: { runId, file: 'agent.json' } });
    const model = deps.models.resolve(table.get(runId)!.model);
    if (!model.ok) throw model.error;
    const tools = deps.agents.tools(spec, caps, groups);
    return {
      name: spec.name,
      instructions: spec.instructions,
      tools,
      maxSteps,
      workspaceAware: spec.workspaceAware,
      role: spec.role,
      autoCompactThreshold: this.d.settings.autoCompactThreshold,
      toolResultMaxChars: this.d.settings.toolResultMaxChars,
      maxConsecutiveFormatErrors: 3,
      contextWindow: model.value.contextWindow,
      maxOutputTokens: model.value.maxOutputTokens,
      ...(tools.includes('web_search') && deps.agents.webSearchUrl ? { webSearchUrl: deps.agents.webSearchUrl } : {}),
      heartbeatMs: agentHeartbeatMs(this.d.settings.stuckKillThresholdMs),
    };
  }

  /** Starts the progress fork and waits for the container to exit in the background. */
  watch(runId: string, jail: Jail): void {
    const { table, fork, settings } = this.d;
    fork.start(runId, settings.progressIntervalMs, () => {
      const r = table.get(runId);
      if (!r || r.status === 'ended') return fork.stop(runId);
      const now = table.clock.now();
      const progress = {
        runId,
        agentId: r.agent,
        progressLine: progressLineFor(r.status, r.stepsExecuted),
        elapsedMs: elapsedMs(r, now),
        stepsExecuted: r.stepsExecuted,
        timestamp: now.toISOString(),
        activeTool: r.activeTool ?? null,
      };
      table.emit(r, { type: 'progress', progress });
    });
    // Not background work: the wait lasts as long as the child, and an idle() or a drain must
    // not wait on it; its end is (each end is background work).
    void jail.wait().then(
      (exit) => {
        mark('run: child exited');
        table.mark(runId, 'exit_detected');
        const { reason, ...o } = exitEnd(exit, table.get(runId));
        table.background(this.d.actions.endRun(runId, reason, o));
      },
      (e) => {
        const code = toBrigError(e).code;
        // The driver closed (the supervisor stops): the child runs on, for the next start to reattach.
        if (code === 'shutting_down') return;
        table.background(this.d.actions.endRun(runId, 'failed', { error: { code, message: 'lost the container' } }));
      },
    );
  }

  /**
   * After a restart: watch a run's container again (running, or exited while no supervisor
   * watched: its end comes at once), or finish an end that was being collected.
   */
  async reattach(r: RunRecord, jail: Jail): Promise<boolean> {
    const { table, deps } = this.d;
    try {
      const packet = await table.store.readPacket(r.id);
      if (!packet) throw new BrigError('state_corrupt', `the packet of run ${r.id} is missing`, { data: { runId: r.id, file: 'packet.json' } });
      if (!r.leaseId) return false;
      if (r.status === 'materializing') {
        // It had ended and was being collected when the supervisor died: finish that end.
        table.live.set(r.id, { jail, caps: packet.lease.caps, steers: [] });
        const p = r.pendingEnd ?? { reason: 'failed' as const, error: { code: 'internal', message: 'the supervisor restarted while collecting this run' } };
        table.background(this.d.actions.endRun(r.id, p.reason, { ...p }));
        return true;
      }
      // The child's capabilities are those its packet was written with (the lease's own).
      const handle: Live = { jail, caps: packet.lease.caps, steers: [] };
      table.live.set(r.id, handle);
      // The child keeps its token; the broker verifies it against the persisted lease.
      const dir = path.join(deps.paths.brokers, jailKeyOf(r));
      handle.broker = await deps.broker.openRun({ runId: r.id, leaseId: r.leaseId, dir, packet, methods: brokerSurface(packet) });
      // Its egress socket again, on the lease as issued (usage counted before the restart is not carried over).
      const eg = deps.leases.egressOf?.(r.leaseId);
      if (eg?.egress && deps.egress) handle.egress = await deps.egress.openRun({ runId: r.id, leaseId: r.leaseId, dir, grant: eg.egress, ancestors: eg.egressAncestors ?? [] });
      this.watch(r.id, jail);
      return true;
    } catch {
      table.live.delete(r.id);
      return false;
    }
  }
}

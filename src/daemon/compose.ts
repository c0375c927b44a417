/**
 * The composition root: the one place that builds the real parts (Docker jail driver, lease
 * store, broker server, file ledger, result store) and hands them to the supervisor. No part
 * looks up its own dependencies. The broker's handlers forward every authenticated child
 * call to the supervisor by the run id the broker verified (never one the child claims).
 */
import { createReadStream, promises as fs } from 'node:fs';
import path from 'node:path';
import { Readable } from 'node:stream';
import { agentCatalogFor, toolSurface, type AgentCatalog } from '../agents/index.js';
import { BrokerServer, type Handlers } from '../broker/index.js';
import { brigPaths, type BrigConfig } from '../config/index.js';
import { DockerJailDriver, ownerForHome } from '../jail/index.js';
import { LeaseStore, loadPolicyFile, policyFileFor, profileFor, type LeaseRecord } from '../lease/index.js';
import { FileLedger, type Ledger } from '../ledger/index.js';
import { costOf, loadModelCatalog, type ModelCatalog } from '../models/index.js';
import { FsResultStore } from '../results/index.js';
import { ChildRefs, createSupervisor, type SupervisorCore, type AgentPort, type LeasePort, type ModelPort, type RefService, type ResultsPort, type SupervisorSettings } from '../runs/index.js';
import { DuckdbHelperPool } from '../slice/index.js';
import { BrigError, err, ok } from '../util/errors.js';
import { lockHome } from './home-lock.js';
import { openRefService } from './refs.js';

export interface ComposeOptions {
  settings?: Partial<SupervisorSettings>;
  /** Reattach / ghost-sweep persisted runs and sweep labelled leftovers (daemon: true). */
  reconcile?: boolean;
  tickMs?: number;
  /** Build the child image if missing (default true). */
  ensureImage?: boolean;
}

export interface Composed {
  supervisor: SupervisorCore;
  leases: LeaseStore;
  ledger: Ledger;
  /** The coordinator's drill-in surface, over the same store and helper pool as the children's. */
  refs: RefService;
  close(): Promise<void>;
}

function leasePort(store: LeaseStore): LeasePort {
  return {
    async issue(req) {
      const profile = profileFor(req.profile, req.parentLeaseId ? store.get(req.parentLeaseId)?.profile : undefined);
      const request = req.caps || req.limits ? { ...(req.caps ? { caps: req.caps } : {}), ...(req.limits ? { limits: req.limits } : {}) } : undefined;
      const issued = req.parentLeaseId
        ? store.issueChild({ parentLeaseId: req.parentLeaseId, request, profile, runId: req.runId, rootRunId: req.rootRunId, timeoutMs: req.timeoutMs, graceMs: req.graceMs ?? 0 })
        : store.issueRoot({ profile, runId: req.runId, rootRunId: req.rootRunId, timeoutMs: req.timeoutMs, graceMs: req.graceMs ?? 0, ...(request ? { request } : {}) });
      if (!issued.ok) return err(issued.error);
      const r = issued.value.record;
      return ok({ leaseId: r.id, token: issued.value.token, caps: r.caps, limits: r.limits, expiresAt: r.expiresAt });
    },
    async revoke(leaseId, by, reason) {
      const l = store.get(leaseId);
      if (!l || l.revoked) return;
      store.revoke(leaseId, by, reason);
    },
    onRevoked(cb) {
      return store.onRevoked((revoked: LeaseRecord[], by: string) => {
        for (const r of revoked) cb(r.id, by);
      });
    },
  };
}

/**
 * The supervisor's model port over the catalog: an alias's window, one metered turn. The
 * client (and its key) stays in here; the supervisor sees messages, usage and a cost.
 */
export function modelsPort(catalog: ModelCatalog): ModelPort {
  return {
    resolve(alias) {
      const r = catalog.resolve(alias);
      return r.ok ? ok({ alias: r.value.alias, contextWindow: r.value.contextWindow, maxOutputTokens: r.value.maxOutputTokens }) : r;
    },
    async complete(alias, req) {
      const r = catalog.resolve(alias);
      if (!r.ok) throw r.error;
      const c = await r.value.client.complete(req);
      return { ...c, costUsd: costOf(c.usage, r.value.price) };
    },
  };
}

/** Agent specs for the supervisor: the home's and the shipped ones; tools from the lease and the policy's denylist. */
export function agentsPort(catalog: AgentCatalog, deniedTools: readonly string[]): AgentPort {
  return {
    spec: (name) => catalog.get(name),
    tools: (spec, caps) => toolSurface({ caps, role: spec.role, denied: deniedTools, ...(spec.tools ? { wanted: spec.tools } : {}) }),
  };
}

/** The supervisor's view of the result store (exported for its test). */
export function resultsPort(store: FsResultStore): ResultsPort {
  return {
    outDir: (rootRunId, runId) => path.join(store.runDir(rootRunId, runId), 'out'),
    observe: store.observe,
    async index(rootRunId, runId, dir, extras = {}) {
      let m = await store.indexCollected(runId, rootRunId, dir, extras.collected ?? []);
      if (extras.result !== undefined) await store.writeValue(runId, rootRunId, extras.result);
      if (extras.resultFile) await store.writeStream(runId, rootRunId, 'result.json', createReadStream(extras.resultFile), {}, 'value');
      if (extras.transcriptFile) await store.writeStream(runId, rootRunId, 'transcript.jsonl', createReadStream(extras.transcriptFile), {}, 'transcript');
      for (const [name, text] of [['stdout.txt', extras.stdout], ['stderr.txt', extras.stderr]] as const) {
        if (text) await store.writeStream(runId, rootRunId, name, Readable.from([Buffer.from(text, 'utf8')]), {}, name === 'stdout.txt' ? 'stdout' : 'stderr');
      }
      m = await store.manifest(runId);
      return m.refs.length;
    },
    sweepInterrupted: (isLive) => store.sweepInterrupted(isLive),
    async remove(rootRunId, runId) {
      // The store's own remove: the run's directory AND its ref/run lookup pointers, so a
      // retention-swept run answers run_not_found / ref_not_found, not an empty listing.
      await store.remove(rootRunId, runId);
    },
  };
}

export async function composeSupervisor(cfg: BrigConfig, o: ComposeOptions = {}): Promise<Composed> {
  const paths = brigPaths(cfg.home);
  await fs.mkdir(paths.home, { recursive: true, mode: 0o700 });
  const pol = loadPolicyFile(policyFileFor(cfg.home));
  if (!pol.ok) throw pol.error;
  const ledger = new FileLedger({ dir: paths.ledger });
  const leases = new LeaseStore({ dir: paths.leases, policy: pol.value, ledger });
  const results = new FsResultStore({ dir: paths.results });
  const jail = new DockerJailDriver({ dockerHost: cfg.dockerHost, owner: ownerForHome(cfg.home) });
  // A broken model configuration stops the supervisor here, loudly; none at all serves no agents.
  const catalog = loadModelCatalog(cfg);
  if (!catalog.ok) throw catalog.error;
  const models = catalog.value.aliases().length > 0 ? modelsPort(catalog.value) : undefined;
  if (o.ensureImage !== false) await jail.ensureImage();
  // Handlers close over the supervisor built just below: the broker and the supervisor
  // need each other, and this is the one place that wires them.
  let sup: SupervisorCore | undefined;
  const forward = (call: { runId: string; method: string; params: unknown }) => {
    if (!sup) throw new BrigError('daemon_unavailable', 'the supervisor is starting');
    return sup.handleChildCall(call.runId, call.method, call.params);
  };
  // A child with `refs.read` slices its descendants' refs (runs/child-refs.ts decides who).
  const pool = new DuckdbHelperPool({ size: 1 });
  const childRefs = new ChildRefs({ store: results, pool, ledger, getRun: async (id) => sup?.get(id) });
  const refsCall = (call: { runId: string; leaseId: string; method: string; params: unknown }) => childRefs.handle(call);
  const handlers: Handlers = {
    progress: forward,
    checkpoint: forward,
    resume: forward,
    result: forward,
    // The summary a parent gets carries its child's ref handles (sdk.ts turns them into objects).
    spawn: async (call) => {
      const s = (await forward(call)) as { runId: string };
      const h = await childRefs.handlesOf(s.runId);
      return { ...s, refs: h.refs, ...(h.more > 0 ? { refsMore: h.more } : {}) };
    },
    wait: async (call) => {
      const w = (await forward(call)) as { runs: { runId: string }[] };
      const runs = await Promise.all(
        w.runs.map(async (s) => {
          const h = await childRefs.handlesOf(s.runId);
          return { ...s, refs: h.refs, ...(h.more > 0 ? { refsMore: h.more } : {}) };
        }),
      );
      return { runs };
    },
    'refs.list': refsCall,
    'refs.read': refsCall,
    'refs.grep': refsCall,
    'refs.jq': refsCall,
    'refs.sql': refsCall,
    'refs.jsonpath': refsCall,
    'steer.poll': forward,
    'llm.append': forward,
    'llm.reset': forward,
    'llm.complete': forward,
    'child.kill': forward,
    'child.steer': forward,
  };
  const broker = new BrokerServer({
    leases,
    ledger,
    handlers,
    onAbuse: (runId) => void sup?.kill(runId, { confirm: true, by: 'system' }),
  });
  // Only the supervisor that reconciles owns the home's runs: one per home (home-lock.ts).
  const unlock = o.reconcile !== false ? await lockHome(paths.home) : async () => {};
  sup = createSupervisor({
    jail,
    leases: leasePort(leases),
    broker,
    ledger,
    results: resultsPort(results),
    agents: agentsPort(agentCatalogFor(cfg.home), pol.value.denylist.tools),
    ...(models ? { models } : {}),
    paths: { runs: paths.runs, brokers: paths.brokers },
    ...(o.settings ? { settings: o.settings } : {}),
    ...(o.tickMs ? { tickMs: o.tickMs } : {}),
    reconcile: o.reconcile !== false,
  });
  const supervisor = sup;
  const { refs } = openRefService(cfg, (id) => supervisor.get(id), { store: results, pool });
  // A revoke written by another process (`brig lease revoke`) must still end the run here.
  const unwatch = o.reconcile !== false ? leases.watchRevocations(1000) : () => {};
  return {
    supervisor,
    leases,
    ledger,
    refs,
    async close() {
      unwatch();
      await supervisor.close();
      await broker.close();
      await pool.close();
      await catalog.value.close();
      await ledger.close();
      await unlock();
    },
  };
}

/**
 * The composition root: the one place that builds the real parts (Docker jail driver, lease
 * store, broker server, file ledger, result store) and hands them to the supervisor. No part
 * looks up its own dependencies. The broker's handlers forward every authenticated child
 * call to the supervisor by the run id the broker verified (never one the child claims).
 */
import { promises as fs } from 'node:fs';
import path from 'node:path';
import { agentCatalogFor } from '../agents/index.js';
import { BrokerServer, ensurePrivateDirs, grantRunSocket, type Handlers, type SocketOwner } from '../broker/index.js';
import { EgressGate, egressCredentials, makeResolver, systemClassifier } from '../egress/index.js';
import { brigPaths, type BrigConfig, type BrigPaths } from '../config/index.js';
import { DockerJailDriver, JAIL_USER, K8sJailDriver, K8sWarmPool, ownerForHome, WarmPool, type JailDriver } from '../jail/index.js';
import { LeaseStore, loadPolicyCached, policyFileFor } from '../lease/index.js';
import { FileLedger, type Ledger } from '../ledger/index.js';
import { Metrics } from '../util/metrics.js';
import { collectState, collectStorage, countBrokerCall, meterEvents, meterSlices, setBuildInfo } from './metrics-feed.js';
import { collectProcess } from './process-metrics.js';
import { teeLedger } from './ledger-tee.js';
import { silentLog, type Logger } from '../util/log.js';
import { logEvents } from './log-feed.js';
import { loadModelCatalog } from '../models/index.js';
import { FsResultStore } from '../results/index.js';
import { brigOf } from '../client/index.js';
import type { Brig } from '../protocol/index.js';
import type { RefService } from '../refs/index.js';
import { createSupervisor, jailLimitsFor, type StoragePort, type SupervisorCore, type SupervisorHooks, type SupervisorSettings } from '../runs/index.js';
import { diskSpace } from '../util/disk-space.js';
import { WriteJournal } from '../util/write-journal.js';
import { spawner } from '../util/spawner.js';
import { mark } from '../util/timing.js';
import { BrigError, toBrigError, type Result } from '../util/errors.js';
import { agentsPort, leasePort, modelsPort, resultsPort } from './adapters.js';
import { lockHome } from './home-lock.js';
import { Operator } from './operator.js';
import { openDrillIn } from './refs.js';
import { graphCancelHandler, graphFeed, graphManifestReader, graphRunHandler, graphServiceFor, graphSurfaceOf, graphWaitHandler } from './graphs.js';
import type { GraphService } from '../graphs/index.js';

export { agentsPort, leasePort, modelsPort, resultsPort } from './adapters.js';

/**
 * A caller's onEnded hears of a run after its envelope was cast (condensed, kept), with the
 * context it saved; casting failing never keeps the hook from hearing of the end.
 */
function castThenTell(hooks: SupervisorHooks, cast: (runId: string) => Promise<Result<{ savings: { estSavedTokens: number }; condensed: { level: 1 | 2 | 3 } }>>): SupervisorHooks {
  if (!hooks.onEnded) return hooks;
  const tell = hooks.onEnded;
  return {
    ...hooks,
    onEnded: async (end) => {
      const env = await cast(end.runId).catch(() => undefined);
      await tell({ ...end, estSavedTokens: env?.ok ? env.value.savings.estSavedTokens : null, condensationLevel: env?.ok ? env.value.condensed.level : null });
    },
  };
}

export interface ComposeOptions {
  settings?: Partial<SupervisorSettings>;
  /** Reattach / ghost-sweep persisted runs and sweep labelled leftovers (daemon: true). */
  reconcile?: boolean;
  tickMs?: number;
  /** Build the child image if missing (default true). */
  ensureImage?: boolean;
  hooks?: SupervisorHooks;
  /** The daemon's log (util/log.ts); default: silent (a library caller did not ask for one). */
  log?: Logger;
  /**
   * Warm jails kept ready per limit shape (jail/docker/pool.ts); 0 or absent: every run's jail
   * is made when it starts. Primed with the shape of an operator's spawn under the root profile
   * and the shapes the last daemon of this home kept (warm-shapes.json).
   */
  warm?: number;
  /** brig's package version, for brig_build_info (the CLI reads it; default `unknown`). */
  version?: string;
}

export interface Composed {
  supervisor: SupervisorCore;
  leases: LeaseStore;
  ledger: Ledger;
  /** Counters, gauges and histograms for GET /v1/metrics (util/metrics.ts). */
  metrics: Metrics;
  log: Logger;
  /** The coordinator's drill-in surface, over the same store and helper pool as the children's. */
  refs: RefService;
  /** The warm pool, when one was asked for: start() it once the supervisor reconciled. */
  warm?: WarmPool | K8sWarmPool;
  /** The operator's services over this daemon's own lease store and ledger. */
  operator: Operator;
  /** The one client surface over these parts (runs, refs, operator): what the API serves. */
  brig: Brig;
  /** Execution graphs over this supervisor: recover() once the supervisor reconciled. */
  graphs: GraphService;
  close(): Promise<void>;
}

/**
 * A home other users can enter would open its runs, leases, results and ledger to them: brig
 * refuses it rather than silently changing what the operator set.
 */
async function refuseOpenHome(home: string): Promise<void> {
  const mode = (await fs.stat(home)).mode & 0o777;
  if ((mode & 0o077) === 0) return;
  throw new BrigError('invalid_input', `BRIG_HOME ${home} is mode ${mode.toString(8).padStart(4, '0')}: other local users could reach its runs, leases and ledger`, {
    data: { home, mode: mode.toString(8) },
    hint: `chmod 700 ${home}`,
  });
}

/** egress.upstreamCaFile: PEM certificates the gate trusts (beside the system's) when it re-originates an inspected connection. */
async function readUpstreamCa(file: string): Promise<string> {
  const text = await fs.readFile(file, 'utf8').catch((e: NodeJS.ErrnoException) => {
    throw new BrigError('invalid_input', `egress.upstreamCaFile ${file}: ${e.code ?? e.message}`, { hint: 'Name a readable PEM file of CA certificates, or drop the setting.' });
  });
  if (!text.includes('-----BEGIN CERTIFICATE-----')) throw new BrigError('invalid_input', `egress.upstreamCaFile ${file}: no PEM certificate in it`, { hint: 'The file holds CA certificates as PEM (-----BEGIN CERTIFICATE-----).' });
  return text;
}

/** The jail's user (profile.ts JAIL_USER): the one uid, besides root, that may reach a run's socket. */
function jailUser(): SocketOwner {
  const [uid, gid] = JAIL_USER.split(':').map(Number);
  return { uid: uid!, gid: gid! };
}

/** Builds every part of one home once and wires them: the one composition root. */
export async function compose(cfg: BrigConfig, o: ComposeOptions = {}): Promise<Composed> {
  const paths = brigPaths(cfg.home);
  await fs.mkdir(paths.home, { recursive: true, mode: 0o700 });
  await refuseOpenHome(paths.home);
  // Only the supervisor that reconciles owns the home's runs: one per home (home-lock.ts). It
  // alone writes the run and result state, through the home's journal (util/write-journal.ts),
  // whose open replays what a crash left before anything reads the home.
  const owner = o.reconcile !== false;
  const unlock = owner ? await lockHome(paths.home) : async () => {};
  mark('compose: home locked');
  if (!owner) await replayLeftJournal(paths);
  const journal = owner ? await WriteJournal.open(paths.home, { dir: paths.journal }) : undefined;
  mark('compose: journal open');
  // A journal left by a stop that was not clean was replayed over the files: said once.
  if (journal && journal.replayed.segments > 0) (o.log ?? silentLog()).warn?.({ ...journal.replayed }, 'journal replayed after an unclean stop');
  const drivers = startDrivers(cfg, o, paths);
  try {
    return await composeHeld(cfg, o, paths, unlock, journal, drivers);
  } catch (e) {
    // Their connections go, and with them an image build the check may have begun: a home
    // that failed to compose does not stay for it.
    await drivers.docker.close().catch(() => undefined);
    await drivers.k8s?.close().catch(() => undefined);
    await journal?.close().catch(() => undefined);
    await unlock();
    throw e;
  }
}

interface Drivers {
  docker: DockerJailDriver;
  k8s: K8sJailDriver | undefined;
  /** The child image's check (and build when missing), begun at once; awaited once the rest is composed. */
  image: Promise<string> | undefined;
}

/**
 * The jail seam's two drivers: Docker's (with its warm pool) or Kubernetes' bare pods (issue 33).
 * The image check (a stat of its inputs, the engine asked for the tag) starts here and waits on
 * files and the engine while the policy and the stores are read on this thread; the disk tools'
 * helper starts beside them (util/spawner.ts): a one-shot spawn's first disk no longer waits.
 */
function startDrivers(cfg: BrigConfig, o: ComposeOptions, paths: BrigPaths): Drivers {
  const k8s = cfg.driver.kind === 'kubernetes'
    ? new K8sJailDriver({ kubeconfig: cfg.driver.kubeconfig, namespace: cfg.driver.namespace, image: cfg.driver.image, workspace: cfg.driver.workspace, owner: ownerForHome(cfg.home), brokersDir: paths.brokers, ...(cfg.driver.runtimeClassName ? { runtimeClassName: cfg.driver.runtimeClassName } : {}) })
    : undefined;
  const docker = new DockerJailDriver({ dockerHost: cfg.dockerHost, owner: ownerForHome(cfg.home), workspaceQuota: cfg.workspaceQuota, imageCacheFile: paths.imageCache });
  const image = o.ensureImage !== false ? (k8s ?? docker).ensureImage() : undefined;
  image?.catch(() => undefined);
  if (!k8s && cfg.workspaceQuota === 'loop') spawner.prestart();
  return { docker, k8s, image };
}

/**
 * A process that does not own the home (an in-process CLI beside no daemon) reads it as the
 * last owner left it: a journal a crash left is replayed first when no supervisor holds the
 * home (one that does replayed it when it opened).
 */
async function replayLeftJournal(paths: BrigPaths): Promise<void> {
  const left = await fs.readdir(paths.journal).catch(() => [] as string[]);
  if (left.length === 0) return;
  const unlock = await lockHome(paths.home).catch(() => undefined);
  if (!unlock) return;
  try {
    await (await WriteJournal.open(paths.home, { dir: paths.journal })).close();
  } finally {
    await unlock();
  }
}

async function composeHeld(cfg: BrigConfig, o: ComposeOptions, paths: BrigPaths, unlock: () => Promise<void>, journal: WriteJournal | undefined, drivers: Drivers): Promise<Composed> {
  const { k8s, docker, image } = drivers;
  // The sockets' runtime directory (not under the home) and its brig-owned parent, both 0700.
  await ensurePrivateDirs(path.dirname(paths.brokers), paths.brokers);
  mark('compose: runtime dirs');
  const pol = loadPolicyCached(policyFileFor(cfg.home), paths.policyCache);
  if (!pol.ok) throw pol.error;
  mark('compose: policy read');
  // Metrics count what is ledgered (a tee), the broker's calls, and the table at scrape time.
  const metrics = new Metrics();
  const fileLedger = new FileLedger({ dir: paths.ledger });
  const log = o.log ?? silentLog();
  const ledger = teeLedger(fileLedger, [meterEvents(metrics), logEvents(log)]);
  setBuildInfo(metrics, o.version ?? 'unknown');
  const leases = new LeaseStore({ dir: paths.leases, policy: pol.value, ledger });
  const results = new FsResultStore({ dir: paths.results, ...(journal ? { writer: journal } : {}) });
  mark('compose: ledger, leases, results');
  // A broken model configuration stops the supervisor here, loudly; none at all serves no agents.
  const catalog = loadModelCatalog(cfg);
  if (!catalog.ok) throw catalog.error;
  mark('compose: models');
  const models = catalog.value.aliases().length > 0 ? modelsPort(catalog.value) : undefined;
  const rootShape = leases.previewRootLimits();
  // With models, the default shape's agent-ready slots too (a pre-started agent runtime each).
  const prime = rootShape ? [jailLimitsFor(rootShape)] : [];
  // On Kubernetes, running pods with the relay exec'd (k8s-pool.ts); its shapes are kept apart from Docker's.
  const warm = (o.warm ?? 0) <= 0
    ? undefined
    : k8s
      ? new K8sWarmPool({ driver: k8s, size: o.warm!, prime, shapesFile: `${paths.warmShapes}.k8s`, onEvent: (e) => ledger.append({ ...e }) })
      : new WarmPool({ driver: docker, size: o.warm!, brokersDir: paths.brokers, prime, primeAgent: models !== undefined, shapesFile: paths.warmShapes, onEvent: (e) => ledger.append({ ...e }) });
  const jail: JailDriver = warm ?? k8s ?? docker;
  if (image) await image;
  mark('compose: image checked');
  // The broker's table is filled once the supervisor exists: the broker and the supervisor
  // need each other, and this is the one place that wires them. No run can call before
  // (none has started), and the broker reads the table per call.
  let sup: SupervisorCore | undefined;
  const handlers: Handlers = {};
  // The operator's drill-in and a child's with `refs.read` (its descendants' refs only,
  // refs/child-refs.ts decides who), over one slicing of this supervisor.
  const drill = openDrillIn(cfg, { store: results, ledger, getRun: async (id) => sup?.get(id), onSlice: meterSlices(metrics) });
  const { refs, childRefs } = drill;
  mark('compose: drill-in');
  const broker = new BrokerServer({
    leases,
    ledger,
    handlers,
    onAbuse: (runId) => void sup?.kill(runId, { confirm: true, by: 'system' }),
    onCall: countBrokerCall(metrics),
    socketOwner: jailUser(),
  });
  // A full home refuses new runs while the ledger holds lines the disk refused (and below the reserve).
  const storage: StoragePort = {
    space: () => diskSpace(paths.home),
    held: () => {
      const b = fileLedger.backlog();
      return [{ what: 'ledger line(s)', count: b.lines + b.unrecorded }];
    },
  };
  // The egress gate: one socket per run with egress, beside broker.sock (the jail keeps NetworkMode none).
  if (cfg.egress.testPublicCidrs.length > 0) log.warn?.({ testPublicCidrs: cfg.egress.testPublicCidrs }, 'egress: BRIG_EGRESS_TEST_PUBLIC_CIDRS treats these loopback addresses as public (tests only)');
  const egress = new EgressGate({
    ledger,
    resolver: makeResolver(cfg.egress.resolvers),
    classify: systemClassifier({ denyCidrs: pol.value.egress.denyCidrs, allowPrivateCidrs: pol.value.egress.allowPrivateCidrs, testPublicCidrs: cfg.egress.testPublicCidrs }),
    policy: { denyHosts: pol.value.egress.denyHosts },
    grantSocket: (dir, p) => grantRunSocket(dir, p, jailUser()),
    ...(cfg.egress.upstreamCaFile ? { upstreamCa: await readUpstreamCa(cfg.egress.upstreamCaFile) } : {}),
    credentials: egressCredentials(pol.value.egress.credentials, cfg.egressSecrets ?? {}),
  });
  mark('compose: broker, egress');
  sup = createSupervisor({
    jail,
    leases: leasePort(leases, pol.value, () => policyFileFor(cfg.home)),
    broker,
    egress,
    ledger,
    results: resultsPort(results),
    agents: agentsPort(agentCatalogFor(cfg.home), pol.value.denylist.tools, pol.value.groups, cfg.egress.searchUrl),
    ...(models ? { models } : {}),
    paths: { runs: paths.runs, brokers: paths.brokers, admission: paths.admission },
    ...(journal ? { writer: journal } : {}),
    ...(o.settings ? { settings: o.settings } : {}),
    ...(o.tickMs ? { tickMs: o.tickMs } : {}),
    reconcile: o.reconcile !== false,
    ...(o.hooks ? { hooks: castThenTell(o.hooks, (id) => refs.result(id)) } : {}),
    // The summary a parent gets carries its child's ref handles (sdk.ts turns them into objects).
    handlesOf: (id) => childRefs.handlesOf(id),
    storage,
    // …and, once it ended, the envelope every face shows (cast once and kept, by the same RefService).
    envelopeOf: async (id) => {
      const r = await refs.result(id);
      if (!r.ok) throw r.error;
      return r.value.envelope;
    },
  });
  const supervisor = sup;
  // One typed handler per method, called directly by the broker: the run's (runs/child-calls.ts)
  // and the drill-in's (refs/child-refs.ts).
  Object.assign(handlers, supervisor.childCalls, childRefs.handlers);
  collectState(metrics, () => supervisor, drill.pools, warm);
  collectStorage(metrics, () => supervisor.storage(), supervisor.settings.minFreeBytes);
  const stopProcessMetrics = collectProcess(metrics);
  const operator = new Operator({ cfg, leases, ledger, runs: supervisor, refs, reserveBytes: supervisor.settings.minFreeBytes, admission: supervisor.admission });
  // The graphs' events: into the ledger, and live to whoever follows them (the API's event stream).
  const feed = graphFeed();
  const graphs = graphServiceFor({ dir: paths.graphs, supervisor, results, ledger, leases: operator.leases, feed });
  // An agent's graph_run (capability `graph`): its graph is one child of its own; it slices the manifest as a child's ref.
  handlers['graph.run'] = graphRunHandler(graphs, supervisor);
  handlers['graph.wait'] = graphWaitHandler(graphs, supervisor);
  handlers['graph.cancel'] = graphCancelHandler(graphs, supervisor);
  childRefs.allowGraphManifests(graphManifestReader(graphs.p.store));
  // A revoke written by another process (`brig lease revoke`) must still end the run here.
  const unwatch = o.reconcile !== false ? leases.watchRevocations(1000) : () => {};
  const close = async () => {
      unwatch();
      feed.close();
      // Idle slots first: nothing is handed out while the supervisor closes. An engine that
      // does not answer holds neither: the driver's close ends what waits on it (the slots go
      // with the next start's sweep, the children it runs are reattached).
      if (warm && !(await warm.engineAnswers(1500))) await (k8s ? k8s.close() : docker.close());
      await warm?.close();
      await supervisor.close();
      mark('close: supervisor (releases)');
      await docker.close();
      mark('close: docker');
      await k8s?.close();
      await broker.close();
      await egress.close();
      mark('close: broker, egress');
      // This home's runtime directory goes once no run's socket directory is left in it.
      await fs.rmdir(paths.brokers).catch(() => {});
      await drill.close();
      mark('close: drill');
      await catalog.value.close();
      // Lines a full home would not take are lost with the process: said, not thrown (the rest must close).
      await ledger.close().catch((e: unknown) => log.error({ code: toBrigError(e).code, message: toBrigError(e).message }, 'ledger lines lost at close'));
      mark('close: ledger');
      stopProcessMetrics();
      // Last before the lock goes: every journaled file made durable on its own, the journal emptied.
      await journal?.close().catch((e: unknown) => log.error({ code: toBrigError(e).code, message: toBrigError(e).message }, 'journal checkpoint failed at close: the next start replays it'));
      mark('close: journal');
      await unlock();
  };
  return {
    supervisor,
    leases,
    ledger,
    refs,
    metrics,
    log,
    ...(warm ? { warm } : {}),
    operator,
    brig: { ...brigOf(supervisor, 'local', refs, operator, close), graphs: graphSurfaceOf(graphs, feed) },
    graphs,
    close,
  };
}

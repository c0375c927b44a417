/**
 * The operator's services for one brig home: leases (list, show, revoke), the audit ledger
 * (verify, query), the doctor, the fleet roll-up — the OperatorSurface every Brig carries —
 * and what only this machine can do (policy check/explain, building the child image). Built
 * once from the parts it is handed: the composed daemon hands its own lease store and ledger
 * (a revoke then ends its runs at once, and nothing opens a second store); a face without a
 * daemon gets one over the home's files (openOperator).
 */
import fs from 'node:fs';
import path from 'node:path';
import type { BrigConfig } from '../config/index.js';
import { brigPaths } from '../config/index.js';
import { DockerJailDriver, K8sJailDriver, gatherDoctorFacts, judgeDoctor, kubernetesDoctor, ownerForHome } from '../jail/index.js';
import { explainPolicy, leaseState, LeaseStore, loadPolicyFile, policyFilesIn, shippedPoliciesDir, type LeaseRecord, type Policy } from '../lease/index.js';
import { FileLedger, ledgerFiles, verifyLedger, type Ledger } from '../ledger/index.js';
import type { AdmissionChange, AdmissionState, DoctorCheck, FleetOptions, FleetReport, LeaseView, LedgerReport, ListFilter, OperatorSurface, QueryResult, RefSurface, RunRecord } from '../protocol/index.js';
import { lockedQuery, reportHelper, reportTools } from '../slice/index.js';
import { BrigError, err, ok, toBrigError, type Result } from '../util/errors.js';
import { AdmissionSwitch, DEFAULT_SETTINGS, readAdmission, type SupervisorCore } from '../runs/index.js';
import { diskSpace } from '../util/disk-space.js';
import { fleetReport } from './fleet.js';
import { egressProbe, egressSettingsChecks } from './doctor-egress.js';
import { JAIL_USER } from '../jail/index.js';

export type { LeaseView } from '../protocol/index.js';

export interface PolicyCheck {
  file: string;
  result: Result<Policy>;
}

/** A lease as the operator sees it: no token hash, with its state now. */
export function leaseView(r: LeaseRecord, now: number = Date.now()): LeaseView {
  const { tokenHash: _t, ...rest } = r;
  return { ...rest, state: leaseState(r, now) };
}

export interface OperatorParts {
  cfg: BrigConfig;
  /** The daemon's own store (its revocation listener ends runs); absent: read from the files per call. */
  leases?: LeaseStore;
  /** The daemon's own ledger; absent: a revoke opens a segment of its own and closes it. */
  ledger?: Ledger;
  /** The runs and envelopes the fleet roll-up reads. */
  runs: { list(f: ListFilter): Promise<RunRecord[]> };
  refs: Pick<RefSurface, 'peek'>;
  /** The bytes the supervisor keeps free in the home (its minFreeBytes): the doctor's mark. */
  reserveBytes?: number;
  /** The supervisor's admission switch; absent (no supervisor here): the home's admission.json, read and written per call. */
  admission?: SupervisorCore['admission'];
}

export class Operator implements OperatorSurface {
  readonly home: string;
  readonly #p: OperatorParts;
  readonly #paths: ReturnType<typeof brigPaths>;

  constructor(p: OperatorParts) {
    this.#p = p;
    this.home = p.cfg.home;
    this.#paths = brigPaths(p.cfg.home);
  }

  #store(): LeaseStore {
    return this.#p.leases ?? new LeaseStore({ dir: this.#paths.leases, ledger: { append() {} } });
  }

  readonly leases: OperatorSurface['leases'] = {
    list: async () => {
      const store = this.#store();
      const now = Date.now();
      return { leases: store.list().map((r) => leaseView(r, now)), unreadable: store.unreadable() };
    },
    show: async (id) => {
      const store = this.#store();
      const rec = store.get(id);
      if (!rec) return err(new BrigError('lease_not_found', `no lease ${id}`, { hint: '`brig lease list` shows the lease ids.' }));
      const now = Date.now();
      return ok({ lease: leaseView(rec, now), lineage: store.lineage(id).slice(1).map((l) => leaseView(l, now)) });
    },
    revoke: async (id, reason) => {
      const own = this.#p.leases && this.#p.ledger ? undefined : new FileLedger({ dir: this.#paths.ledger });
      try {
        const store = this.#p.leases ?? new LeaseStore({ dir: this.#paths.leases, ledger: own! });
        const r = store.revoke(id, 'operator', reason);
        const now = Date.now();
        return r.ok ? ok(r.value.map((x) => leaseView(x, now))) : r;
      } finally {
        await own?.close();
      }
    },
  };

  readonly audit: OperatorSurface['audit'] = {
    verify: async (): Promise<LedgerReport & { dir: string }> => ({ ...verifyLedger(this.#paths.ledger), dir: this.#paths.ledger }),
    query: async (sql, maxRows = 1000): Promise<Result<QueryResult>> => {
      const files = ledgerFiles(this.#paths.ledger);
      if (files.length === 0) return err(new BrigError('invalid_input', 'the ledger is empty', { hint: 'Nothing has been recorded under this BRIG_HOME yet.' }));
      try {
        return ok(await lockedQuery({ files, viewName: 'ledger', reader: 'read_ndjson', sql, maxRows }));
      } catch (e) {
        return err(toBrigError(e));
      }
    },
  };

  /**
   * Admission: the daemon's switch when this operator is the daemon's. Without one the file is
   * the state (the next supervisor of this home starts in it): a change is written there and
   * ledgered in a segment of its own; the queue is a supervisor's, so it is not counted.
   */
  readonly admission: OperatorSurface['admission'] = {
    status: async () => this.#p.admission?.status() ?? { ...readAdmission(this.#paths.admission), queued: null },
    pause: (c) => this.#setAdmission(true, c),
    resume: (c) => this.#setAdmission(false, c),
  };

  async #setAdmission(paused: boolean, c: AdmissionChange = {}): Promise<Result<AdmissionState>> {
    try {
      const own = this.#p.admission;
      if (own) return ok(paused ? own.pause(c) : own.resume(c));
      const ledger = new FileLedger({ dir: this.#paths.ledger });
      try {
        const sw = new AdmissionSwitch(this.#paths.admission, ledger, { now: () => new Date() });
        sw.set(paused, c, null);
        return ok({ ...sw.state, queued: null });
      } finally {
        await ledger.close();
      }
    } catch (e) {
      return err(toBrigError(e));
    }
  }

  async doctor(d: { build?: boolean } = {}): Promise<DoctorCheck[]> {
    const cfg = this.#p.cfg;
    // The Kubernetes driver's cluster is judged instead of the engine (jail/k8s/k8s-doctor.ts).
    if (cfg.driver.kind === 'kubernetes') {
      const k8s = new K8sJailDriver({ kubeconfig: cfg.driver.kubeconfig, namespace: cfg.driver.namespace, image: cfg.driver.image, workspace: cfg.driver.workspace, owner: `${ownerForHome(cfg.home)}-doctor`, foreignPolicyCheck: false, ...(cfg.driver.runtimeClassName ? { runtimeClassName: cfg.driver.runtimeClassName } : {}) });
      try {
        return await kubernetesDoctor(k8s, cfg.driver.namespace);
      } finally {
        await k8s.close();
      }
    }
    const driver = new DockerJailDriver({ dockerHost: cfg.dockerHost, owner: ownerForHome(cfg.home), workspaceQuota: cfg.workspaceQuota });
    const [facts, helper, tools] = await Promise.all([
      gatherDoctorFacts(driver, { build: d.build === true }),
      reportHelper().catch((e: unknown) => ({ error: `no helper started: ${(e as Error).message}` })),
      reportTools().catch((e: unknown) => ({ error: `grep could not be run: ${(e as Error).message}` })),
    ]);
    const reserveBytes = this.#p.reserveBytes ?? DEFAULT_SETTINGS.minFreeBytes;
    const space = diskSpace(this.home);
    const home = space ? { dir: this.home, reserveBytes, ...space } : { dir: this.home, reserveBytes, error: 'statfs failed (does it exist?)' };
    const checks = judgeDoctor({ ...facts, helper, tools, home });
    // The egress proof needs the child image the jail probe found.
    if (facts.image && !('error' in facts.image) && facts.image.present && facts.probe && !('error' in facts.probe)) {
      const [uid, gid] = JAIL_USER.split(':').map(Number);
      checks.push(...(await egressProbe(driver, facts.image.tag, brigPaths(cfg.home).brokers, { uid: uid!, gid: gid! })));
    }
    checks.push(...egressSettingsChecks(cfg.egress));
    return checks;
  }

  fleet(o: FleetOptions): Promise<FleetReport> {
    return fleetReport({ list: (f) => this.#p.runs.list(f), refs: this.#p.refs, ledgerDir: this.#paths.ledger }, o);
  }

  /** The policy files checked when none are named: the shipped policies/ and this home's policy.yaml. */
  defaultPolicyTargets(): string[] {
    const own = path.join(this.home, 'policy.yaml');
    return [shippedPoliciesDir(), ...(fs.existsSync(own) ? [own] : [])];
  }

  checkPolicies(targets: string[]): PolicyCheck[] {
    const files = targets.flatMap((t) => {
      const abs = path.resolve(t);
      return fs.existsSync(abs) && fs.statSync(abs).isDirectory() ? policyFilesIn(abs) : [abs];
    });
    return files.map((file) => ({ file, result: loadPolicyFile(file) }));
  }

  explainPolicy(p: Policy): string[] {
    return explainPolicy(p);
  }

  /** `brig image toolbox`: the Debian toolbox image, built unless its recipe's tag is present. */
  async buildToolbox(b: { force?: boolean; onProgress?: (line: string) => void } = {}): Promise<{ tag: string; built: boolean }> {
    const driver = new DockerJailDriver({ dockerHost: this.#p.cfg.dockerHost });
    return driver.buildToolbox({ force: b.force === true, ...(b.onProgress ? { onProgress: b.onProgress } : {}) });
  }

  async buildImage(b: { force?: boolean; prune?: boolean; onProgress?: (line: string) => void } = {}): Promise<{ tag: string; built: boolean; runtimeIncluded: boolean; pruned: string[] }> {
    const driver = new DockerJailDriver({ dockerHost: this.#p.cfg.dockerHost });
    const res = await driver.buildChildImage({ force: b.force === true, ...(b.onProgress ? { onProgress: b.onProgress } : {}) });
    const pruned = b.prune ? await driver.pruneChildImages(res.tag) : [];
    return { ...res, pruned };
  }
}

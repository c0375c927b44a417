/**
 * The operator's services for one brig home, composed here so the faces (CLI, MCP, console)
 * only present: leases (list, show, revoke), the audit ledger (verify, query), policies
 * (check, explain), and the engine (doctor, image build). None needs a supervisor; each reads
 * the home's files as the daemon does and writes only through the same stores (a revoke goes
 * through the LeaseStore and into the ledger).
 */
import fs from 'node:fs';
import path from 'node:path';
import { brigPaths, loadConfig, type BrigConfig } from '../config/index.js';
import { DockerJailDriver, gatherDoctorFacts, judgeDoctor, ownerForHome, type DoctorCheck } from '../jail/index.js';
import { explainPolicy, leaseState, LeaseStore, loadPolicyFile, policyFilesIn, shippedPoliciesDir, type LeaseRecord, type Policy } from '../lease/index.js';
import { FileLedger, ledgerFiles, verifyLedger, type LedgerReport } from '../ledger/index.js';
import { lockedQuery, reportHelper, type LockedQueryResult } from '../slice/index.js';
import { BrigError, err, ok, type Result } from '../util/errors.js';

/** A lease as an operator sees it: no token hash, with its state now. */
export type LeaseView = Omit<LeaseRecord, 'tokenHash'> & { state: ReturnType<typeof leaseState> };

export interface PolicyCheck {
  file: string;
  result: Result<Policy>;
}

export interface Operator {
  readonly home: string;
  readonly leases: {
    list(): { leases: LeaseView[]; unreadable: string[] };
    /** The lease and its lineage up to the root; lease_not_found when unknown. */
    show(id: string): Result<{ lease: LeaseView; lineage: LeaseView[] }>;
    /** Revokes the lease and its subtree (ledgered; a running daemon ends their runs). */
    revoke(id: string, reason?: string): Promise<Result<LeaseView[]>>;
  };
  readonly audit: {
    verify(): LedgerReport & { dir: string };
    /** One read-only SELECT over the view `ledger`, locked down like the slicer. */
    query(sql: string, maxRows?: number): Promise<LockedQueryResult>;
  };
  readonly policy: {
    /** The files checked when none are named: the shipped policies/ and this home's policy.yaml. */
    defaultTargets(): string[];
    check(targets: string[]): PolicyCheck[];
    explain(p: Policy): string[];
  };
  readonly engine: {
    doctor(o?: { build?: boolean }): Promise<DoctorCheck[]>;
    buildImage(o?: { force?: boolean; prune?: boolean; onProgress?: (line: string) => void }): Promise<{ tag: string; built: boolean; runtimeIncluded: boolean; pruned: string[] }>;
  };
}

/** A lease as the operator sees it: no token hash, with its state now. */
export function leaseView(r: LeaseRecord, now: number = Date.now()): LeaseView {
  const { tokenHash: _t, ...rest } = r;
  return { ...rest, state: leaseState(r, now) };
}

/** The operator's services for the home in `env` (BRIG_HOME) or the one given. */
export function openOperator(o: { env?: NodeJS.ProcessEnv; home?: string } = {}): Operator {
  const base = loadConfig(o.env);
  const cfg: BrigConfig = o.home ? { ...base, home: o.home } : base;
  const paths = brigPaths(cfg.home);
  const readLeases = () => new LeaseStore({ dir: paths.leases, ledger: { append() {} } });
  return {
    home: cfg.home,
    leases: {
      list() {
        const store = readLeases();
        const now = Date.now();
        return { leases: store.list().map((r) => leaseView(r, now)), unreadable: store.unreadable() };
      },
      show(id) {
        const store = readLeases();
        const rec = store.get(id);
        if (!rec) return err(new BrigError('lease_not_found', `no lease ${id}`));
        const now = Date.now();
        return ok({ lease: leaseView(rec, now), lineage: store.lineage(id).slice(1).map((l) => leaseView(l, now)) });
      },
      async revoke(id, reason) {
        const ledger = new FileLedger({ dir: paths.ledger });
        try {
          const r = new LeaseStore({ dir: paths.leases, ledger }).revoke(id, 'operator', reason);
          const now = Date.now();
          return r.ok ? ok(r.value.map((x) => leaseView(x, now))) : r;
        } finally {
          await ledger.close();
        }
      },
    },
    audit: {
      verify: () => ({ ...verifyLedger(paths.ledger), dir: paths.ledger }),
      async query(sql, maxRows = 1000) {
        const files = ledgerFiles(paths.ledger);
        if (files.length === 0) throw new BrigError('invalid_input', 'the ledger is empty', { hint: 'Nothing has been recorded under this BRIG_HOME yet.' });
        return lockedQuery({ files, viewName: 'ledger', reader: 'read_ndjson', sql, maxRows });
      },
    },
    policy: {
      defaultTargets() {
        const own = path.join(cfg.home, 'policy.yaml');
        return [shippedPoliciesDir(), ...(fs.existsSync(own) ? [own] : [])];
      },
      check(targets) {
        const files = targets.flatMap((t) => {
          const abs = path.resolve(t);
          return fs.existsSync(abs) && fs.statSync(abs).isDirectory() ? policyFilesIn(abs) : [abs];
        });
        return files.map((file) => ({ file, result: loadPolicyFile(file) }));
      },
      explain: (p) => explainPolicy(p),
    },
    engine: {
      async doctor(d = {}) {
        const driver = new DockerJailDriver({ dockerHost: cfg.dockerHost, owner: ownerForHome(cfg.home), workspaceQuota: cfg.workspaceQuota });
        const [facts, helper] = await Promise.all([
          gatherDoctorFacts(driver, { build: d.build === true }),
          reportHelper().catch((e: unknown) => ({ error: `no helper started: ${(e as Error).message}` })),
        ]);
        return judgeDoctor({ ...facts, helper });
      },
      async buildImage(b = {}) {
        const driver = new DockerJailDriver({ dockerHost: cfg.dockerHost });
        const res = await driver.buildChildImage({ force: b.force === true, ...(b.onProgress ? { onProgress: b.onProgress } : {}) });
        const pruned = b.prune ? await driver.pruneChildImages(res.tag) : [];
        return { ...res, pruned };
      },
    },
  };
}

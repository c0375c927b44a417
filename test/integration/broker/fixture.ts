import fs from 'node:fs';
import os from 'node:os';
import path from 'node:path';
import assert from 'node:assert/strict';
import { brigPaths } from '../../../src/config/index.js';
import { LeaseStore, loadPolicyFile, shippedPoliciesDir, type LeaseRequest } from '../../../src/lease/index.js';
import { FileLedger, type LedgerEvent } from '../../../src/ledger/index.js';
import { BrokerServer, type BrokerServerOptions } from '../../../src/broker/index.js';

/**
 * A real LeaseStore, a real FileLedger and a real BrokerServer under a fresh temp BRIG_HOME;
 * the sockets belong to the jail's user, as the composed supervisor's do.
 */
export class BrokerFixture {
  readonly paths: ReturnType<typeof brigPaths>;
  readonly leases: LeaseStore;
  readonly ledger: FileLedger;
  readonly broker: BrokerServer;
  readonly clock = { t: Date.now() };
  readonly abused: string[] = [];

  private constructor(readonly home: string, opts: Partial<BrokerServerOptions>) {
    this.paths = brigPaths(home);
    const pol = loadPolicyFile(path.join(shippedPoliciesDir(), 'default.yaml'));
    assert.ok(pol.ok);
    this.ledger = new FileLedger({ dir: this.paths.ledger });
    this.leases = new LeaseStore({ dir: this.paths.leases, policy: pol.value, ledger: this.ledger, now: () => this.clock.t });
    this.broker = new BrokerServer({
      leases: this.leases,
      ledger: this.ledger,
      onAbuse: (runId) => this.abused.push(runId),
      socketOwner: { uid: 65534, gid: 65534 },
      ...opts,
    });
  }

  static async create(opts: Partial<BrokerServerOptions> = {}): Promise<BrokerFixture> {
    const home = await fs.promises.mkdtemp(path.join(os.tmpdir(), 'brig-brk-'));
    return new BrokerFixture(home, opts);
  }

  /** Issues a root lease for a new run and opens its broker socket. */
  async run(runId: string, request?: LeaseRequest, profile = 'root') {
    const l = this.leases.issueRoot({ profile, runId, rootRunId: runId, timeoutMs: 600_000, ...(request ? { request } : {}) });
    assert.ok(l.ok, l.ok ? '' : l.error.message);
    const dir = path.join(this.paths.brokers, runId);
    const handle = await this.broker.openRun({ runId, leaseId: l.value.record.id, dir, packet: { task: 'opaque', runId } });
    return { ...l.value, dir, handle };
  }

  events(): LedgerEvent[] {
    return fs
      .readdirSync(this.paths.ledger)
      .flatMap((f) => fs.readFileSync(path.join(this.paths.ledger, f), 'utf8').split('\n').filter(Boolean))
      .map((l) => JSON.parse(l) as LedgerEvent);
  }

  async close(): Promise<void> {
    await this.broker.close();
    await this.ledger.close();
    await fs.promises.rm(this.paths.brokers, { recursive: true, force: true });
    await fs.promises.rm(this.home, { recursive: true, force: true });
  }
}

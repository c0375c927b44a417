import { promises as fs } from 'node:fs';
import path from 'node:path';
import type { CollectCaps, CollectReport, EngineInfo, Jail, JailDriver, JailExit, JailSpec, LabelledResource, StreamTails } from '../../../src/jail/types.js';

/** An in-memory jail: the test decides when it exits and what it leaves in /workspace/out. */
export class FakeJail implements Jail {
  readonly id: string;
  started = false;
  destroyed = false;
  killed = false;
  /** Its process has ended (exited or killed). */
  exited = false;
  /** collect() was called while its process still ran (a collection that could change under it). */
  collectedRunning = false;
  outFiles: Record<string, string> = {};
  collectCaps: CollectCaps | undefined;
  #exit!: (e: JailExit) => void;
  readonly #exited: Promise<JailExit>;

  constructor(readonly runId: string, readonly spec: JailSpec | null, private readonly driver: FakeJailDriver) {
    this.id = `fake-${runId}`;
    this.#exited = new Promise((r) => (this.#exit = r));
  }
  async start(): Promise<void> {
    if (this.driver.failStart) throw Object.assign(new Error('engine said no'), { code: 'jail_failed' });
    this.started = true;
  }
  wait(): Promise<JailExit> {
    return this.#exited;
  }
  /** Its process exits; `oomKilled` stands for the engine's State.OOMKilled. */
  exit(exitCode: number, o: { oomKilled?: boolean } = {}): void {
    this.exited = true;
    this.#exit({ exitCode, oomKilled: o.oomKilled === true });
  }
  async kill(): Promise<void> {
    this.killed = true;
    this.exited = true;
    this.#exit({ exitCode: 137, oomKilled: false });
  }
  async stop(_graceMs: number): Promise<void> {
    await this.kill();
  }
  tails(): StreamTails {
    return { stdoutTail: 'hello\n', stderrTail: '', stdoutBytes: 6, stderrBytes: 0 };
  }
  async collect(destDir: string, caps: CollectCaps): Promise<CollectReport> {
    this.collectCaps = caps;
    if (!this.exited) this.collectedRunning = true;
    await fs.mkdir(destDir, { recursive: false });
    let total = 0;
    for (const [p, data] of Object.entries(this.outFiles)) {
      await fs.mkdir(path.dirname(path.join(destDir, p)), { recursive: true });
      await fs.writeFile(path.join(destDir, p), data);
      total += Buffer.byteLength(data);
    }
    return { dir: destDir, files: Object.entries(this.outFiles).map(([p, d]) => ({ path: p, bytes: Buffer.byteLength(d) })), totalBytes: total, skipped: [] };
  }
  async destroy(): Promise<void> {
    this.destroyed = true;
    this.driver.jails.delete(this.runId);
  }
}

export class FakeJailDriver implements JailDriver {
  readonly jails = new Map<string, FakeJail>();
  readonly created: JailSpec[] = [];
  failStart = false;
  onCreate: ((j: FakeJail) => void) | undefined;
  /** When set, create() waits for it: lets a test kill a run mid-start. */
  createGate: Promise<void> | undefined;

  async info(): Promise<EngineInfo> {
    return { version: 'fake', apiVersion: '1.41', os: 'linux', runtimes: ['runc'] };
  }
  async ensureImage(): Promise<string> {
    return 'brig-child:fake';
  }
  async create(spec: JailSpec): Promise<Jail> {
    if (this.createGate) await this.createGate;
    const j = new FakeJail(spec.runId, spec, this);
    this.created.push(spec);
    this.jails.set(spec.runId, j);
    this.onCreate?.(j);
    return j;
  }
  async attach(runId: string): Promise<Jail | null> {
    const j = this.jails.get(runId);
    return j && j.started && !j.destroyed ? j : null;
  }
  async listLabelled(): Promise<LabelledResource[]> {
    return [...this.jails.values()].map((j) => ({ kind: 'container', id: j.id, runId: j.runId, rootRunId: j.spec?.rootRunId ?? j.runId, running: j.started }));
  }
  async sweep(isLive: (runId: string) => boolean): Promise<{ containers: number; volumes: number }> {
    let n = 0;
    for (const j of [...this.jails.values()]) if (!isLive(j.runId)) (await j.destroy(), n++);
    return { containers: n, volumes: n };
  }
}

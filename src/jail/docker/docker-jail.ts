/**
 * One child's container and workspace volume, behind brig's `Jail` interface.
 * A DockerJail is handed out created and verified, not started. destroy() removes both the
 * container and the volume and is safe to call any number of times.
 * Through an engine outage: wait() learns the child's real exit once the engine is back
 * (exit-watch.ts), and the attach stream a cut connection ended is attached again while the
 * child still runs (only what it wrote during the outage is missing from the tails); the
 * other calls fail `engine_unavailable` (a refused connection) or wait (a frozen engine) —
 * the supervisor decides what waits for the engine (runs/ender.ts).
 */
import { PassThrough, Writable } from 'node:stream';
import type Docker from 'dockerode';
import tar from 'tar-stream';
import fs from 'node:fs';
import path from 'node:path';
import { BrigError } from '../../util/errors.js';
import type { CollectCaps, CollectOptions, CollectReport, Jail, JailExit, JailInput, JailVerified, StreamTails } from '../types.js';
import { type ArchiveSource, PASSED_OVER, collectArchive } from './collect.js';
import { engineError, ignoreStatus, isUnreachable, statusOf } from './engine-errors.js';
import { EXIT_WATCH_TIMING, watchExit, type ExitState, type ExitWatchTiming } from './exit-watch.js';
import { OUT_DIR, WORKSPACE_DIR, workspaceRelative } from './profile.js';
import { TailBuffer } from './tail.js';
import { putRepo } from './repo-copy.js';
import type { ArtifactStages } from './artifact-stage.js';
import type { WorkspaceDisks } from './workspace-disk.js';

export { workspaceRelative };

/** Default bytes kept of each of stdout and stderr (the supervisor's stdoutTailBytes). */
export const DEFAULT_TAIL_BYTES = 16 * 1024;
const STREAM_DRAIN_MS = 2000;

/** A tar of the inputs, owned by the jail user, with their parent directories. */
export async function inputsArchive(inputs: JailInput[], o: { outDir?: boolean } = {}): Promise<Buffer> {
  const pack = tar.pack();
  // out/ is the jail user's in every image: a foreign image has no /workspace/out of its own.
  // Not again for a pooled jail's assignment (`outDir: false`): its create() made out/, and an
  // entry extracted over it would move its mtime, so collect could not know it empty by a stat.
  const dirs = new Set<string>();
  if (o.outDir !== false) {
    pack.entry({ name: OUT_DIR, type: 'directory', mode: 0o755, uid: 65534, gid: 65534 });
    dirs.add(OUT_DIR);
  }
  for (const input of inputs) {
    const rel = workspaceRelative(input.path);
    if (rel === undefined) throw new BrigError('invalid_input', 'an input path must be relative to /workspace without `..`', { data: { path: input.path } });
    const parts = rel.split('/');
    for (let i = 1; i < parts.length; i++) {
      const d = parts.slice(0, i).join('/');
      if (!dirs.has(d)) pack.entry({ name: d, type: 'directory', mode: 0o755, uid: 65534, gid: 65534 });
      dirs.add(d);
    }
    const data = typeof input.data === 'string' ? Buffer.from(input.data) : input.data;
    pack.entry({ name: rel, mode: (input.mode ?? 0o644) & 0o777, uid: 65534, gid: 65534 }, data);
  }
  pack.finalize();
  const chunks: Buffer[] = [];
  return new Promise<Buffer>((resolve, reject) => {
    pack.on('data', (c: unknown) => chunks.push(c as Buffer));
    pack.on('end', () => resolve(Buffer.concat(chunks)));
    pack.on('error', reject);
  });
}

/** A tar of one link, `name` → PASSED_OVER: what a file too large to collect is replaced by. */
async function passedOverArchive(name: string): Promise<Buffer> {
  const pack = tar.pack();
  pack.entry({ name, type: 'symlink', linkname: PASSED_OVER, mode: 0o777 });
  pack.finalize();
  const chunks: Buffer[] = [];
  for await (const c of pack as unknown as AsyncIterable<Buffer>) chunks.push(Buffer.from(c));
  return Buffer.concat(chunks);
}

export class DockerJail implements Jail {
  private readonly out: TailBuffer;
  private readonly err: TailBuffer;
  private streamDone: Promise<void> = Promise.resolve();
  /** The attach stream ended (with the container, or with its connection). */
  private streamEnded = true;
  private destroyed = false;
  /** The one watch of this container's exit (wait() and stop() share it). */
  private exitWatch: Promise<ExitState> | undefined;
  /** PID 1 exited (wait answered): the container is stopped and every process in it gone. */
  private exited = false;
  private sawOutput!: () => void;
  /** Who waits for the next chunk of either stream (drained). */
  readonly #chunkWaiters = new Set<() => void>();
  #arrived(): void {
    if (this.#chunkWaiters.size === 0) return;
    const ws = [...this.#chunkWaiters];
    this.#chunkWaiters.clear();
    for (const w of ws) w();
  }
  /** Resolves at the first byte on either stream (a pool slot's waiter says it is ready). */
  readonly firstOutput: Promise<void> = new Promise((resolve) => (this.sawOutput = resolve));
  /** The engine's stat of /workspace/out before the child ran (see collect). */
  private outBefore: string | null | undefined;
  verified?: JailVerified;

  constructor(
    private readonly docker: Docker,
    private readonly container: Docker.Container,
    readonly runId: string,
    private readonly volumeName: string,
    tailBytes = DEFAULT_TAIL_BYTES,
    private readonly disks?: WorkspaceDisks,
    private readonly stages?: ArtifactStages,
    /** Aborted when the driver closes: the exit watch stops (a restart reattaches the child). */
    private readonly closing: AbortSignal = new AbortController().signal,
    private readonly timing: ExitWatchTiming = EXIT_WATCH_TIMING,
  ) {
    this.out = new TailBuffer(tailBytes);
    this.err = new TailBuffer(tailBytes);
  }

  get id(): string {
    return this.container.id;
  }

  /** Attach to stdout/stderr; done before start so no byte is missed. */
  async attachStreams(): Promise<void> {
    const stream = (await this.container.attach({ stream: true, stdout: true, stderr: true })) as NodeJS.ReadableStream;
    const sink = (t: TailBuffer) => new Writable({ write: (c: Buffer, _e, cb) => (t.push(c), this.sawOutput(), this.#arrived(), cb()) });
    const outS = new PassThrough();
    const errS = new PassThrough();
    outS.pipe(sink(this.out));
    errS.pipe(sink(this.err));
    this.docker.modem.demuxStream(stream, outS, errS);
    this.streamEnded = false;
    this.streamDone = new Promise((resolve) => {
      const ended = () => ((this.streamEnded = true), resolve());
      stream.on('end', ended);
      stream.on('close', ended);
      stream.on('error', ended);
    });
  }

  /** The engine is back and the child still runs: a stream its connection took is attached again. */
  private reattachStreams(): void {
    if (!this.streamEnded || this.exited) return;
    this.attachStreams().catch(() => {}); // the tails are best effort; the exit is not
  }

  private exit(): Promise<ExitState> {
    this.exitWatch ??= watchExit(this.container, this.closing, this.timing, { onBack: () => this.reattachStreams() });
    return this.exitWatch;
  }

  /** The engine's name for this jail: the run id, or a pool slot's key. */
  get key(): string {
    return this.runId;
  }

  /**
   * Waits until both streams end with `marker` (written by a pooled jail's reaper after its child
   * ended: everything the child wrote came before it), then takes it off both tails. False when
   * it did not come within the bound: the tails are what arrived, as after a stuck stream.
   */
  async drained(marker: string, timeoutMs: number): Promise<boolean> {
    const m = Buffer.from(marker);
    const end = Date.now() + timeoutMs;
    // Checked again on each chunk that arrives (not on a timer: the marker is usually there, or a chunk away).
    while (!(this.out.endsWith(m) && this.err.endsWith(m))) {
      const left = end - Date.now();
      if (left <= 0) return false;
      await new Promise<void>((resolve) => {
        const timer = setTimeout(done, left);
        function done(): void {
          clearTimeout(timer);
          resolve();
        }
        this.#chunkWaiters.add(done);
      });
    }
    this.out.dropEnd(m.length);
    this.err.dropEnd(m.length);
    return true;
  }

  /** Both tails emptied: what a pool slot's waiter wrote is not its run's output. */
  clearTails(): void {
    this.out.clear();
    this.err.clear();
  }

  /** The engine's account of the container now (the pool re-verifies a slot at assignment). */
  async inspect(): Promise<Docker.ContainerInspectInfo> {
    return this.container.inspect().catch((e: unknown) => {
      throw engineError(e, 'jail_failed', 'inspecting the jail failed');
    });
  }

  /**
   * Notes /workspace/out as the engine states it (name, size, mode, mtime to the nanosecond)
   * before the child's first instruction: start() does, and the pool at assignment.
   */
  async noteOutBefore(): Promise<void> {
    this.outBefore = await statPath(this.container, `${WORKSPACE_DIR}/out`).catch(() => undefined);
  }

  /** The inputs and out/ onto a plain volume (a workspace disk is made holding them: workspace-disk.ts). */
  async putInputs(inputs: JailInput[]): Promise<void> {
    const archive = await inputsArchive(inputs);
    await this.container.putArchive(archive, { path: WORKSPACE_DIR }).catch((e: unknown) => {
      throw engineError(e, 'jail_failed', 'putting inputs into the workspace failed');
    });
  }

  /** The clean clone at /workspace/repo (repo-copy.ts), before start. */
  async putRepo(dir: string): Promise<void> {
    await putRepo(this.container, dir);
  }

  async start(): Promise<void> {
    await this.noteOutBefore();
    await this.attachStreams().catch((e: unknown) => {
      throw engineError(e, 'jail_failed', 'attaching to the jail failed');
    });
    await this.container.start().catch((e: unknown) => {
      throw engineError(e, 'jail_failed', 'the jail did not start');
    });
  }

  async wait(): Promise<JailExit> {
    const res = await this.exit();
    this.exited = true;
    // The attach stream ends with the container; the bound keeps a stuck stream from holding wait().
    await Promise.race([this.streamDone, new Promise((r) => setTimeout(r, STREAM_DRAIN_MS).unref())]);
    // Out of memory matters only to a run that did not exit 0 (a clean exit is a completed run).
    if (res.exitCode === 0 || res.oomKilled !== undefined) return { exitCode: res.exitCode, oomKilled: res.oomKilled === true };
    const info = await this.container.inspect().catch(() => undefined);
    return { exitCode: res.exitCode, oomKilled: Boolean(info?.State?.OOMKilled) };
  }

  async kill(): Promise<void> {
    if (this.exited) return; // nothing is left to kill: PID 1's exit took its namespace with it
    await this.container.kill({ signal: 'SIGKILL' }).catch(ignoreStatus(404, 409));
  }

  /** `ended`: a pooled jail's confirmed reaper report (pooled-jail.ts) also ends the grace: the child is gone. */
  async stop(graceMs: number, ended?: Promise<unknown>): Promise<void> {
    // Not the engine's `stop`: the hardened profile's StopSignal is SIGKILL (a child must not
    // be able to linger). SIGTERM is sent by hand; past the grace, SIGKILL.
    await this.container.kill({ signal: 'SIGTERM' }).catch(ignoreStatus(404, 409));
    let timer: NodeJS.Timeout | undefined;
    const exited = await Promise.race([
      this.exit().then(() => true, () => true),
      ...(ended ? [ended.then(() => true)] : []),
      new Promise<boolean>((r) => (timer = setTimeout(() => r(false), graceMs))),
    ]);
    clearTimeout(timer);
    if (!exited) await this.kill();
  }

  tails(): StreamTails {
    return { stdoutTail: this.out.text(), stderrTail: this.err.text(), stdoutBytes: this.out.total, stderrBytes: this.err.total };
  }

  async collect(destDir: string, caps: CollectCaps, from = 'out', opts: CollectOptions = {}): Promise<CollectReport> {
    const rel = workspaceRelative(from);
    if (rel === undefined) throw new BrigError('invalid_input', 'collect reads a relative path under /workspace', { data: { from } });
    // An archive costs the engine a re-exec of itself (~35 ms here); a stat, ~2 ms. out/ starts
    // empty, and a directory's mtime moves with every entry made, renamed or removed in it, so
    // an unchanged stat (to the nanosecond: ext4 with 256-byte inodes) is an empty out/. Only
    // the child could set it back exactly (utimes on its own directory): it would only hide
    // its own output, as not writing it would.
    if (rel === 'out' && typeof this.outBefore === 'string') {
      const now = await statPath(this.container, `${WORKSPACE_DIR}/out`).catch(() => undefined);
      if (now === this.outBefore) return { ...(await emptyCollect(destDir)), unchanged: true };
    }
    let first: NodeJS.ReadableStream | undefined;
    try {
      first = (await this.container.getArchive({ path: `${WORKSPACE_DIR}/${rel}` })) as NodeJS.ReadableStream;
    } catch (e) {
      if ((e as { statusCode?: number }).statusCode === 404) return emptyCollect(destDir);
      throw engineError(e, 'jail_failed', 'reading the workspace failed');
    }
    const source: ArchiveSource = {
      archive: async () => {
        const a = first ?? ((await this.container.getArchive({ path: `${WORKSPACE_DIR}/${rel}` }).catch((e: unknown) => {
          throw engineError(e, 'jail_failed', 'reading the workspace failed');
        })) as NodeJS.ReadableStream);
        first = undefined;
        return a;
      },
      // The archive names entries from the archived directory's own name (`out/…`), so they
      // sit under that directory's parent. The jail is stopped and about to be destroyed: its
      // file goes for a link, through the engine's own (container-scoped) extraction.
      passOver: async (name) => {
        const at = path.posix.join(WORKSPACE_DIR, path.posix.dirname(rel), path.posix.dirname(name));
        await this.container.putArchive(await passedOverArchive(path.posix.basename(name)), { path: at }).catch((e: unknown) => {
          throw engineError(e, 'jail_failed', 'passing over a file too large to collect failed');
        });
      },
    };
    // A connection cut mid-archive is the engine gone, not a bad archive: the caller may retry.
    return collectArchive(source, rel.split('/').pop()!, destDir, caps, opts).catch((e: unknown) => {
      throw isUnreachable(e) ? engineError(e, 'engine_unavailable', 'reading the workspace failed') : e;
    });
  }

  async destroy(): Promise<void> {
    if (this.destroyed) return;
    await this.container.remove({ force: true, v: true }).catch(ignoreStatus(404, 409));
    // With the container gone nothing mounts the disk: its volume record and its loop device go together.
    // The staged artifacts go once no container mounts them.
    await Promise.all([removeVolume(this.docker, this.volumeName), this.disks?.release(this.runId), this.stages?.release(this.runId)]);
    this.destroyed = true;
  }
}

/** Nothing to collect: the destination made, empty. */
export async function emptyCollect(destDir: string): Promise<CollectReport> {
  await fs.promises.mkdir(path.dirname(destDir), { recursive: true });
  await fs.promises.mkdir(destDir, { mode: 0o755 }).catch(() => {
    throw new BrigError('invalid_input', 'the collect destination already exists', { data: { destDir } });
  });
  return { dir: destDir, files: [], totalBytes: 0, skipped: [], skippedCount: 0 };
}

/**
 * The engine's stat of a path in a container (HEAD /containers/ID/archive: one header, no
 * archive made), as the engine encodes it; null when the path does not exist.
 */
async function statPath(container: Docker.Container, p: string): Promise<string | null> {
  try {
    const res = (await container.infoArchive({ path: p })) as { headers?: Record<string, unknown>; resume?: () => void };
    res.resume?.();
    const stat = res.headers?.['x-docker-container-path-stat'];
    if (typeof stat !== 'string') throw new Error('the engine\'s stat carried no path stat');
    return stat;
  } catch (e) {
    if (statusOf(e) === 404) return null;
    throw e;
  }
}

/** Removes a volume; a 409 right after its container's removal is the engine still letting go. */
export async function removeVolume(docker: Docker, name: string): Promise<void> {
  for (let attempt = 0; ; attempt++) {
    try {
      await docker.getVolume(name).remove();
      return;
    } catch (e) {
      const s = statusOf(e);
      if (s === 404) return;
      if (s === 409 && attempt < 40) {
        await new Promise((r) => setTimeout(r, 50));
        continue;
      }
      throw engineError(e, 'jail_failed', `removing volume ${name} failed`);
    }
  }
}

import { setTimeout as sleep } from 'node:timers/promises';
import type { Brig, RunRecord, SpawnRequestInput, SupervisorEvent } from '../index.js';
import { ok, type BrigError, type Result } from '../util/errors.js';
import type { CliIO } from './command.js';
import { liveLine } from './run-view.js';

/**
 * A synchronous `brig spawn` on a terminal: the run id as soon as the run exists, then one
 * line redrawn while it runs (status, steps, elapsed, its progress line); the caller prints
 * the end. Aborting `signal` (Ctrl-C) kills the run by the operator; it is still collected
 * and returned ended, as without the view.
 */
const TICK_MS = 500;

class LiveLine {
  #drawn = false;
  constructor(private readonly io: CliIO) {}

  announce(r: RunRecord): void {
    this.io.stdout.write(`run ${r.id} ${r.status} (Ctrl-C kills it)\n`);
  }

  draw(r: RunRecord): void {
    const cols = this.io.columns && this.io.columns > 0 ? this.io.columns : 100;
    const max = Math.max(20, cols - 1);
    const line = liveLine(r);
    this.io.stdout.write(`\r\x1b[K${line.length > max ? `${line.slice(0, max - 1)}…` : line}`);
    this.#drawn = true;
  }

  clear(): void {
    if (this.#drawn) this.io.stdout.write('\r\x1b[K');
    this.#drawn = false;
  }
}

export async function spawnLive(io: CliIO, brig: Brig, req: SpawnRequestInput, signal: AbortSignal): Promise<Result<RunRecord, BrigError>> {
  const view = new LiveLine(io);
  try {
    return brig.mode === 'daemon' ? await viaDaemon(brig, req, signal, view) : await inProcess(brig, req, signal, view);
  } finally {
    view.clear();
  }
}

/** Over the daemon: start it async (the run id comes back at once), then wait in short slices. */
async function viaDaemon(sup: Brig, req: SpawnRequestInput, signal: AbortSignal, view: LiveLine): Promise<Result<RunRecord, BrigError>> {
  const started = await sup.spawn({ ...req, async: true });
  if (!started.ok) return started;
  let r = started.value;
  view.announce(r);
  const id = r.id;
  const kill = () => void sup.kill(id, { confirm: true, by: 'operator' }).catch(() => {});
  if (signal.aborted) kill();
  else signal.addEventListener('abort', kill, { once: true });
  try {
    while (r.status !== 'ended') {
      view.draw(r);
      const w = await sup.wait(id, { timeoutMs: TICK_MS });
      if (!w.ok) return w;
      r = w.value;
    }
    return ok(r);
  } finally {
    signal.removeEventListener('abort', kill);
  }
}

/**
 * In-process: the supervisor lives in this command, so the spawn stays synchronous (it kills
 * on abort itself); the run id is its `spawned` event, subscribed to before the spawn so it
 * cannot be missed (this supervisor holds only this command's runs), and the line polls `get`.
 */
async function inProcess(sup: Brig, req: SpawnRequestInput, signal: AbortSignal, view: LiveLine): Promise<Result<RunRecord, BrigError>> {
  const quiet = new AbortController();
  const events = sup.events({ signal: quiet.signal });
  const done = sup.spawn(req, { signal });
  void done.finally(() => quiet.abort()).catch(() => {});
  try {
    const id = await rootSpawned(events);
    if (id === undefined) return await done;
    let announced = false;
    while (!quiet.signal.aborted) {
      const r = await sup.get(id);
      if (r && !announced) view.announce(r);
      announced ||= r !== undefined;
      if (r && r.status !== 'ended') view.draw(r);
      await sleep(TICK_MS, undefined, { signal: quiet.signal }).catch(() => {});
    }
    return await done;
  } finally {
    quiet.abort();
  }
}

/** The first `spawned` event of a root run, or undefined when the stream ends first (a refusal). */
async function rootSpawned(events: AsyncIterableIterator<SupervisorEvent>): Promise<string | undefined> {
  for await (const ev of events) if (ev.type === 'spawned' && ev.depth === 1) return ev.runId;
  return undefined;
}

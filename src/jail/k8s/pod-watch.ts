/**
 * One watch over brig's pods (issue 33 item 7): a list by owner label, then a watch from its
 * resourceVersion, kept as a cache of the pods by name; a `410 Gone` (the version compacted
 * away, as an ERROR event or an HTTP 410) is answered by a fresh list, a stream the server ended
 * by watching again from the last version seen (bookmarks keep it fresh), a failure by a
 * fresh list after a pause. A run's jail waits for its pod's next change instead of reading it
 * every 100–200 ms: the end is seen when the kubelet reports it, and N running pods cost one
 * open stream, not 5N reads a second.
 *
 * Guarantees: get() is undefined (not known: read it yourself) unless the cache is synced with
 * a list and its watch since; a pod absent from a synced cache is null (gone); a waiter is woken
 * by any event of its pod, by a relist or a loss of sync, and after its bound in any case — a
 * watch that stalls silently delays nothing by more than that bound.
 * Trusts: the API server's list and events (the same as a read).
 */
import { toBrigError } from '../../util/errors.js';
import type { KubeApi } from './kube-api.js';

type Obj = Record<string, unknown>;
interface Waiter {
  name: string;
  resolve(): void;
}
const obj = (v: unknown): Obj => (v && typeof v === 'object' && !Array.isArray(v) ? (v as Obj) : {});

export interface PodWatchOptions {
  /** The pause before a fresh list after a failure (default 1 s). */
  retryMs?: number;
  /** The server's bound on one watch stream (default 300 s); it is watched again after. */
  timeoutSeconds?: number;
}

export class PodWatch {
  readonly #pods = new Map<string, Obj>();
  /** Per pod, how many events it had: a waiter compares its count to see a change it missed. */
  readonly #seen = new Map<string, number>();
  readonly #waiters = new Set<Waiter>();
  #synced = false;
  #closed = false;
  #abort: AbortController | undefined;
  #loop: Promise<void> | undefined;
  /** Lists made (the first, and each after a 410 or a failure): the tests read it. */
  relists = 0;
  /** Events applied (the tests read it). */
  events = 0;

  constructor(
    private readonly api: KubeApi,
    private readonly selector: string,
    private readonly o: PodWatchOptions = {},
  ) {}

  /** Starts listing and watching (once). */
  start(): this {
    this.#loop ??= this.#run();
    return this;
  }

  get synced(): boolean {
    return this.#synced;
  }

  /** The pod as last seen; null: gone (a synced cache does not hold it); undefined: not known. */
  get(name: string): Obj | null | undefined {
    if (!this.#synced) return undefined;
    return this.#pods.get(name) ?? null;
  }

  /** How many changes of this pod were seen (pass it to changed()). */
  version(name: string): number {
    return this.#seen.get(name) ?? 0;
  }

  /** Resolves at this pod's next change after `since`, a relist or a loss of sync, or after ms. */
  changed(name: string, since: number, ms: number): Promise<void> {
    if (this.version(name) !== since || this.#closed) return Promise.resolve();
    return new Promise((resolve) => {
      const w: Waiter = { name, resolve: () => (clearTimeout(timer), this.#waiters.delete(w), resolve()) };
      const timer = setTimeout(w.resolve, ms);
      this.#waiters.add(w);
    });
  }

  async close(): Promise<void> {
    this.#closed = true;
    this.#abort?.abort();
    this.#wake();
    await this.#loop?.catch(() => undefined);
  }

  /** Wakes the waiters of one pod, or (no name) every waiter. */
  #wake(name?: string): void {
    for (const w of [...this.#waiters]) if (name === undefined || w.name === name) w.resolve();
  }

  #bump(name: string): void {
    this.#seen.set(name, this.version(name) + 1);
  }

  async #run(): Promise<void> {
    while (!this.#closed) {
      try {
        const list = await this.api.listPodsVersioned(this.selector);
        this.relists++;
        const names = new Set<string>();
        for (const p of list.items) {
          const name = String(obj(p.metadata).name ?? '');
          names.add(name);
          this.#pods.set(name, p);
          this.#bump(name);
        }
        for (const name of [...this.#pods.keys()]) if (!names.has(name)) (this.#pods.delete(name), this.#bump(name));
        this.#synced = true;
        this.#wake();
        let rv = list.resourceVersion;
        // Watch from the list's version until the server says it is gone (410): then list again.
        for (;;) {
          if (this.#closed) return;
          this.#abort = new AbortController();
          let gone = false;
          try {
            for await (const ev of this.api.watchPods(this.selector, rv, { signal: this.#abort.signal, timeoutSeconds: this.o.timeoutSeconds ?? 300 })) {
              const o = obj(ev.object);
              if (ev.type === 'ERROR') {
                if (Number(o.code) === 410) {
                  gone = true;
                  break;
                }
                throw new Error(`watch error: ${String(o.message ?? JSON.stringify(o)).slice(0, 200)}`);
              }
              const meta = obj(o.metadata);
              if (typeof meta.resourceVersion === 'string') rv = meta.resourceVersion;
              if (ev.type === 'BOOKMARK') continue;
              const name = String(meta.name ?? '');
              if (ev.type === 'DELETED') this.#pods.delete(name);
              else this.#pods.set(name, o);
              this.events++;
              this.#bump(name);
              this.#wake(name);
            }
          } catch (e) {
            if ((toBrigError(e).data as { status?: number } | undefined)?.status === 410) gone = true;
            else throw e;
          }
          if (gone) break;
        }
      } catch {
        // A failed list or stream: waiters read the pod themselves until a fresh list syncs again.
        if (this.#closed) return;
        this.#synced = false;
        this.#wake();
        await new Promise((r) => setTimeout(r, this.o.retryMs ?? 1000));
      }
    }
  }
}

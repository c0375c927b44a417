/**
 * The API's one subscription to the supervisor's events, fanned out to every SSE client, with
 * a bounded ring of the latest so a client that reconnects with `Last-Event-ID` gets what it
 * missed.
 *
 * Guarantees: every event gets an id `<boot>-<seq>` (boot: random per daemon start, seq from
 * 1); a client resuming from an id of this boot still in the ring gets exactly the events after
 * it (filtered like its live ones), then the live ones, in order, none twice; from an id of
 * another boot or older than the ring it is told so (`event: gap`) and goes on live. Replay and
 * subscription happen in one tick, so nothing falls between them. Events are content-free
 * (INV-7), so the ring holds ids, enums and counts only.
 * Fails: a subscriber's own failure never reaches the others.
 */
import crypto from 'node:crypto';
import type { EventsOptions, Supervisor, SupervisorEvent } from '../protocol/index.js';

export interface Numbered {
  id: string;
  seq: number;
  ev: SupervisorEvent;
}

export type Resume = { kind: 'fresh' } | { kind: 'replay'; events: Numbered[] } | { kind: 'gap'; reason: 'restarted' | 'too_old' | 'malformed' };

export const RING_SIZE = 1000;

export class EventHub {
  readonly boot = crypto.randomBytes(4).toString('hex');
  #seq = 0;
  readonly #ring: Numbered[] = [];
  readonly #subs = new Set<(n: Numbered) => void>();
  readonly #ac = new AbortController();
  /** Why the supervisor serves no events (the read-only view's refusal), when it does not. */
  unavailable: unknown;

  constructor(
    sup: Pick<Supervisor, 'events'>,
    private readonly size = RING_SIZE,
  ) {
    void this.#pump(sup);
  }

  async #pump(sup: Pick<Supervisor, 'events'>): Promise<void> {
    let it: AsyncIterableIterator<SupervisorEvent>;
    try {
      it = sup.events({ signal: this.#ac.signal });
    } catch (e) {
      this.unavailable = e; // a supervisor without events: a client is told its reason
      return;
    }
    try {
      for await (const ev of it) this.publish(ev);
    } catch {
      // the supervisor closed
    }
  }

  /** Numbers an event, keeps it in the ring, hands it to every subscriber. */
  publish(ev: SupervisorEvent): void {
    const seq = ++this.#seq;
    const n = { id: `${this.boot}-${seq}`, seq, ev };
    this.#ring.push(n);
    if (this.#ring.length > this.size) this.#ring.shift();
    for (const s of this.#subs) {
      try {
        s(n);
      } catch {
        // one subscriber's failure is its own
      }
    }
  }

  /** What a client resuming after `lastId` missed (matching its filter), or why it cannot be told. */
  resume(lastId: string | undefined, filter: Pick<EventsOptions, 'runId' | 'rootRunId'> = {}): Resume {
    if (lastId === undefined || lastId === '') return { kind: 'fresh' };
    const m = /^([0-9a-f]{8})-(\d{1,15})$/.exec(lastId);
    if (!m) return { kind: 'gap', reason: 'malformed' };
    if (m[1] !== this.boot) return { kind: 'gap', reason: 'restarted' };
    const after = Number(m[2]);
    const oldest = this.#ring[0]?.seq ?? this.#seq + 1;
    if (after < oldest - 1 && after < this.#seq) return { kind: 'gap', reason: 'too_old' };
    return { kind: 'replay', events: this.#ring.filter((n) => n.seq > after && matches(n.ev, filter)) };
  }

  subscribe(cb: (n: Numbered) => void): () => void {
    this.#subs.add(cb);
    return () => this.#subs.delete(cb);
  }

  close(): void {
    this.#ac.abort();
    this.#subs.clear();
  }
}

export function matches(ev: SupervisorEvent, f: Pick<EventsOptions, 'runId' | 'rootRunId'>): boolean {
  return (!f.runId || ev.runId === f.runId) && (!f.rootRunId || ev.rootRunId === f.rootRunId);
}

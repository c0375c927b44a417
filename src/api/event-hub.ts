/**
 * The API's one subscription to the supervisor's run events and to its graphs' events, fanned
 * out to every SSE client, with a bounded ring of the latest so a client that reconnects with
 * `Last-Event-ID` gets what it missed.
 *
 * Guarantees: every event, run or graph, gets an id `<boot>-<seq>` from one counter (boot:
 * random per daemon start, seq from 1); a client resuming from an id of this boot still in the
 * ring gets exactly the events after it (filtered like its live ones), then the live ones, in
 * order, none twice; from an id of another boot or older than the ring it is told so (`event:
 * gap`) and goes on live. A client following one graph (`graph`) without an id first gets that
 * graph's events the ring still holds: its id is known only once the graph started. Replay and
 * subscription happen in one tick, so nothing falls between them. Events are content-free
 * (INV-7), so the ring holds ids, enums and counts only.
 * Fails: a subscriber's own failure never reaches the others.
 */
import crypto from 'node:crypto';
import { isGraphEvent, type GraphSurface, type StreamEvent, type Supervisor } from '../protocol/index.js';

export interface Numbered {
  id: string;
  seq: number;
  ev: StreamEvent;
}

/**
 * What a client asks of the stream; every filter given must hold. `graph` passes only that
 * graph's events (never a run event). `runId` passes that run's events and a graph event
 * naming that run as its own `runId` (a node attempt's run on `graph.node`, the agent run that
 * called graph_run on `graph.started`). `rootRunId` passes that tree's run events only: a graph
 * event does not carry its run's tree.
 */
export interface StreamFilter {
  runId?: string;
  rootRunId?: string;
  graph?: string;
}

/** What the hub reads: the run events, and the graphs' events where the graphs run in this process. */
export interface EventSources extends Pick<Supervisor, 'events'> {
  readonly graphs?: Pick<GraphSurface, 'events'>;
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
    src: EventSources,
    private readonly size = RING_SIZE,
  ) {
    const signal = this.#ac.signal;
    // A supervisor without events (the read-only view) refuses: a client is told its reason.
    void this.#pump(() => src.events({ signal }), (e) => (this.unavailable = e));
    const graphs = src.graphs;
    if (graphs?.events) void this.#pump(() => graphs.events!({ signal }), () => {});
  }

  async #pump(open: () => AsyncIterable<StreamEvent>, refused: (e: unknown) => void): Promise<void> {
    let it: AsyncIterable<StreamEvent>;
    try {
      it = open();
    } catch (e) {
      refused(e);
      return;
    }
    try {
      for await (const ev of it) this.publish(ev);
    } catch {
      // the source closed
    }
  }

  /** Numbers an event, keeps it in the ring, hands it to every subscriber. */
  publish(ev: StreamEvent): void {
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
  resume(lastId: string | undefined, filter: StreamFilter = {}): Resume {
    if (lastId === undefined || lastId === '') return filter.graph ? { kind: 'replay', events: this.#ring.filter((n) => matches(n.ev, filter)) } : { kind: 'fresh' };
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

/** Whether an event is one a client's filter asks for (StreamFilter says how each filter reads). */
export function matches(ev: StreamEvent, f: StreamFilter): boolean {
  if (isGraphEvent(ev)) return (!f.graph || ev.graphId === f.graph) && (!f.runId || ('runId' in ev && ev.runId === f.runId)) && !f.rootRunId;
  return !f.graph && (!f.runId || ev.runId === f.runId) && (!f.rootRunId || ev.rootRunId === f.rootRunId);
}

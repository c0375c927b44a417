import type { EventsOptions, SupervisorEvent } from './types.js';

/**
 * A subscribable event stream. Each subscriber gets its own bounded buffer; a slow one
 * loses its oldest events (counted) rather than growing the supervisor's memory. The
 * supervisor's run events are one; the graphs' live events (daemon/graphs.ts) another.
 */
const MAX_BUFFER = 10_000;

/** What every subscription takes, besides its filter. */
export interface Subscription {
  signal?: AbortSignal;
  /** Called once the subscription is in place: every event published after it is delivered. */
  onSubscribed?: () => void;
}

interface Sub<E, O> {
  buf: E[];
  wake: (() => void) | null;
  closed: boolean;
  dropped: number;
  opts: O;
}

/** A run event passes a subscription to one run or one tree when it is of that run or tree. */
export function passesRunFilter(ev: SupervisorEvent, o: EventsOptions): boolean {
  return (!o.runId || o.runId === ev.runId) && (!o.rootRunId || o.rootRunId === ev.rootRunId);
}

export class EventBus<E = SupervisorEvent, O extends Subscription = EventsOptions> {
  readonly #subs = new Set<Sub<E, O>>();

  /** `passes`: whether an event is one a subscription asked for (its filter). */
  constructor(private readonly passes: (ev: E, o: O) => boolean) {}

  publish(ev: E): void {
    for (const s of this.#subs) {
      if (!this.passes(ev, s.opts)) continue;
      s.buf.push(ev);
      if (s.buf.length > MAX_BUFFER) {
        s.buf.shift();
        s.dropped++;
      }
      s.wake?.();
    }
  }

  get subscribers(): number {
    return this.#subs.size;
  }

  close(): void {
    for (const s of this.#subs) {
      s.closed = true;
      s.wake?.();
    }
    this.#subs.clear();
  }

  subscribe(opts: O = {} as O): AsyncIterableIterator<E> {
    const sub: Sub<E, O> = { buf: [], wake: null, closed: false, dropped: 0, opts };
    this.#subs.add(sub);
    opts.onSubscribed?.();
    const stop = (): void => {
      sub.closed = true;
      this.#subs.delete(sub);
      sub.wake?.();
    };
    opts.signal?.addEventListener('abort', stop, { once: true });
    if (opts.signal?.aborted) stop();
    const it: AsyncIterableIterator<E> = {
      [Symbol.asyncIterator]: () => it,
      next: async () => {
        for (;;) {
          if (sub.buf.length > 0) return { value: sub.buf.shift()!, done: false };
          if (sub.closed) return { value: undefined, done: true };
          await new Promise<void>((r) => (sub.wake = r));
          sub.wake = null;
        }
      },
      return: async () => {
        stop();
        return { value: undefined, done: true };
      },
    };
    return it;
  }
}

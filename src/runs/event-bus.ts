import type { EventsOptions, SupervisorEvent } from './types.js';

/**
 * The subscribable event stream. Each subscriber gets its own bounded buffer; a slow one
 * loses its oldest events (counted) rather than growing the supervisor's memory.
 */
const MAX_BUFFER = 10_000;

interface Sub {
  buf: SupervisorEvent[];
  wake: (() => void) | null;
  closed: boolean;
  dropped: number;
  opts: EventsOptions;
}

export class EventBus {
  readonly #subs = new Set<Sub>();

  publish(ev: SupervisorEvent): void {
    for (const s of this.#subs) {
      if (s.opts.runId && s.opts.runId !== ev.runId) continue;
      if (s.opts.rootRunId && s.opts.rootRunId !== ev.rootRunId) continue;
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

  subscribe(opts: EventsOptions = {}): AsyncIterableIterator<SupervisorEvent> {
    const sub: Sub = { buf: [], wake: null, closed: false, dropped: 0, opts };
    this.#subs.add(sub);
    opts.onSubscribed?.();
    const stop = (): void => {
      sub.closed = true;
      this.#subs.delete(sub);
      sub.wake?.();
    };
    opts.signal?.addEventListener('abort', stop, { once: true });
    if (opts.signal?.aborted) stop();
    const it: AsyncIterableIterator<SupervisorEvent> = {
      [Symbol.asyncIterator]: () => it,
      next: async () => {
        for (;;) {
          const ev = sub.buf.shift();
          if (ev) return { value: ev, done: false };
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

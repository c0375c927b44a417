/**
 * A Brig from a Supervisor and a drill-in surface: the one mapping every face uses (the
 * daemon over its socket, a supervisor in this process, the records on disk). Light: it
 * imports only types, so a thin face loads nothing with it.
 */
import type { RefSurface } from './types.js';
import type { Brig, Supervisor } from './types.js';

export function brigOf(s: Supervisor, mode: Brig['mode'], refs: RefSurface, closeRefs: () => Promise<void> = async () => {}): Brig {
  return {
    mode,
    refs,
    spawn: (req, ctx) => s.spawn(req, ctx),
    wait: (id, opts) => s.wait(id, opts),
    list: (f) => s.list(f),
    get: (id) => s.get(id),
    kill: (id, opts) => s.kill(id, opts),
    steer: (id, m, opts) => s.steer(id, m, opts),
    send: (id, t, opts) => s.send(id, t, opts),
    history: (id, opts) => s.history(id, opts),
    resume: (id) => s.resume(id),
    events: (opts) => s.events(opts),
    close: async () => {
      await s.close();
      await closeRefs();
    },
  };
}

/**
 * A Brig from a Supervisor, a drill-in surface and an operator surface: the one mapping every
 * face uses (the daemon over its socket, a supervisor in this process, the records on disk).
 * Light: it imports types and the leaf's words only, so a thin face loads nothing with it.
 */
import type { Brig, OperatorSurface, RefSurface, Supervisor } from '../protocol/index.js';
import { converse } from './converse.js';

/** `close` ends what the Brig holds (default: the supervisor's close). */
export function brigOf(s: Supervisor, mode: Brig['mode'], refs: RefSurface, operator: OperatorSurface, close: () => Promise<void> = () => s.close()): Brig {
  return {
    mode,
    refs,
    operator,
    spawn: (req, ctx) => s.spawn(req, ctx),
    check: (req) => s.check(req),
    wait: (id, opts) => s.wait(id, opts),
    list: (f) => s.list(f),
    page: (f) => s.page(f),
    get: (id) => s.get(id),
    kill: (id, opts) => s.kill(id, opts),
    steer: (id, m, opts) => s.steer(id, m, opts),
    send: (id, t, opts) => converse(s, id, t, opts ?? {}),
    history: (id, opts) => s.history(id, opts),
    resume: (id, opts) => s.resume(id, opts),
    replay: (id) => s.replay(id),
    events: (opts) => s.events(opts),
    close,
  };
}

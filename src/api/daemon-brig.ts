/**
 * A Brig on the daemon: runs and refs both over its unix socket. Nothing heavier than
 * node:http is loaded, so a CLI command talking to a daemon starts like a native tool.
 */
import type { Brig } from '../runs/index.js';
import { ApiClient } from './client.js';
import { ApiRefs } from './refs-client.js';

export function daemonBrig(at: string | ApiClient): Brig {
  const api = typeof at === 'string' ? new ApiClient(at) : at;
  return {
    mode: 'daemon',
    refs: new ApiRefs(api),
    spawn: (req, ctx) => api.spawn(req, ctx),
    wait: (id, opts) => api.wait(id, opts),
    list: (f) => api.list(f),
    get: (id) => api.get(id),
    kill: (id, opts) => api.kill(id, opts),
    steer: (id, m) => api.steer(id, m),
    send: (id, t, opts) => api.send(id, t, opts),
    history: (id, opts) => api.history(id, opts),
    resume: (id) => api.resume(id),
    events: (opts) => api.events(opts),
    close: () => api.close(),
  };
}

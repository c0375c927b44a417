/**
 * A Brig on the daemon: runs and refs both over its unix socket. Nothing heavier than
 * node:http is loaded, so a CLI command talking to a daemon starts like a native tool.
 */
import { brigOf } from '../runs/brig.js';
import type { Brig } from '../runs/index.js';
import { ApiClient } from './client.js';
import { ApiRefs } from './refs-client.js';

export function daemonBrig(at: string | ApiClient): Brig {
  const api = typeof at === 'string' ? new ApiClient(at) : at;
  return brigOf(api, 'daemon', new ApiRefs(api));
}

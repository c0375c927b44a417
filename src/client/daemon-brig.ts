/**
 * A Brig on the daemon: runs, refs and the operator's view all over its unix socket. Nothing
 * heavier than node:http is loaded, so a CLI command talking to a daemon starts like a
 * native tool.
 */
import type { Brig } from '../protocol/index.js';
import { ApiClient } from './api-client.js';
import { brigOf } from './brig-of.js';
import { apiOperator } from './operator-client.js';
import { ApiRefs } from './refs-client.js';
import { ApiGraphs } from './graphs-client.js';

export function daemonBrig(at: string | ApiClient): Brig {
  const api = typeof at === 'string' ? new ApiClient(at) : at;
  return { ...brigOf(api, 'daemon', new ApiRefs(api), apiOperator(api)), graphs: new ApiGraphs(api) };
}

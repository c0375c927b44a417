/**
 * client/: brig as seen from outside the daemon — the API client over its unix socket (short
 * calls on bare sockets, the event stream on node:http), the drill-in surface over it, and a
 * Brig on the daemon. Imports protocol/ and Node built-ins only: a face talking to a daemon
 * loads nothing of the core.
 */
export { ApiClient, type RouteCall } from './api-client.js';
export { ApiRefs } from './refs-client.js';
export { daemonBrig } from './daemon-brig.js';
export { brigOf } from './brig-of.js';
export { apiOperator } from './operator-client.js';
export { ReadOnlyRuns, readOnlyBrig } from './read-only.js';
export { exchange, type WireReply } from './wire.js';

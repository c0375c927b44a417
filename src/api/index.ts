/** api/: the supervisor over HTTP on a unix socket, and its node:http client (runs and refs). */
export { API_VERSION, apiHandler, listenApi } from './server.js';
export { ApiClient } from './client.js';
export { ApiRefs } from './refs-client.js';
export { daemonBrig } from './daemon-brig.js';

/** api/: the supervisor over HTTP on a unix socket, and its undici client. */
export { API_VERSION, apiHandler, listenApi } from './server.js';
export { ApiClient } from './client.js';

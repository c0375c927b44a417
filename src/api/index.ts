/** api/: the supervisor over HTTP on a unix socket — one route table, the server, the OpenAPI document. */
export { API_VERSION, apiHandler, listenApi, matchRoute, type ApiOptions } from './server.js';
export { ROUTE_TABLE } from './routes.js';
export { openapiDocument } from './contract.js';

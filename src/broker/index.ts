/** The broker: protocol v1, the method → capability table, the per-run socket server. */
export {
  PROTOCOL_VERSION,
  MAX_LINE_BYTES,
  MAX_NESTING,
  MAX_REPLY_BYTES,
  METHODS,
  METHOD_NAMES,
  METHOD_ALIASES,
  FORBIDDEN_FIELDS,
  RequestSchema,
  LlmMessageSchema,
  requiredCapability,
  resolveMethod,
  stripParams,
  type Method,
  type ParamsOf,
  type BrokerRequest,
  type BrokerReply,
} from './protocol.js';
export type { BrokerCall, Handler, Handlers, LeaseVerifier } from './dispatch.js';
export { alreadyLedgered } from './dispatch.js';
export { ensurePrivateDirs, grantRunSocket, type SocketOwner } from './socket-access.js';
export {
  BrokerServer,
  DEFAULT_BROKER_LIMITS,
  type BrokerLimits,
  type BrokerServerOptions,
  type OpenRunArgs,
  type BrokerRunHandle,
} from './server.js';

/**
 * brig's library entry: curated named exports only.
 */
export { BrigError, isBrigError } from './util/errors.js';
export type { ErrorCode, ErrorKind } from './util/errors.js';
export { loadConfig } from './config/index.js';
export type { BrigConfig } from './config/index.js';

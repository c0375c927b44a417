/**
 * brig's library entry: curated named exports only.
 */
export { BrigError, isBrigError } from './util/errors.js';
export type { ErrorCode, ErrorKind } from './util/errors.js';
export { loadConfig } from './config/index.js';
export type { BrigConfig } from './config/index.js';
export { FsResultStore, condense, renderEnvelope, savingsFor, rollUpSavings } from './results/index.js';
export type { ResultRef, ResultKind, Condensed, CondenseOptions, EnvelopeInput, Savings } from './results/index.js';
export { Slicer, DuckdbHelperPool, lockedQuery } from './slice/index.js';
export type { SliceOutput, ReadRange, GrepOptions, LockedQueryOptions, LockedQueryResult } from './slice/index.js';
export { OpenAICompatibleProvider } from './models/index.js';
export type { ModelProvider } from './models/index.js';

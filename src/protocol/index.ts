/**
 * protocol/: the vocabulary every face, the core and the child speak — plain types and const
 * arrays, importing nothing. The core's zod schemas are declared against these types
 * (`satisfies z.ZodType<T>`), never the other way round, and nothing is copied across the
 * jail boundary: child/ imports its words from here.
 */
export * from './run-hints.js';
export * from './error-codes.js';
export * from './errors.js';
export * from './leases.js';
export * from './egress.js';
export * from './runs.js';
export * from './spawn-fields.js';
export * from './events.js';
export * from './supervisor.js';
export * from './refs.js';
export * from './broker.js';
export * from './operator.js';
export * from './api.js';
export * from './graphs.js';

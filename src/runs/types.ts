/**
 * The supervisor's vocabulary: what every face (library, HTTP API, CLI, broker) speaks. One
 * file per concern — the run record, the spawn request, events, the Supervisor role, the
 * settings — re-exported here as one vocabulary.
 */
export * from './run-record.js';
export * from './spawn-request.js';
export * from './events.js';
export * from './supervisor-api.js';
export * from './settings.js';

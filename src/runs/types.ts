/**
 * The run vocabulary runs/ works in: the words of protocol/ (records, requests, events, the
 * Supervisor role) with the schemas runs/ declares against them, and the settings.
 */
export * from '../protocol/index.js';
export * from './run-record.js';
export * from './spawn-request.js';
export * from './settings.js';

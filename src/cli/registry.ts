import type { Command } from './command.js';

/**
 * Every command, loaded lazily so `brig --help` does not load dockerode or DuckDB.
 * Add a line per command; the key is what the user types (`lease list`).
 */
export const COMMANDS: Record<string, () => Promise<Command>> = {
};

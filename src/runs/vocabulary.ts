/**
 * The run vocabulary as plain constants, with no schema library behind them: a face that only
 * names statuses (the CLI's `brig list --status`) loads this and nothing else. run-record.ts
 * builds its schemas from these.
 */
export const RUN_STATUSES = ['queued', 'starting', 'running', 'materializing', 'ended'] as const;
export const END_REASONS = ['completed', 'failed', 'killed', 'swept', 'watchdog_timeout', 'ghost_sweep'] as const;
export const KILLED_BY = ['parent', 'health_monitor', 'operator', 'system'] as const;
export const TERMINAL_STATUSES = ['cancelled', 'failed', 'timeout'] as const;
export const RUN_KINDS = ['script', 'command', 'agent'] as const;

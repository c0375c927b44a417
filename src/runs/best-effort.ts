import type { RunTable } from './run-table.js';

/**
 * One release step that must not stop the others: its failure is ledgered (content-free:
 * what, and the error's code) instead of swallowed — a failed release is a fact an operator
 * audits, and the next start's sweep redoes it.
 */
export async function bestEffort(table: RunTable, runId: string, what: string, step: () => Promise<unknown>): Promise<void> {
  try {
    await step();
  } catch (e) {
    const code = (e as { code?: unknown }).code;
    table.ledger.append({ type: 'run.release_failed', runId, what, code: typeof code === 'string' ? code.slice(0, 40) : 'unknown' });
  }
}


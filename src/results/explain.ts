/**
 * `brig explain RUN` as text (pure): the run, its lease decisions, its refs and its savings.
 * Content-free apart from what the operator already owns (labels, paths inside the run).
 */
import type { Savings } from './savings.js';
import type { ResultRef } from './types.js';

export interface ExplainInput {
  run: {
    runId: string;
    rootRunId?: string;
    parentRunId?: string;
    label?: string;
    status: string;
    endReason?: string;
    startedAt?: string;
    endedAt?: string;
    depth?: number;
  };
  /** One line per lease decision, e.g. `spawn: granted`, `net.egress: denied (not in parent)`. */
  leaseDecisions?: string[];
  refs: Pick<ResultRef, 'ref' | 'path' | 'kind' | 'bytes' | 'rows' | 'expiresAt'>[];
  savings?: Savings;
  /** For a root run: the savings of every run of its tree, rolled up (rollUpSavings). */
  treeSavings?: Savings & { runs: number };
  condensationLevel?: number;
}

/** Refs an explanation lists by name (the MCP tool's structured answer lists as many). */
export const EXPLAIN_REFS = 50;

export function renderExplain(x: ExplainInput): string {
  const r = x.run;
  const lines: string[] = [`Run ${r.runId}${r.label ? ` (${r.label})` : ''}`];
  const kv = (k: string, v: unknown) => (v === undefined || v === '' ? undefined : `  ${k}: ${String(v)}`);
  lines.push(
    ...[
      kv('status', r.status),
      kv('end reason', r.endReason),
      kv('root', r.rootRunId && r.rootRunId !== r.runId ? r.rootRunId : undefined),
      kv('parent', r.parentRunId),
      kv('depth', r.depth),
      kv('started', r.startedAt),
      kv('ended', r.endedAt),
      kv('condensation', x.condensationLevel !== undefined ? `Level ${x.condensationLevel}` : undefined),
    ].filter((l): l is string => l !== undefined),
  );
  if (x.leaseDecisions?.length) lines.push('Lease decisions:', ...x.leaseDecisions.map((d) => `  - ${d}`));
  if (x.refs.length) {
    lines.push('Refs:');
    // As the envelope's footer: the first handles, then how many more (ref list pages through all).
    for (const ref of x.refs.slice(0, EXPLAIN_REFS)) {
      lines.push(`  ${ref.ref}  ${ref.kind.padEnd(6)} ${String(ref.bytes).padStart(12)}B${ref.rows !== undefined ? `  ${ref.rows} rows` : ''}  ${ref.path}  (expires ${ref.expiresAt})`);
    }
    if (x.refs.length > EXPLAIN_REFS) lines.push(`  … ${x.refs.length - EXPLAIN_REFS} more refs (\`brig ref list\`, MCP ref_list)`);
  }
  if (x.savings) {
    const s = x.savings;
    lines.push(
      'Savings (estimate):',
      `  materialized: ${s.materializedBytes} bytes  re-entered: ${s.charsReentered} chars  estSavedTokens: ${s.estSavedTokens}${s.savedRatio !== undefined ? `  savedRatio: ${s.savedRatio}` : ''}`,
    );
  }
  if (x.treeSavings) {
    const s = x.treeSavings;
    lines.push(
      `Savings rolled up over the tree (${s.runs} run${s.runs === 1 ? '' : 's'}, estimate):`,
      `  materialized: ${s.materializedBytes} bytes  re-entered: ${s.charsReentered} chars  estSavedTokens: ${s.estSavedTokens}${s.savedRatio !== undefined ? `  savedRatio: ${s.savedRatio}` : ''}`,
    );
  }
  return `${lines.join('\n')}\n`;
}

import type { SupervisorCore } from '../../src/runs/index.js';
import type { RunMethod } from '../../src/runs/child-calls.js';

/**
 * A child's broker call, as the broker would hand it to the supervisor's table (its `run.*`
 * alias resolved), for unit tests with no socket. The params go in as the test writes them:
 * the broker's schema check is the broker tests' business.
 */
export function childCall(sup: SupervisorCore, runId: string, method: string, params: unknown, call: { callId?: string | number; resent?: boolean } = {}): Promise<unknown> {
  const m = (method.startsWith('run.') ? method.slice(4) : method) as RunMethod;
  const handler = sup.childCalls[m] as (call: { runId: string; params: unknown; callId?: string | number; resent?: boolean }) => Promise<unknown>;
  return handler({ runId, params, ...call });
}

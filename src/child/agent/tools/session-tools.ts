/**
 * The run looking at itself, served by the supervisor (which holds the conversation): its
 * status, and — after a compaction dropped older turns — a search over its own transcript and
 * a page of it from the entry a hit names (the seeds' ctx_search / ctx_expand). Read-only;
 * every answer is bounded by the supervisor and again, like every tool result, by the loop.
 */
import { obj, S, type ToolDef } from './tool.js';

const TIMEOUT_MS = 30_000;
const json = (v: unknown) => JSON.stringify(v, null, 1);

const sessionStatus: ToolDef = {
  name: 'session_status',
  description: 'Your own session: steps, tokens and cost used, what is left of your budgets and time, and your children.',
  parameters: obj({}),
  timeoutMs: () => TIMEOUT_MS,
  async run(_a, ctx) {
    return json(await ctx.broker.call('session.status', {}));
  },
};

const ctxSearch: ToolDef = {
  name: 'ctx_search',
  description: 'Search your own conversation, including what a compaction dropped, for a plain text (case-insensitive); returns snippets and the entry of each hit (read it with ctx_expand).',
  parameters: obj({ query: S.str('the text to find', { minLength: 1, maxLength: 200 }), limit: S.int('most hits (default 10)', 1, 20) }, ['query']),
  timeoutMs: () => TIMEOUT_MS,
  async run(a, ctx) {
    return json(await ctx.broker.call('session.search', { query: String(a.query), ...(typeof a.limit === 'number' ? { limit: a.limit } : {}) }));
  },
};

const ctxExpand: ToolDef = {
  name: 'ctx_expand',
  description: 'Read your own conversation back from an entry (a ctx_search hit names it): a bounded page of what was said, each entry cut to 4,000 characters.',
  parameters: obj({ entry: S.int('the first entry', 0, 1_000_000), limit: S.int('entries (default 10, at most 20)', 1, 20) }, ['entry']),
  timeoutMs: () => TIMEOUT_MS,
  async run(a, ctx) {
    return json(await ctx.broker.call('session.expand', { offset: Number(a.entry), ...(typeof a.limit === 'number' ? { limit: a.limit } : {}) }));
  },
};

export const SESSION_TOOLS: ToolDef[] = [sessionStatus, ctxSearch, ctxExpand];

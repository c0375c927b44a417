/**
 * The drill-in routes: thin translation from HTTP to RefService. Every verb is bounded by the
 * slicer; a refusal is an error body with its code, never a partial answer.
 *   GET  /v1/runs/RUN/refs                 → { refs }
 *   GET  /v1/runs/RUN/manifest             → the result store's manifest (refs and what collect skipped)
 *   GET  /v1/runs/RUN/result[?strategy=S]  → { runId, envelope, condensed, savings, refs } (S: a look, not kept)
 *   GET  /v1/runs/RUN/envelope             → the same without deciding it, in any status (`explain`)
 *   POST /v1/refs/REF/read     {offset,length} | {line,lines}
 *   POST /v1/refs/REF/grep     {pattern, maxMatches?, context?, ignoreCase?, fixed?}
 *   POST /v1/refs/REF/jq       {expr}
 *   POST /v1/refs/REF/sql      {query, maxRows?}
 *   POST /v1/refs/REF/jsonpath {expr, maxRows?}
 */
import type { RefSurface } from '../runs/index.js';
import { BrigError, type Result } from '../util/errors.js';

const RUN_REFS = /^\/v1\/runs\/(r-[a-z0-9-]{6,64})\/(refs|result|manifest|envelope)$/;
const STRATEGIES = ['auto', 'always', 'never'] as const;
const REF_VERB = /^\/v1\/refs\/(ref_[a-z0-9]{8,64})\/(read|grep|jq|sql|jsonpath)$/;

function value<T>(r: Result<T>): T {
  if (!r.ok) throw r.error;
  return r.value;
}

function str(body: Record<string, unknown>, key: string): string {
  const v = body[key];
  if (typeof v !== 'string' || v.length === 0) throw new BrigError('invalid_input', `the body needs a non-empty string \`${key}\``);
  return v;
}

function num(body: Record<string, unknown>, key: string): number | undefined {
  const v = body[key];
  if (v === undefined) return undefined;
  if (typeof v !== 'number' || !Number.isFinite(v) || v < 0) throw new BrigError('invalid_input', `\`${key}\` must be a non-negative number`);
  return v;
}

export async function refRoute(
  refs: RefSurface,
  method: string,
  pathname: string,
  body: () => Promise<Record<string, unknown>>,
  query: URLSearchParams = new URLSearchParams(),
): Promise<{ status: number; body: unknown } | undefined> {
  const run = RUN_REFS.exec(pathname);
  if (run && method === 'GET') {
    const [, id, what] = run as unknown as [string, string, 'refs' | 'result' | 'manifest' | 'envelope'];
    if (what === 'refs') return { status: 200, body: { refs: value(await refs.list(id)) } };
    if (what === 'manifest') return { status: 200, body: value(await refs.manifest(id)) };
    if (what === 'envelope') return { status: 200, body: value(await refs.peek(id)) };
    const strategy = query.get('strategy');
    if (strategy !== null && !(STRATEGIES as readonly string[]).includes(strategy)) {
      throw new BrigError('invalid_input', `strategy must be one of ${STRATEGIES.join(', ')}`, { data: { strategy: strategy.slice(0, 40) } });
    }
    return { status: 200, body: value(await refs.result(id, strategy !== null ? { strategy: strategy as (typeof STRATEGIES)[number] } : {})) };
  }
  const verb = REF_VERB.exec(pathname);
  if (!verb || method !== 'POST') return undefined;
  const [, ref, v] = verb as unknown as [string, string, 'read' | 'grep' | 'jq' | 'sql' | 'jsonpath'];
  const b = await body();
  const maxRows = num(b, 'maxRows');
  switch (v) {
    case 'read': {
      const line = num(b, 'line');
      const range = line !== undefined ? { line, lines: num(b, 'lines') ?? 1 } : { offset: num(b, 'offset') ?? 0, length: num(b, 'length') ?? 4096 };
      return { status: 200, body: value(await refs.read(ref, range)) };
    }
    case 'grep': {
      const o = { maxMatches: num(b, 'maxMatches'), context: num(b, 'context'), ignoreCase: b.ignoreCase === true, fixed: b.fixed === true };
      return { status: 200, body: value(await refs.grep(ref, str(b, 'pattern'), Object.fromEntries(Object.entries(o).filter(([, x]) => x !== undefined)))) };
    }
    case 'jq':
      return { status: 200, body: value(await refs.jq(ref, str(b, 'expr'))) };
    case 'sql':
      return { status: 200, body: value(await refs.sql(ref, str(b, 'query'), maxRows !== undefined ? { maxRows } : {})) };
    case 'jsonpath':
      return { status: 200, body: value(await refs.jsonpath(ref, str(b, 'expr'), maxRows !== undefined ? { maxRows } : {})) };
  }
}

/**
 * The drill-in surface over the daemon's API (ref-routes.ts on the other side): the daemon's
 * own RefService answers — its helper pool, its result store, its Level 2 model — so a face
 * talking to a daemon loads neither DuckDB nor the result store. Refusals arrive as the
 * BrigError the daemon decided, as Result values.
 */
import type { RefSurface, ResultOptions } from '../runs/index.js';
import type { ResultRef } from '../results/index.js';
import { rollUpSavings } from '../results/savings.js';
import { ok } from '../util/errors.js';
import type { ApiClient } from './client.js';

const run = (id: string) => `/v1/runs/${encodeURIComponent(id)}`;
const ref = (id: string, verb: string) => `/v1/refs/${encodeURIComponent(id)}/${verb}`;

export class ApiRefs implements RefSurface {
  constructor(private readonly api: ApiClient) {}

  async list(runId: string): ReturnType<RefSurface['list']> {
    const r = await this.api.call<{ refs: ResultRef[] }>('GET', `${run(runId)}/refs`);
    return r.ok ? ok(r.value.refs) : r;
  }
  manifest(runId: string): ReturnType<RefSurface['manifest']> {
    return this.api.call('GET', `${run(runId)}/manifest`);
  }
  read(id: string, range: Parameters<RefSurface['read']>[1]): ReturnType<RefSurface['read']> {
    return this.api.call('POST', ref(id, 'read'), range);
  }
  grep(id: string, pattern: string, opts: Parameters<RefSurface['grep']>[2] = {}): ReturnType<RefSurface['grep']> {
    return this.api.call('POST', ref(id, 'grep'), { pattern, ...opts });
  }
  jq(id: string, expr: string): ReturnType<RefSurface['jq']> {
    return this.api.call('POST', ref(id, 'jq'), { expr });
  }
  sql(id: string, query: string, opts: { maxRows?: number } = {}): ReturnType<RefSurface['sql']> {
    return this.api.call('POST', ref(id, 'sql'), { query, ...opts });
  }
  jsonpath(id: string, expr: string, opts: { maxRows?: number } = {}): ReturnType<RefSurface['jsonpath']> {
    return this.api.call('POST', ref(id, 'jsonpath'), { expr, ...opts });
  }
  result(runId: string, o: ResultOptions = {}): ReturnType<RefSurface['result']> {
    return this.api.call('GET', `${run(runId)}/result${o.strategy !== undefined ? `?strategy=${encodeURIComponent(o.strategy)}` : ''}`);
  }
  peek(runId: string): ReturnType<RefSurface['peek']> {
    return this.api.call('GET', `${run(runId)}/envelope`);
  }
  rollUp(list: Parameters<RefSurface['rollUp']>[0]): ReturnType<RefSurface['rollUp']> {
    return rollUpSavings(list);
  }
}

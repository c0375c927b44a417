/**
 * The drill-in surface over the daemon's API: the daemon's own RefService answers — its helper
 * pool, its result store, its Level 2 model — so a face talking to a daemon loads neither
 * DuckDB nor the result store. Refusals arrive as the BrigError the daemon decided, as Result
 * values.
 */
import { ok, type RefSurface, type ResultOptions } from '../protocol/index.js';
import type { ApiClient } from './api-client.js';

export class ApiRefs implements RefSurface {
  constructor(private readonly api: ApiClient) {}

  async list(runId: string): ReturnType<RefSurface['list']> {
    const r = await this.api.route('listRefs', { params: { run: runId } });
    return r.ok ? ok(r.value.refs) : r;
  }
  manifest(runId: string): ReturnType<RefSurface['manifest']> {
    return this.api.route('manifest', { params: { run: runId } });
  }
  read(id: string, range: Parameters<RefSurface['read']>[1]): ReturnType<RefSurface['read']> {
    return this.api.route('refRead', { params: { ref: id }, input: range });
  }
  grep(id: string, pattern: string, opts: Parameters<RefSurface['grep']>[2] = {}): ReturnType<RefSurface['grep']> {
    return this.api.route('refGrep', { params: { ref: id }, input: { pattern, ...opts } });
  }
  jq(id: string, expr: string): ReturnType<RefSurface['jq']> {
    return this.api.route('refJq', { params: { ref: id }, input: { expr } });
  }
  sql(id: string, query: string, opts: { maxRows?: number } = {}): ReturnType<RefSurface['sql']> {
    return this.api.route('refSql', { params: { ref: id }, input: { query, ...opts } });
  }
  jsonpath(id: string, expr: string, opts: { maxRows?: number } = {}): ReturnType<RefSurface['jsonpath']> {
    return this.api.route('refJsonpath', { params: { ref: id }, input: { expr, ...opts } });
  }
  result(runId: string, o: ResultOptions = {}): ReturnType<RefSurface['result']> {
    return this.api.route('result', { params: { run: runId }, input: o.strategy !== undefined ? { strategy: o.strategy } : {} });
  }
  peek(runId: string): ReturnType<RefSurface['peek']> {
    return this.api.route('envelope', { params: { run: runId } });
  }
}

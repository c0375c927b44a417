/**
 * The graphs over the daemon's API: the daemon's own GraphService answers (its supervisor
 * spawns every node), so a face talking to a daemon loads nothing of the core. A wait is
 * asked in slices of at most 30 s (no exchange idles longer); refusals arrive as Results.
 */
import { ok, type GateDecision, type GraphSurface } from '../protocol/index.js';
import type { ApiClient } from './api-client.js';

const SLICE_MS = 30_000;

export class ApiGraphs implements GraphSurface {
  constructor(private readonly api: ApiClient) {}

  async define(text: string, o: { source?: string } = {}): ReturnType<GraphSurface['define']> {
    const r = await this.api.route('graphDefine', { input: { spec: text, ...o } });
    return r.ok ? ok(r.value.definition) : r;
  }
  async decide(graphId: string, node: string, d: GateDecision): ReturnType<GraphSurface['decide']> {
    const r = await this.api.route('graphDecide', { params: { graph: graphId }, input: { node, ...d } });
    return r.ok ? ok(r.value.graph) : r;
  }
  async run(text: string, o: { source?: string; by?: string } = {}): ReturnType<GraphSurface['run']> {
    const r = await this.api.route('graphRun', { input: { spec: text, ...o } });
    return r.ok ? ok(r.value.graph) : r;
  }
  async status(graphId: string): ReturnType<GraphSurface['status']> {
    const r = await this.api.route('getGraph', { params: { graph: graphId } });
    return r.ok ? ok(r.value.graph) : r;
  }
  async wait(graphId: string, o: { timeoutMs?: number; signal?: AbortSignal } = {}): ReturnType<GraphSurface['wait']> {
    const deadline = o.timeoutMs !== undefined ? Date.now() + o.timeoutMs : Infinity;
    for (;;) {
      const left = Math.max(1, Math.min(SLICE_MS, deadline - Date.now()));
      const r = await this.api.route('graphWait', { params: { graph: graphId }, input: { timeoutMs: left } });
      if (!r.ok || r.value.graph.state !== 'running' || Date.now() >= deadline || o.signal?.aborted) return r.ok ? ok(r.value.graph) : r;
    }
  }
  async cancel(graphId: string, o: { confirm: boolean }): ReturnType<GraphSurface['cancel']> {
    const r = await this.api.route('graphCancel', { params: { graph: graphId }, input: { confirm: o.confirm } });
    return r.ok ? ok(r.value.graph) : r;
  }
  async explain(graphId: string): ReturnType<GraphSurface['explain']> {
    const r = await this.api.route('graphExplain', { params: { graph: graphId } });
    return r.ok ? ok(r.value.explanation) : r;
  }
  async list(): Promise<Awaited<ReturnType<GraphSurface['list']>>> {
    const r = await this.api.route('listGraphs');
    if (!r.ok) throw r.error;
    return r.value.graphs;
  }
}

/**
 * The coordinator's drill-in surface, one implementation for every face (library, HTTP API,
 * CLI): list a run's ResultRefs, slice one (read / grep / jq / sql / jsonpath), and cast a
 * run's envelope — the bounded summary plus handles that is all a coordinator receives (INV-3).
 * Slicing itself is confined and read-only (INV-5, in slice/); this only routes and bounds.
 */
import type { ModelProvider } from '../models/index.js';
import {
  type CondenseOptions,
  type CondenseStrategy,
  type FsResultStore,
  type ResultRef,
  type RunEnvelope,
  type RunManifest,
  type Savings,
  buildRunEnvelope,
  envelopeOnce,
  loadEnvelope,
} from '../results/index.js';
import type { GrepOptions, ReadRange, Slicer, SliceOutput } from '../slice/index.js';
import { BrigError, err, ok, type Result } from '../util/errors.js';
import type { ResultOptions, RefSurface, RunResult } from '../protocol/index.js';
import type { RunRecord } from '../protocol/index.js';

export type { ResultOptions, RefSurface, RunResult } from '../protocol/index.js';

export interface RefServiceDeps {
  store: FsResultStore;
  slicer: Slicer;
  /** Reads a run record (the supervisor's store). */
  getRun: (runId: string) => Promise<RunRecord | undefined>;
  model?: ModelProvider;
  condense?: Omit<CondenseOptions, 'model'>;
}

export class RefService implements RefSurface {
  constructor(private readonly d: RefServiceDeps) {}

  async list(runId: string): Promise<Result<ResultRef[]>> {
    const run = await this.d.getRun(runId);
    if (!run) return err(new BrigError('run_not_found', `no run ${runId}`));
    return ok(await this.refsOf(runId));
  }

  /**
   * The run's manifest as the result store indexed it: its refs and what its collect skipped.
   * From the store alone (no run record needed); run_not_found when it has no results.
   */
  async manifest(runId: string): Promise<Result<RunManifest>> {
    try {
      return ok(await this.d.store.manifest(runId));
    } catch (e) {
      if (e instanceof BrigError) return err(e);
      throw e;
    }
  }

  read(ref: string, range: ReadRange): Promise<Result<SliceOutput>> {
    return this.d.slicer.read(ref, range);
  }
  grep(ref: string, pattern: string, opts: GrepOptions = {}): Promise<Result<SliceOutput>> {
    return this.d.slicer.grep(ref, pattern, opts);
  }
  jq(ref: string, expr: string): Promise<Result<SliceOutput>> {
    return this.d.slicer.jq(ref, expr);
  }
  sql(ref: string, query: string, opts: { maxRows?: number } = {}): Promise<Result<SliceOutput>> {
    return this.d.slicer.sql(ref, query, opts);
  }
  jsonpath(ref: string, expr: string, opts: { maxRows?: number } = {}): Promise<Result<SliceOutput>> {
    return this.d.slicer.jsonpath(ref, expr, opts);
  }

  /** The envelope of an ended run (cast on first ask, then kept): condensed result, handles, savings. */
  async result(runId: string, o: ResultOptions = {}): Promise<Result<RunResult>> {
    const run = await this.d.getRun(runId);
    if (!run) return err(new BrigError('run_not_found', `no run ${runId}`));
    if (run.status !== 'ended') {
      return err(new BrigError('not_running', `run ${runId} has not ended (status ${run.status})`, { hint: '`brig wait RUN` first.', data: { status: run.status } }));
    }
    const refs = await this.refsOf(runId);
    const opts = { ...this.d.condense, ...(this.d.model ? { model: this.d.model } : {}), fileOf: (r: ResultRef) => this.d.store.resolvePath(r) };
    // Cast once and kept: every later ask (any face) gets the envelope the coordinator got.
    // A forced strategy is a look: cast now, not kept, the kept one untouched.
    const env = o.strategy === undefined ? await envelopeOnce(this.d.store, run, refs, opts) : await buildRunEnvelope(run, refs, { ...opts, strategy: o.strategy });
    return ok({ runId, refs, ...env });
  }

  /**
   * A run's envelope without deciding it, in any status (`brig explain`): the kept one when
   * it was cast, else a Level 1/3 cast made now — no model call — and not kept.
   */
  async peek(runId: string): Promise<Result<RunResult>> {
    const run = await this.d.getRun(runId);
    if (!run) return err(new BrigError('run_not_found', `no run ${runId}`));
    const refs = await this.refsOf(runId);
    const env = (await loadEnvelope(this.d.store, run.rootRunId, run.id)) ?? (await buildRunEnvelope(run, refs, { ...this.d.condense, strategy: 'never', fileOf: (r) => this.d.store.resolvePath(r) }));
    return ok({ runId, refs, ...env });
  }

  /** Savings rolled up over several runs (e.g. one root's children). */

  private async refsOf(runId: string): Promise<ResultRef[]> {
    try {
      return await this.d.store.list(runId);
    } catch (e) {
      if (e instanceof BrigError && (e.code === 'ref_not_found' || e.code === 'run_not_found')) return [];
      throw e;
    }
  }
}

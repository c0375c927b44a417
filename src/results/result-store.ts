/**
 * The ResultRef store's role: where a run's outputs become ResultRefs and are read back.
 * FsResultStore (fs-result-store.ts) is the implementation, on disk under $BRIG_HOME/results;
 * its retention is result-retention.ts. Host paths it hands out (runDir, outDir, resolvePath)
 * are for brig's own use: never shown to a user or a child.
 */
import { Readable } from 'node:stream';
import type { scanObserver } from './content-scan.js';
import type { SweepReport } from './result-retention.js';
import type { RefSource, ResultCaps, ResultRef, RunManifest } from './types.js';
import type { DurableWriter } from '../util/write-journal.js';

/** What the jail's collect reported about one file: its path under the collected dir, and what scanObserver's end() gave. */
export interface CollectedScan {
  path: string;
  observed?: unknown;
}

/** One output for writeStreams: its name in the run's directory, its bytes, what it is. */
export interface StreamItem {
  name: string;
  readable: NodeJS.ReadableStream | Readable;
  source: RefSource;
}

/** The child's result value as a writeStreams item: a string becomes result.txt, anything else result.json. */
export function valueItem(value: unknown): StreamItem {
  const text = typeof value === 'string' ? value : JSON.stringify(value ?? null, null, 2);
  return { name: typeof value === 'string' ? 'result.txt' : 'result.json', readable: Readable.from([Buffer.from(text, 'utf8')]), source: 'value' };
}

export interface ResultStore {
  /** The host directory of a run's results (ids checked against the run-id alphabet). */
  runDir(rootRunId: string, runId: string): string;
  /** How its small state files (manifests, pointers, envelopes) are written (util/write-journal.ts); absent: plain durable writes. */
  readonly writer?: DurableWriter;
  /** Streams one output into a ref. `name` is relative (`stdout.txt`, `result.json`). */
  writeStream(runId: string, rootRunId: string, name: string, readable: NodeJS.ReadableStream | Readable, caps?: Partial<ResultCaps>, source?: RefSource): Promise<ResultRef>;
  /**
   * Several outputs into refs, one after another against the run's cap, with one manifest
   * commit for all of them (issue 26: a run's stdio, value and transcript are one durable
   * point, not one each). A failure commits none of them.
   */
  writeStreams(runId: string, rootRunId: string, items: readonly StreamItem[], caps?: Partial<ResultCaps>): Promise<ResultRef[]>;
  /** The child's result value: a string becomes result.txt, anything else result.json. */
  writeValue(runId: string, rootRunId: string, value: unknown, caps?: Partial<ResultCaps>): Promise<ResultRef>;
  /** A directory inside the run's result directory made into refs, in place; regular files only. */
  indexDir(runId: string, rootRunId: string, dir: string, caps?: Partial<ResultCaps>): Promise<RunManifest>;
  /** indexDir, describing the files collect scanned on the way in from those scans. */
  indexCollected(runId: string, rootRunId: string, dir: string, scans: Iterable<CollectedScan>, caps?: Partial<ResultCaps>, more?: readonly StreamItem[]): Promise<RunManifest>;
  /** The observer the jail's collect feeds each out/ file through (ResultsPort.observe). */
  readonly observe: typeof scanObserver;
  manifest(runId: string): Promise<RunManifest>;
  list(runId: string): Promise<ResultRef[]>;
  /** A live ref (ref_not_found when unknown or expired). */
  get(ref: string): Promise<ResultRef>;
  /** The host path of a ref's bytes. */
  resolvePath(ref: ResultRef): string;
  lineIndex(ref: ResultRef): Promise<number[]>;
  /** Where the jail's collect puts a run's /workspace/out (it must not exist yet). */
  outDir(rootRunId: string, runId: string): string;
  /** Indexes a collected out/ directory; returns how many refs it made. */
  index(rootRunId: string, runId: string, dir: string, extras?: { collected?: Iterable<CollectedScan> }): Promise<number>;
  /** Drops a run's refs and files now (retention decided by the caller). */
  remove(rootRunId: string, runId: string): Promise<void>;
  /** What an interrupted materialization left, removed at a supervisor's start. */
  sweepInterrupted(isLive: (runId: string) => boolean): Promise<{ removed: number; bytes: number }>;
  /** Removes runs whose refs have all expired. */
  sweep(now?: Date): Promise<SweepReport>;
}

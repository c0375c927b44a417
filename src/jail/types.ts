/**
 * The jail in brig's own words. Nothing here names an engine type: the supervisor sees
 * profiles, workspaces and runs, never a dockerode Container.
 */
import type { JailVerified } from '../protocol/index.js';
import type { ArtifactIdentity } from './artifact-tree.js';

/** Resource limits applied to one jail (already the lease's limits, never wider). */
export interface JailLimits {
  memoryMb: number;
  cpu: number; // CPUs, fractional
  pids: number;
  tmpfsMb: number;
  /** /workspace's size: writes past it fail with ENOSPC inside the jail. */
  diskMb: number;
}

export interface JailArtifact {
  /** Absolute host path of a regular file or directory; mounted read-only. */
  hostPath: string;
  /** Name under /artifacts inside the jail (a basename: no slash, no `..`). */
  name: string;
  /**
   * What the spawn's check saw: the driver binds that very object (its real path, device and
   * inode) or refuses `artifact_changed` (jail/docker/artifact-stage.ts).
   */
  identity?: ArtifactIdentity;
  /** Set when it is a ResultRef handed over (runs/ref-artifact.ts): its id, for the record. */
  ref?: string;
}

export interface JailInput {
  /** Path relative to /workspace (no absolute, no `..`). */
  path: string;
  data: Buffer | string;
  mode?: number;
}

export interface JailSpec {
  runId: string;
  leaseId: string;
  rootRunId: string;
  /** argv, never a shell string. */
  argv: string[];
  /** The child's whole environment, built from nothing. */
  env: Record<string, string>;
  limits: JailLimits;
  artifacts: JailArtifact[];
  /** Host directory holding this run's broker socket; mounted read-only at /run/brig. */
  brokerDir?: string;
  /** Files put into /workspace before start. */
  inputs?: JailInput[];
  /**
   * A host directory of brig's (a clean clone, repo/repo-stage.ts) copied into /workspace/repo
   * before start, owned by the jail user: copied onto the workspace disk, never mounted.
   */
  repoDir?: string;
  /** Image reference; the driver's built child image when absent. `toolbox`: the toolbox's current tag. */
  image?: string;
  /**
   * `image` is `toolbox` because an agent spec named it: when the toolbox is not built, run in
   * brig's child image instead of failing (the verified record says so, `imageFallback`).
   */
  imageFallback?: boolean;
  /**
   * Who asked for this jail: an operator's spawn (a root run) or a child's (through its
   * broker). The warm pool learns limit shapes from operators only (absent: operator).
   */
  askedBy?: 'operator' | 'child';
}

export interface JailExit {
  exitCode: number;
  /** The engine's State.OOMKilled: the kernel's OOM killer ended a process of the jail (read for a non-zero exit). */
  oomKilled: boolean;
  /** Who said the end: a pooled jail's reaper, confirmed from the host (issue 26), or (absent) the engine. */
  by?: 'reaper';
}

/**
 * Caps for collecting outputs. Over the per-run cap is refused with `ref_too_large`, never
 * truncated; a file over the per-file cap is skipped whole, never read (`too_large`, listed in
 * the report's `tooLarge`: the caller refuses it), and the other files are kept. The entry cap
 * is a shape cap: files past it are skipped and reported, like a too-deep subtree or a
 * too-long path, and the legitimate files before it are kept.
 */
export interface CollectCaps {
  perFileBytes: number;
  perRunBytes: number;
  /** Regular files collected; further files are skipped (`too_many_entries`), in archive order. */
  maxEntries: number;
}

export interface CollectedFile {
  /** Relative path under the output directory (POSIX separators). */
  path: string;
  bytes: number;
  /** What the observer's end() returned for this file, when collect was given an observer. */
  observed?: unknown;
  /** The archive's mode gave its owner the execute bit (the copy itself is 0644 all the same). */
  executable?: true;
}

/**
 * Watches one file's bytes while collect writes them: every byte, in order, each chunk after
 * the caps passed it and before it reaches the disk. A throw refuses the whole collection.
 */
export interface CollectObserver {
  update(chunk: Buffer): void;
  /** Called once the file is complete on disk; the value is reported as the file's `observed`. */
  end(): unknown;
}

export interface CollectOptions {
  /**
   * One observer per regular file about to be written (its path relative to destDir), so a
   * caller can hash or index the bytes in the same pass instead of reading them back. Never
   * called for a skipped entry; a file refused midway never gets end().
   */
  observe?: (relPath: string) => CollectObserver;
  /**
   * Bytes to leave free on the destination's file system (brig's home: its reserve). A file
   * that would go below it is skipped `no_space` at its declared size, before any of its bytes
   * is written; a write the file system refuses for want of space (ENOSPC, EDQUOT) skips that
   * file too, its partial bytes removed. Either way the collection goes on and keeps what fits.
   * Absent or 0: only the second (the disk's own refusal).
   */
  minFreeBytes?: number;
  /**
   * Report symlinks as data (`links`: name → target text, at most MAX_LINK_TARGET bytes each,
   * counted against the per-run cap) instead of skipping them as `symlink`. Never made on the host.
   */
  links?: boolean;
}

/** Longest symlink target reported as data; a longer one is skipped `symlink`. */
export const MAX_LINK_TARGET = 4096;

export interface CollectReport {
  /** Host directory holding the materialized files. */
  dir: string;
  files: CollectedFile[];
  totalBytes: number;
  /**
   * Entries not copied and why (symlink, link, fifo, device, unsafe_name, dotdot, conflict,
   * too_deep, path_too_long, too_many_entries, too_large, no_space). Content-free; the first 1000, a
   * skipped directory standing for its whole subtree.
   */
  skipped: { path: string; reason: string }[];
  /**
   * Files skipped for being over the per-file cap (never read), with their declared size when
   * this collection saw it: the caller's refusal to name, since the skip list is bounded.
   */
  tooLarge?: { path: string; bytes?: number }[];
  /** Every entry skipped, listed or not (a skipped subtree counts each entry in it). */
  skippedCount?: number;
  /** With `links`: the symlinks, as data (never made on the host). */
  links?: { path: string; target: string }[];
  /** Files skipped `no_space` (the home had no room for them), and their declared bytes: the caller's error to name. */
  noSpace?: { files: number; bytes: number };
  /** out/ was known empty by the engine's stat (unchanged since the start): no archive was read. */
  unchanged?: true;
}

export interface StreamTails {
  stdoutTail: string;
  stderrTail: string;
  stdoutBytes: number;
  stderrBytes: number;
}

export type { JailVerified } from '../protocol/index.js';

/** Jail keys of warm-pool slots start with this; a run's own jail is keyed by its run id. */
export const POOL_KEY_PREFIX = 'pool-';
export const isPoolKey = (key: string): boolean => key.startsWith(POOL_KEY_PREFIX);

/** One child's jail. Not started when handed out; destroy() is idempotent. */
export interface Jail {
  readonly runId: string;
  readonly id: string;
  /**
   * The name the engine knows this jail by (its labels, container, volume and disk): a warm
   * pool slot's key when the pool served the run. Absent: the run id.
   */
  readonly key?: string;
  /** The host directory bound at /run/brig when it is not the one the spec named (a pool slot's). */
  readonly brokerDir?: string;
  /** The engine's account of it after create (absent on a reattached jail). */
  readonly verified?: JailVerified;
  start(): Promise<void>;
  wait(): Promise<JailExit>;
  kill(): Promise<void>;
  /** SIGTERM, then SIGKILL after graceMs if it has not exited (an agent's salvage window). */
  stop(graceMs: number): Promise<void>;
  tails(): StreamTails;
  /** Copy /workspace/<from> (default `out`) to destDir atomically, regular files only. */
  collect(destDir: string, caps: CollectCaps, from?: string, opts?: CollectOptions): Promise<CollectReport>;
  /** Remove the container and its workspace volume. Safe to call twice. */
  destroy(): Promise<void>;
}

export interface EngineInfo {
  version: string;
  apiVersion: string;
  os: string;
  runtimes: string[];
}

export interface LabelledResource {
  kind: 'container' | 'volume' | 'disk' | 'stage';
  id: string;
  runId: string;
  rootRunId: string;
  running: boolean;
}

export interface JailDriver {
  info(): Promise<EngineInfo>;
  /** Build the child image if its content hash is not present; returns the tag. */
  ensureImage(onProgress?: (line: string) => void): Promise<string>;
  /** Create and verify a jail. Refuses (`jail_unverified`) and removes it on any drift. */
  create(spec: JailSpec): Promise<Jail>;
  /** Reattach to a run's container, running or exited (its workspace is intact); null when it is gone. */
  attach(runId: string): Promise<Jail | null>;
  listLabelled(): Promise<LabelledResource[]>;
  /** Remove labelled containers and volumes, and the workspace disks, whose run is not live. */
  sweep(isLive: (runId: string) => boolean): Promise<{ containers: number; volumes: number; disks?: number }>;
  /** Whether the engine answers within timeoutMs (absent: a driver with no engine to lose). */
  engineAnswers?(timeoutMs: number): Promise<boolean>;
}

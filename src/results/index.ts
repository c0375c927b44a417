/**
 * results/: the ResultRef store (safe streaming materialization, kind detection, caps,
 * retention), condensation, the narrative-cast envelope and the savings estimate.
 */
export {
  LINE_INDEX_STRIDE,
  PREVIEW_BYTES,
  REF_ID_RE,
  RESULT_KINDS,
  ResultKindSchema,
  ResultRefSchema,
  RunManifestSchema,
} from './types.js';
export type { RefSource, ResultCaps, ResultKind, ResultRef, RunManifest } from './types.js';
export { DEFAULT_RESULT_CAPS, DEFAULT_RETENTION_MS, FsResultStore, safeRelPath } from './fs-result-store.js';
export type { ResultStoreOptions } from './fs-result-store.js';
export type { CollectedScan, ResultStore } from './result-store.js';
export type { SweepReport } from './result-retention.js';
export { ScannedFile, scanObserver } from './content-scan.js';
export { csvHasHeader, sniffKind, previewOf, utf8Boundary } from './kind.js';
export { CONDENSE_DEFAULTS, CondensedSummarySchema, L2_INPUT_BUDGETS, condense, estimateTokens, headTail, headTailView, parseSummary, renderSummary } from './condense.js';
export type { CondenseOptions, CondenseStrategy, Condensed, CondensationLevel, CondensedSummary } from './condense.js';
export { MAX_ENVELOPE_REFS, renderEnvelope } from './narrative.js';
export type { EnvelopeInput } from './narrative.js';
export { rollUpSavings, savingsFor } from './savings.js';
export type { Savings } from './savings.js';
export { EXPLAIN_REFS, renderExplain } from './explain.js';
export type { ExplainInput } from './explain.js';
export { PARSE_SPOOLED_MAX_BYTES, buildRunEnvelope, errorSection, resultInput, resultText } from './run-envelope.js';
export type { EnvelopeOptions, EnvelopeRun, RunEnvelope } from './run-envelope.js';
export { viewFile, viewOf, type FileView, type TextView } from './result-view.js';
export { envelopeOnce, loadEnvelope, saveEnvelope } from './envelope-store.js';
export { materializeRun, type RunMaterial } from './run-material.js';

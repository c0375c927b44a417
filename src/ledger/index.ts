/** The audit ledger: content-free events, hash-chained JSONL segments, verification. */
export type { Ledger, LedgerBacklog, LedgerEvent, LedgerValue } from './types.js';
export { FileLedger, type FileLedgerOptions, MAX_HELD_BYTES, RETRY_MS } from './file-ledger.js';
export type { SegmentIo } from './segment-file.js';
export { verifyLedger, ledgerFiles, scanLedger, type LedgerReport, type LedgerBreak, type AnchorReport } from './verify.js';
export { anchorPath, ANCHOR_EVERY, ANCHOR_MS } from './anchor.js';
export { canonicalJson, lineHash, genesisHash } from './chain.js';
export { RefusalLog, MAX_KINDS, type RefusalLogOptions } from './refusal-log.js';

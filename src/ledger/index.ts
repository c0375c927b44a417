/** The audit ledger: content-free events, hash-chained JSONL segments, verification. */
export type { Ledger, LedgerEvent, LedgerValue } from './types.js';
export { MemoryLedger } from './types.js';
export { FileLedger, type FileLedgerOptions } from './file-ledger.js';
export { verifyLedger, ledgerFiles, type LedgerReport, type LedgerBreak } from './verify.js';
export { canonicalJson, lineHash, genesisHash } from './chain.js';

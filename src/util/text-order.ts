/**
 * Code-unit order for text brig makes itself (ISO-8601 UTC times, hex ids, segment names):
 * the order `<` gives, which for these strings is the order localeCompare gives — without its
 * first call in a process building an ICU collator (~17 ms, paid by every one-shot spawn that
 * sorted its leases or the ledger's segments).
 */
export function byCodeUnits(a: string, b: string): number {
  return a < b ? -1 : a > b ? 1 : 0;
}

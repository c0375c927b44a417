/**
 * How long a caller waits on work that needs the engine: until the work is done, or until the
 * engine is found not answering (a bounded ping), or a cap — whichever comes first.
 *
 * Guarantees: a kill answers and a drain ends in bounded time whatever the engine does (cut,
 * refusing, or frozen: a ping that times out is silence too), while with an engine that
 * answers they still wait for the work itself (an agent's salvage, a large collection).
 * Fails: towards answering — silence is never mistaken for done; the work goes on behind.
 */

/** One ping's bound, and the pause between pings while the work goes on. */
export const PING_TIMEOUT_MS = 1500;
const PING_EVERY_MS = 1000;

export type Settled = 'done' | 'silent' | 'cap';

/**
 * Resolves 'done' once `work` settles, 'silent' once `answers` says the engine does not
 * answer, 'cap' after capMs (when given). Without `answers` (a driver with no engine) only
 * the work and the cap count.
 */
export async function untilDoneOrSilent(work: Promise<unknown>, answers: ((timeoutMs: number) => Promise<boolean>) | undefined, capMs?: number): Promise<Settled> {
  let finished = false;
  const done = work.then(
    () => 'done' as const,
    () => 'done' as const,
  );
  void done.then(() => (finished = true));
  const timers = new Set<NodeJS.Timeout>();
  const after = <T>(ms: number, value: T) => new Promise<T>((r) => timers.add(setTimeout(() => r(value), ms)));
  const never = new Promise<never>(() => {});
  const cap = capMs === undefined ? never : after(capMs, 'cap' as const);
  const silence = (async (): Promise<Settled> => {
    if (!answers) return never;
    while (!finished) {
      if (!(await answers(PING_TIMEOUT_MS))) return finished ? 'done' : 'silent';
      await Promise.race([done, after(PING_EVERY_MS, null)]);
    }
    return 'done';
  })();
  try {
    return await Promise.race([done, silence, cap]);
  } finally {
    finished = true;
    for (const t of timers) clearTimeout(t);
  }
}

/**
 * Where a command's time goes: `BRIG_TIMING=1 brig spawn -- true` prints, to stderr when the
 * process exits, each phase mark since the process started (module load, config, home, reconcile,
 * admission, lease, disk, create, verify, start, exit, collect, end, printed, closed) and the time
 * since the mark before; cli/entry.ts turns it on (only config/ and the CLI entries read the
 * environment). Off, a mark is one branch; nothing is recorded or printed.
 */
let on = false;
// The global, read only when timing is on: importing node:perf_hooks loaded ~10 internal modules on every command.
const now = (): number => globalThis.performance.now();
const marks: { name: string; at: number }[] = [];

/** Records that `name` happened now (ms since the process started). The first of a name counts. */
export function mark(name: string): void {
  if (!on || marks.some((m) => m.name === name)) return;
  marks.push({ name, at: now() });
}

export function timingEnabled(): boolean {
  return on;
}

/** The marks as lines: at, delta, name. */
export function timingReport(): string {
  const lines = ['brig timing (ms since the process started; Δ since the mark before):'];
  let prev = 0;
  for (const m of marks) {
    lines.push(`  ${m.at.toFixed(1).padStart(8)}  Δ ${(m.at - prev).toFixed(1).padStart(7)}  ${m.name}`);
    prev = m.at;
  }
  return `${lines.join('\n')}\n`;
}

/** Turns the marks on (cli/entry.ts, when BRIG_TIMING=1) and prints them when the process exits. */
export function enableTiming(): void {
  if (on) return;
  on = true;
  mark('cli: main started');
  process.once('exit', () => {
    mark('exit');
    process.stderr.write(timingReport());
  });
}

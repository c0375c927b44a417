/** A time window as an operator writes it. */
/** `30m`, `24h`, `7d` (or a bare number of minutes) as minutes; undefined when it is none of those. */
export function windowMinutes(text: string): number | undefined {
  const m = /^(\d+(?:\.\d+)?)([mhd]?)$/.exec(text.trim());
  if (!m) return undefined;
  const n = Number(m[1]) * (m[2] === 'h' ? 60 : m[2] === 'd' ? 1440 : 1);
  return n > 0 ? n : undefined;
}

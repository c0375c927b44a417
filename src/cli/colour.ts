/**
 * Colour on a terminal only: never into a pipe or a file, never with NO_COLOR set (any
 * non-empty value, no-color.org) or TERM=dumb. Callers pad first and paint after, so a
 * column's width is the text's, not its escape codes'.
 */
import type { CliIO } from './command.js';

const CODES = { red: 31, green: 32, yellow: 33, dim: 2 } as const;
export type Hue = keyof typeof CODES;

/** True when `stream` (stdout by default) is a terminal that takes colour. */
export function colourOn(io: Pick<CliIO, 'env' | 'isTTY'>, stream?: NodeJS.WritableStream): boolean {
  const tty = stream ? (stream as { isTTY?: boolean }).isTTY === true : io.isTTY;
  return tty && !io.env.NO_COLOR && io.env.TERM !== 'dumb';
}

export function paint(on: boolean, hue: Hue, text: string): string {
  return on ? `\x1b[${CODES[hue]}m${text}\x1b[0m` : text;
}

/** The hue of a run's end: failures red, a completion green, the rest as it is. */
export function endHue(endReason: string | null | undefined): Hue | undefined {
  if (endReason === 'completed') return 'green';
  if (endReason === 'failed' || endReason === 'killed' || endReason === 'watchdog_timeout' || endReason === 'ghost_sweep') return 'red';
  return undefined;
}

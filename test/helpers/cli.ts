import { PassThrough } from 'node:stream';
import { main } from '../../src/cli/cli.js';

/** Runs the brig CLI in-process against a BRIG_HOME, capturing what it prints. */
export async function runCli(
  argv: string[],
  o: { home: string; env?: Record<string, string>; isTTY?: boolean },
): Promise<{ code: number; out: string; err: string }> {
  const stdout = new PassThrough();
  const stderr = new PassThrough();
  let out = '';
  let err = '';
  stdout.on('data', (d: Buffer) => (out += d.toString()));
  stderr.on('data', (d: Buffer) => (err += d.toString()));
  const code = await main(argv, { stdout, stderr, env: { BRIG_HOME: o.home, ...o.env }, isTTY: o.isTTY ?? false });
  return { code, out, err };
}

import { PassThrough } from 'node:stream';
import { main } from '../../../src/cli/cli.js';
import type { CliIO } from '../../../src/cli/command.js';

/** Runs the brig CLI in-process with captured output and the given BRIG_HOME. */
export async function brig(home: string, ...argv: string[]): Promise<{ code: number; out: string; err: string }> {
  const stdout = new PassThrough();
  const stderr = new PassThrough();
  let out = '';
  let err = '';
  stdout.on('data', (d) => (out += d));
  stderr.on('data', (d) => (err += d));
  const io: CliIO = { stdout, stderr, env: { BRIG_HOME: home }, isTTY: false };
  const code = await main(argv, io);
  return { code, out, err };
}

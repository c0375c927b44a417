#!/usr/bin/env node
import type { CliIO } from './command.js';
import { main } from './cli.js';

const io: CliIO = { stdout: process.stdout, stderr: process.stderr, env: process.env, isTTY: Boolean(process.stdout.isTTY) };
main(process.argv.slice(2), io).then(
  (code) => {
    process.exitCode = code;
  },
  (e) => {
    process.stderr.write(`brig: ${String(e)}\n`);
    process.exitCode = 1;
  },
);

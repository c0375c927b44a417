import { runCli } from '../../helpers/cli.js';

/** Runs the brig CLI in-process with captured output and the given BRIG_HOME. */
export const brig = (home: string, ...argv: string[]): Promise<{ code: number; out: string; err: string }> => runCli(argv, { home });

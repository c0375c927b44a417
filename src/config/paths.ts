/**
 * Where a brig home is and its daemon's socket, with nothing behind it but path and os: a
 * thin face (the CLI talking to a daemon) finds the socket without loading the configuration's
 * parsers or crypto. The only reader of BRIG_HOME besides loadConfig, from an env it is handed.
 */
import os from 'node:os';
import path from 'node:path';

/** $BRIG_HOME resolved, or ~/.brig. */
export function homeFrom(env: NodeJS.ProcessEnv): string {
  return env.BRIG_HOME && env.BRIG_HOME.length > 0 ? path.resolve(env.BRIG_HOME) : path.join(os.homedir(), '.brig');
}

/** A home's run records. */
export function runsDirFor(home: string): string {
  return path.join(home, 'runs');
}

/** The daemon's API socket of a home. */
export function socketPathFor(home: string): string {
  return path.join(home, 'brig.sock');
}

/** The environment a caller did not name: this process's (config/ is the one reader of process.env). */
export function envOrProcess(env: NodeJS.ProcessEnv | undefined): NodeJS.ProcessEnv {
  return env ?? process.env;
}

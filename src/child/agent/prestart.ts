/**
 * The agent runtime pre-started in a warm slot (issue 26): `node agent-runtime.js --prestarted`,
 * started by the slot's waiter (jail/docker/pool-waiter.ts) before any run asked for the slot,
 * so node's start and the runtime's module load are off the run's path.
 *
 * Guarantees: before its go the process holds nothing of a run. Its environment is the three
 * fixed variables the waiter gives it (HOME, PATH, HOSTNAME: no run id, no credential
 * placeholder), it has opened no file of the workspace nor the broker's socket, and what it did before waiting — load brig's modules, gather the image's facts for
 * the prompt (OS, tools on PATH, language versions, packages: the same for every run in the
 * image) — depends on no run. On the go it reads the run's environment from
 * /workspace/.brig/env.json (in the same nonce-checked assignment as the packet and the bearer),
 * removes the file, and replaces its whole environment with exactly that one (the cold path's:
 * the spec's variables, PATH, HOSTNAME), so whatever its tools start sees what a cold agent's
 * tools see; only then does it read the packet and the bearer, as the cold runtime does. It is
 * the same executable as the cold runtime (execute-only node: non-dumpable from its exec on,
 * which tool-bound.ts reads back before a tool may start a process).
 * Threat: run data in a slot before its run (a previous run's, or one another jail planted); an
 * environment that is not the cold path's; a go before the run's files are there. Trusts: the
 * waiter, PID 1 of its jail, which sends the go (SIGUSR2) only after it unpacked the pool's
 * assignment and checked its nonce, with nothing else running in the jail before that; the
 * kernel. Fails closed: an environment file that is missing, unreadable or not an object of
 * identifier → string is set-up failure (exit 2), as a missing packet is; a signal other than
 * the go (TERM, KILL) ends the process with no handler of ours, and the pool discards a slot
 * whose runtime is gone before its run.
 */
import { readFileSync, rmSync } from 'node:fs';
import { PATHS } from '../paths.js';
import { gatherImageFacts, pathDirsOf, type ImageFacts } from './workspace-info.js';

/** The argv flag the waiter starts a pre-started runtime with. */
export const PRESTART_FLAG = '--prestarted';
/** The line it writes on stderr once it waits for its go (the pool counts the slot ready only after it). */
export const PRESTART_READY = 'brig-agent: pre-started';
/** The go: sent by the waiter once the run's inputs are unpacked. */
export const PRESTART_GO = 'SIGUSR2';

const NAME = /^[A-Za-z_][A-Za-z0-9_]*$/;

export interface Prestarted {
  /** The image's facts, when they hold for the run's environment (its PATH the one they were gathered along). */
  facts: ImageFacts | undefined;
}

/**
 * Gathers the image's facts, says it is ready, waits for the go (the event loop idle: no CPU),
 * then applies the run's environment to `env` (the process's, handed over by the entry,
 * agent-runtime.ts). Throws (set-up failure) when the environment file is not the pool's.
 */
export async function waitForRun(o: { env: NodeJS.ProcessEnv; envFile?: string; stderr?: (s: string) => void }): Promise<Prestarted> {
  const started = { ...o.env };
  const facts = gatherImageFacts();
  const go = new Promise<void>((resolve) => {
    // A listener alone does not keep the loop alive: a timer does, until the go.
    const keep = setInterval(() => {}, 2 ** 30);
    process.once(PRESTART_GO, () => {
      clearInterval(keep);
      resolve();
    });
  });
  (o.stderr ?? ((s) => process.stderr.write(s)))(`${PRESTART_READY}\n`);
  await go;
  const file = o.envFile ?? PATHS.env;
  const env = parseRunEnv(readFileSync(file, 'utf8'));
  rmSync(file, { force: true });
  applyEnv(env, o.env);
  return { facts: factsHold(started, env) ? facts : undefined };
}

/** The run's environment as the pool wrote it: `{env: {NAME: value}}`, nothing else. */
export function parseRunEnv(text: string): Record<string, string> {
  const raw = JSON.parse(text) as unknown;
  const env = raw && typeof raw === 'object' && !Array.isArray(raw) ? (raw as { env?: unknown }).env : undefined;
  if (!env || typeof env !== 'object' || Array.isArray(env)) throw new Error('the run environment file is not {env: {…}}');
  const out: Record<string, string> = {};
  for (const [k, v] of Object.entries(env)) {
    if (!NAME.test(k) || typeof v !== 'string' || v.includes('\0')) throw new Error(`the run environment file has a bad entry (${k.slice(0, 40)})`);
    out[k] = v;
  }
  return out;
}

/** Replaces the whole environment (node writes through to the C environ its children inherit). */
export function applyEnv(env: Readonly<Record<string, string>>, target: NodeJS.ProcessEnv): void {
  for (const k of Object.keys(target)) delete target[k];
  for (const [k, v] of Object.entries(env)) target[k] = v;
}

/**
 * Whether facts gathered in the start environment are the ones a cold runtime would gather in
 * the run's: the same PATH directories, and no variable beside the run id that a version probe
 * could read differently. Otherwise they are gathered again after the go.
 */
export function factsHold(started: Readonly<Record<string, string | undefined>>, run: Readonly<Record<string, string>>): boolean {
  if (pathDirsOf(started.PATH).join(':') !== pathDirsOf(run.PATH).join(':')) return false;
  const keys = new Set([...Object.keys(started), ...Object.keys(run)].filter((k) => k !== 'BRIG_RUN_ID'));
  for (const k of keys) if (started[k] !== run[k]) return false;
  return true;
}

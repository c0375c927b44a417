import os from 'node:os';
import path from 'node:path';

/**
 * The only reader of process.env in brig. Everything else receives a BrigConfig.
 */
export interface BrigConfig {
  /** Root of all brig state: leases, runs, results, ledger, daemon socket. */
  home: string;
  /** Docker engine address as DOCKER_HOST gives it, or undefined for the default socket. */
  dockerHost: string | undefined;
  /** True in CI: a missing engine fails tests instead of skipping them. */
  ci: boolean;
  /** OpenAI-compatible model endpoint for Level 2 condensation; absent → Level 3. */
  model: { baseUrl: string; apiKey: string; model: string } | undefined;
}

export function loadConfig(env: NodeJS.ProcessEnv = process.env): BrigConfig {
  const home = env.BRIG_HOME && env.BRIG_HOME.length > 0 ? path.resolve(env.BRIG_HOME) : path.join(os.homedir(), '.brig');
  const model =
    env.BRIG_MODEL_BASE_URL && env.BRIG_MODEL_API_KEY
      ? { baseUrl: env.BRIG_MODEL_BASE_URL, apiKey: env.BRIG_MODEL_API_KEY, model: env.BRIG_MODEL ?? 'gpt-4o-mini' }
      : undefined;
  return {
    home,
    dockerHost: env.DOCKER_HOST && env.DOCKER_HOST.length > 0 ? env.DOCKER_HOST : undefined,
    ci: env.CI === 'true' || env.CI === '1',
    model,
  };
}

/** Fixed layout under the brig home. */
export function brigPaths(home: string) {
  return {
    home,
    leases: path.join(home, 'leases'),
    runs: path.join(home, 'runs'),
    results: path.join(home, 'results'),
    ledger: path.join(home, 'ledger'),
    brokers: path.join(home, 'brokers'),
    tmp: path.join(home, 'tmp'),
    socket: path.join(home, 'brig.sock'),
  };
}
export type BrigPaths = ReturnType<typeof brigPaths>;

import http from 'node:http';
import type { TestContext } from 'node:test';

function socketPath(): string | null {
  const h = process.env.DOCKER_HOST;
  if (!h) return '/var/run/docker.sock';
  if (h.startsWith('unix://')) return h.slice('unix://'.length);
  return null;
}

let cached: Promise<boolean> | undefined;

/** True when a Docker engine answers /_ping. */
export function engineAnswers(): Promise<boolean> {
  cached ??= new Promise((resolve) => {
    const sp = socketPath();
    if (!sp) return resolve(false);
    const req = http.get({ socketPath: sp, path: '/_ping', timeout: 3000 }, (res) => {
      res.resume();
      resolve(res.statusCode === 200);
    });
    req.on('error', () => resolve(false));
    req.on('timeout', () => {
      req.destroy();
      resolve(false);
    });
  });
  return cached;
}

/**
 * For tests that need a real engine. Never skips silently: outside CI a missing engine
 * skips with the reason; in CI (CI=true) it is a failure.
 * Returns false when the test was skipped (the caller should return).
 */
export async function requireEngine(t: TestContext): Promise<boolean> {
  if (await engineAnswers()) return true;
  const why = 'no Docker engine answers (run `make engine`)';
  if (process.env.CI === 'true' || process.env.CI === '1') throw new Error(`${why}; CI requires the engine`);
  t.skip(why);
  return false;
}

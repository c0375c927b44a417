import { execFileSync } from 'node:child_process';
import fs from 'node:fs';

export const CHROMIUM = '/usr/bin/chromium';
export const CHROMIUM_ARGS = ['--headless', '--no-sandbox', '--disable-gpu', '--disable-background-networking', '--disable-component-update', '--disable-sync'];

/**
 * Debian's chromium, installed with apt when missing (the tests install what they need). In CI
 * a missing browser that cannot be installed fails the test; elsewhere it is a skip that says why.
 */
export function ensureChromium(t: { skip(msg: string): void }): boolean {
  if (fs.existsSync(CHROMIUM)) return true;
  const apt = (args: string[]) => execFileSync('apt-get', args, { stdio: 'ignore', env: { ...process.env, DEBIAN_FRONTEND: 'noninteractive' }, timeout: 600_000 });
  try {
    try {
      apt(['install', '-y', '-qq', 'chromium']);
    } catch {
      apt(['update', '-qq']); // a fresh machine may have no package lists yet
      apt(['install', '-y', '-qq', 'chromium']);
    }
  } catch (e) {
    if (process.env.CI === 'true' || process.env.CI === '1') throw new Error(`chromium is missing and apt-get could not install it: ${String(e)}`);
    t.skip('chromium is missing and could not be installed (apt-get install chromium)');
    return false;
  }
  return fs.existsSync(CHROMIUM);
}

/**
 * undici, loaded on its first use rather than with models/: a supervisor that never calls a
 * model — a one-shot `brig spawn -- ARGV`, a daemon serving only command children — does not
 * load its ~110 modules (issue 34: they were a sixth of a one-shot spawn's module load).
 * The package is CommonJS, so `require` gives the very instance an `import` would.
 */
import { createRequire } from 'node:module';
import type * as Undici from 'undici';

const require = createRequire(import.meta.url);

export function undici(): typeof Undici {
  return require('undici') as typeof Undici;
}

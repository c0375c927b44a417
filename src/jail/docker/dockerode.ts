/**
 * dockerode, without the two parts brig never calls loaded up front: its BuildKit session
 * (`lib/session.js`: @grpc/grpc-js, @grpc/proto-loader, protobufjs) and docker-modem's SSH
 * transport (`lib/ssh.js`: ssh2). Both are required at the top of their packages although
 * only `docker.buildImage({version: '2'})` and an `ssh://` engine call them; together they were
 * ~60 % of dockerode's load and a tenth of a one-shot `brig spawn` (issue 34).
 *
 * How: before dockerode is first required, each of the two files is entered in the CommonJS
 * cache as a stand-in whose export (a function in both) requires the real file on its first
 * call and forwards to it. Nothing else changes: the same dockerode, the same modem, the same
 * requests; an `ssh://` host still works (ssh2 loads on its first connection).
 * In the full bundle (dist/full/main.cjs) this module is dockerode itself, folded in, and
 * scripts/bundle-full.mjs makes the same two stand-ins at build time (its LAZY files).
 * Fails: loudly — a stand-in that cannot load its real file throws that require's error.
 */
import Module, { createRequire } from 'node:module';
import type Dockerode from 'dockerode';

const require = createRequire(import.meta.url);

/** `file` as a stand-in whose function export requires the real file on its first call. */
function deferFunctionModule(file: string): void {
  if (require.cache[file]) return; // loaded already (the real file): nothing to defer
  let real: ((...a: unknown[]) => unknown) | undefined;
  const load = () => {
    if (real) return real;
    delete require.cache[file];
    real = require(file) as (...a: unknown[]) => unknown;
    return real;
  };
  const stand = new Module(file);
  stand.filename = file;
  stand.loaded = true;
  stand.exports = function deferred(this: unknown, ...a: unknown[]) {
    return load().apply(this, a);
  };
  require.cache[file] = stand;
}

const dockerodeMain = require.resolve('dockerode');
deferFunctionModule(createRequire(dockerodeMain).resolve('./session.js'));
deferFunctionModule(createRequire(createRequire(dockerodeMain).resolve('docker-modem')).resolve('./ssh.js'));

const Docker = require('dockerode') as typeof Dockerode;
export default Docker;

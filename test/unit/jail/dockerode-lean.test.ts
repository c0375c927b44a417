/**
 * dockerode as brig loads it (src/jail/docker/dockerode.ts): its BuildKit session (grpc) and
 * docker-modem's SSH transport (ssh2) are not loaded with it, and each loads — and is the real
 * one — on its first call. In a fresh process: the CommonJS cache is what is checked.
 */
import { test } from 'node:test';
import assert from 'node:assert/strict';
import { execFileSync } from 'node:child_process';
import path from 'node:path';

const ROOT = path.resolve(import.meta.dirname, '../../..');

const SCRIPT = `
import { createRequire } from 'node:module';
const { default: Docker } = await import('./src/jail/docker/dockerode.ts');
const require = createRequire(import.meta.url);
const loaded = (pkg) => Object.keys(require.cache).some((f) => f.includes('/node_modules/' + pkg + '/'));
const out = { docker: typeof new Docker({ socketPath: '/nonexistent.sock' }).getContainer, before: { grpc: loaded('@grpc/grpc-js'), ssh2: loaded('ssh2') } };
// docker-modem's ssh.js: called, it makes its ssh2 client and an http.Agent (no connection yet).
const modemDir = require.resolve('docker-modem', { paths: [require.resolve('dockerode')] });
const agent = createRequire(modemDir)('./ssh.js')({ host: '127.0.0.1' });
out.ssh = { agent: agent.constructor.name, ssh2: loaded('ssh2') };
// dockerode's session.js: called, it dials the engine through the modem it is given.
let dialed;
createRequire(require.resolve('dockerode'))('./session.js')({ modem: { dial: (o) => (dialed = o.path) } }, undefined, () => {});
out.session = { dialed, grpc: loaded('@grpc/grpc-js') };
console.log(JSON.stringify(out));
`;

test('dockerode loads without grpc and ssh2; each loads, the real one, on its first call', () => {
  const out = JSON.parse(execFileSync(process.execPath, ['--import', 'tsx', '--input-type=module', '-e', SCRIPT], { cwd: ROOT, encoding: 'utf8' })) as Record<string, unknown>;
  assert.deepEqual(out, {
    docker: 'function',
    before: { grpc: false, ssh2: false },
    ssh: { agent: 'Agent', ssh2: true },
    session: { dialed: '/session', grpc: true },
  });
});

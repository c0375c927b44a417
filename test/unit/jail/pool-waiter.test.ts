/**
 * The warm pool's waiter and assignment script (jail/docker/pool-waiter.ts), run by the same static
 * busybox the child image holds: an argv or environment value of any content (quotes, `$`,
 * backticks, newlines, a leading dash) reaches the exec'd program byte for byte, never as
 * shell syntax, and the program's environment is exactly the spec's plus the engine's
 * HOSTNAME. The waiter itself is run end to end on a real FIFO with a tar of inputs.
 */
import { test } from 'node:test';
import assert from 'node:assert/strict';
import { execFile, spawn } from 'node:child_process';
import fs from 'node:fs';
import os from 'node:os';
import path from 'node:path';
import { promisify } from 'node:util';
import { readShapes, shapeKey } from '../../../src/jail/docker/pool-shapes.js';
import { assignmentHeader, assignScript, shQuote, waiterScript } from '../../../src/jail/docker/pool-waiter.js';

const NONCE = '0123456789abcdef0123456789abcdef';
const WAITER = waiterScript(NONCE);
import { inputsArchive } from '../../../src/jail/docker/docker-jail.js';

const run = promisify(execFile);
const BUSYBOX = '/bin/busybox';

/** busybox-static is a host dependency (make deps): missing, a skip with the reason; in CI a failure. */
function noBusybox(t: { skip: (why: string) => void }): boolean {
  if (fs.existsSync(BUSYBOX)) return false;
  if (process.env.CI === 'true' || process.env.CI === '1') throw new Error(`no static busybox at ${BUSYBOX}; CI requires it (make deps)`);
  t.skip('no static busybox (make deps)');
  return true;
}

const HOSTILE = ["it's", '$(touch /tmp/pwned-by-brig)', '`id`', 'a\nb', '-x', '"q"', '\\', '$HOME', '*', ' spaced ', '', 'ünï'];

test('shQuote: any string without NUL is one word for sh, byte for byte', async (t) => {
  if (noBusybox(t)) return;
  for (const s of HOSTILE) {
    const { stdout } = await run(BUSYBOX, ['sh', '-c', `printf '%s' ${shQuote(s)}`], { env: {} });
    assert.equal(stdout, s, JSON.stringify(s));
  }
});

test('assignScript: the exec\'d argv and environment are the spec\'s exactly, hostile content included', async (t) => {
  if (noBusybox(t)) return;
  const marker = '/tmp/pwned-by-brig';
  fs.rmSync(marker, { force: true });
  // The program prints its own argv (NUL-separated) then its environment (NUL-separated).
  const argv = [BUSYBOX, 'sh', '-c', 'for a in "$@"; do printf "%s\\0" "$a"; done; printf "\\1"; env -0', 'prog', ...HOSTILE];
  const env = { BRIG_RUN_ID: 'r-1', HOME: '/workspace', ODD: "it's $(id) `x`\nline" };
  // The waiter's own environment as the slot's container holds it, plus what a shell adds.
  const script = assignScript({ argv, env });
  const { stdout } = await run(BUSYBOX, ['sh', '-c', `s=${shQuote(script)}; eval "$s"`], { env: { HOME: '/workspace', PATH: '/bin:/usr/bin', HOSTNAME: 'brig', SLOT_ONLY: 'x' } });
  const [args, envOut] = stdout.split('\x01');
  assert.deepEqual(args!.split('\0').slice(0, -1), HOSTILE, 'each argument arrived as given');
  const got = Object.fromEntries(envOut!.split('\0').filter(Boolean).map((kv) => [kv.slice(0, kv.indexOf('=')), kv.slice(kv.indexOf('=') + 1)]));
  // SLOT_ONLY stands for a variable the pool did not set: the script unsets only what it knows.
  assert.deepEqual(
    Object.keys(got).filter((k) => k !== 'SLOT_ONLY' && k !== 'PWD' && k !== 'SHLVL').sort(),
    ['BRIG_RUN_ID', 'HOME', 'HOSTNAME', 'ODD', 'PATH'],
  );
  assert.equal(got.ODD, env.ODD, 'an env value with quotes, $() and a newline is a value');
  assert.equal(got.PATH, '/bin:/usr/bin', 'PATH as render sets it when the spec gives none');
  assert.equal(got.HOSTNAME, 'brig');
  assert.equal(fs.existsSync(marker), false, 'no command substitution ran');
});

test('the waiter: blocks on its FIFO, unpacks the inputs as given (modes kept, umask 022), drops the assignment, execs the argv', async (t) => {
  if (noBusybox(t)) return;
  const root = await fs.promises.mkdtemp(path.join(os.tmpdir(), 'brig-waiter-'));
  t.after(() => fs.promises.rm(root, { recursive: true, force: true }));
  const ws = path.join(root, 'workspace');
  const runDir = path.join(root, 'run');
  await fs.promises.mkdir(ws);
  await fs.promises.mkdir(runDir);
  await run('mkfifo', ['-m', '0600', path.join(runDir, 'go')]);
  // The waiter with the jail's paths moved under the temp root.
  const waiter = WAITER.replaceAll('/workspace', ws).replaceAll('/run/brig', runDir);
  const child = spawn(BUSYBOX, ['sh', '-c', waiter], { env: { PATH: '/bin:/usr/bin' }, stdio: ['ignore', 'pipe', 'pipe'] });
  let out = '';
  let err = '';
  child.stdout.on('data', (b: Buffer) => (out += b));
  child.stderr.on('data', (b: Buffer) => (err += b));
  const exited = new Promise<number | null>((r) => child.on('exit', r));
  await new Promise<void>((r) => child.stderr.once('data', () => r()));
  assert.match(err, /brig-pool: ready/);
  const probe = `ls -la ${ws}/.brig | awk 'NR>1 {print $1, $NF}'; cat ${ws}/.brig/token; echo; echo "umask=$(umask)"`;
  const archive = await inputsArchive([
    { path: '.brig/packet.json', data: '{"v":1}', mode: 0o444 },
    { path: '.brig/token', data: 'secret', mode: 0o400 },
    { path: '.brig/assign.sh', data: assignScript({ argv: [BUSYBOX, 'sh', '-c', probe], env: { HOME: ws } }), mode: 0o444 },
  ]);
  // The nonce goes first, on a line of its own: the waiter's own read takes it, tar the rest.
  await fs.promises.writeFile(path.join(runDir, 'go'), Buffer.concat([Buffer.from(assignmentHeader(NONCE)), archive]));
  assert.equal(await exited, 0, err);
  assert.match(out, /^-r--r--r-- packet\.json$/m);
  assert.match(out, /^-r-------- token$/m);
  assert.doesNotMatch(out, /assign\.sh/, 'the assignment is removed before the exec');
  assert.doesNotMatch(out, /nonce/, 'the nonce was never a file');
  assert.match(out, /^secret$/m);
  assert.match(out, /^umask=0022$/m);
});

test('the waiter exits 70 when its FIFO gives no valid archive (the pool then destroys the slot)', async (t) => {
  if (noBusybox(t)) return;
  const root = await fs.promises.mkdtemp(path.join(os.tmpdir(), 'brig-waiter-'));
  t.after(() => fs.promises.rm(root, { recursive: true, force: true }));
  await fs.promises.mkdir(path.join(root, 'workspace'));
  await fs.promises.mkdir(path.join(root, 'run'));
  await run('mkfifo', ['-m', '0600', path.join(root, 'run', 'go')]);
  const waiter = WAITER.replaceAll('/workspace', path.join(root, 'workspace')).replaceAll('/run/brig', path.join(root, 'run'));
  const child = spawn(BUSYBOX, ['sh', '-c', waiter], { env: { PATH: '/bin:/usr/bin' }, stdio: 'ignore' });
  const exited = new Promise<number | null>((r) => child.on('exit', r));
  await fs.promises.writeFile(path.join(root, 'run', 'go'), 'not a tar');
  assert.equal(await exited, 70);
});

for (const [what, nonce] of [['without a nonce', undefined], ['with another slot\'s nonce', 'ffffffffffffffffffffffffffffffff']] as const) {
  test(`the waiter never runs an assignment ${what}: exit 70, nothing of it ran`, async (t) => {
    if (noBusybox(t)) return;
    const root = await fs.promises.mkdtemp(path.join(os.tmpdir(), 'brig-waiter-'));
    t.after(() => fs.promises.rm(root, { recursive: true, force: true }));
    const ws = path.join(root, 'workspace');
    await fs.promises.mkdir(ws);
    await fs.promises.mkdir(path.join(root, 'run'));
    await run('mkfifo', ['-m', '0600', path.join(root, 'run', 'go')]);
    const waiter = WAITER.replaceAll('/workspace', ws).replaceAll('/run/brig', path.join(root, 'run'));
    const child = spawn(BUSYBOX, ['sh', '-c', waiter], { env: { PATH: '/bin:/usr/bin' }, stdio: 'ignore' });
    const exited = new Promise<number | null>((r) => child.on('exit', r));
    const marker = path.join(root, 'ran');
    const archive = await inputsArchive([{ path: '.brig/assign.sh', data: assignScript({ argv: [BUSYBOX, 'touch', marker], env: {} }), mode: 0o444 }]);
    await fs.promises.writeFile(path.join(root, 'run', 'go'), nonce ? Buffer.concat([Buffer.from(assignmentHeader(nonce)), archive]) : archive);
    assert.equal(await exited, 70);
    assert.equal(fs.existsSync(marker), false, 'the forged assignment did not run');
    assert.equal(fs.existsSync(path.join(ws, '.brig')), false, 'nothing of it was unpacked: the nonce is checked first');
  });
}

test('shapeKey: every limit and the image tell shapes apart', () => {
  const l = { memoryMb: 512, cpu: 1, pids: 128, tmpfsMb: 64, diskMb: 1024 };
  const base = shapeKey('img:a', l);
  assert.notEqual(shapeKey('img:b', l), base);
  for (const k of Object.keys(l) as (keyof typeof l)[]) assert.notEqual(shapeKey('img:a', { ...l, [k]: l[k] + 1 }), base, k);
  assert.equal(shapeKey('img:a', { ...l }), base);
});

test('readShapes: only full sets of positive finite limits survive; a missing or broken file is no shapes', async (t) => {
  const dir = await fs.promises.mkdtemp(path.join(os.tmpdir(), 'brig-shapes-'));
  t.after(() => fs.promises.rm(dir, { recursive: true, force: true }));
  const file = path.join(dir, 'warm-shapes.json');
  assert.deepEqual(readShapes(file), [], 'missing');
  fs.writeFileSync(file, '{not json');
  assert.deepEqual(readShapes(file), [], 'broken');
  const good = { memoryMb: 512, cpu: 1, pids: 128, tmpfsMb: 64, diskMb: 1024 };
  fs.writeFileSync(file, JSON.stringify([good, { ...good, cpu: -1 }, { ...good, pids: 'many' }, { memoryMb: 512 }, null, { ...good, extra: 1 }]));
  assert.deepEqual(readShapes(file), [good, good], 'the bad entries dropped, unknown fields too');
});

test('assignScript in a foreign image: a bare argv[0] is found along the run\'s PATH and exec\'d by its path (never busybox\'s applet), hostile names stay bytes; not found is 127', async (t) => {
  if (noBusybox(t)) return;
  const dir = fs.mkdtempSync(path.join(os.tmpdir(), 'brig-assign-'));
  t.after(() => fs.rmSync(dir, { recursive: true, force: true }));
  const bin = path.join(dir, 'image bin');
  fs.mkdirSync(bin);
  // `ls` is a busybox applet: the image's own ls must win over it.
  fs.writeFileSync(path.join(bin, 'ls'), '#!/bin/busybox sh\necho "image ls: $0 $*"\n', { mode: 0o755 });
  const hostile = "it's $(touch x)";
  fs.writeFileSync(path.join(bin, hostile), '#!/bin/busybox sh\necho "hostile ran: $1"\n', { mode: 0o755 });
  const foreign = { env: { IMAGE_ONLY: 'kept', PATH: 'not this' }, path: `/nonexistent:${bin}`, slotEnvKeys: ['SLOT_IMAGE'] };
  const go = (argv: string[]) =>
    run(BUSYBOX, ['sh', '-c', `s=${shQuote(assignScript({ argv, env: { HOME: '/workspace' } }, foreign))}; eval "$s"`], { env: { SLOT_IMAGE: 'gone', HOSTNAME: 'brig', HOME: '/workspace' }, cwd: dir }).then(
      (r) => ({ code: 0, ...r }),
      (e: { code: number; stdout: string; stderr: string }) => ({ code: e.code, stdout: e.stdout, stderr: e.stderr }),
    );
  const ls = await go(['ls', '-l']);
  assert.equal(ls.stdout, `image ls: ${bin}/ls -l\n`, 'the image\'s program, by its path');
  const odd = await go([hostile, '$HOME']);
  assert.equal(odd.stdout, 'hostile ran: $HOME\n');
  assert.equal(fs.existsSync(path.join(dir, 'x')), false, 'the name never ran as shell code');
  const env = await go(['env']);
  assert.equal(env.code, 127, 'env is not on the run\'s PATH here: not busybox\'s env applet either');
  assert.match(env.stderr, /brig: env: not found in PATH/);
  const shown = await go([`${BUSYBOX}`, 'env']);
  const vars = Object.fromEntries(shown.stdout.trim().split('\n').map((kv) => [kv.slice(0, kv.indexOf('=')), kv.slice(kv.indexOf('=') + 1)]));
  assert.equal(vars.IMAGE_ONLY, 'kept', 'the image ENV the contract kept');
  assert.equal(vars.PATH, `/nonexistent:${bin}`, 'the image\'s PATH, not its ENV line');
  assert.equal(vars.SLOT_IMAGE, undefined, 'what the slot\'s waiter held from the image is unset first');
});

/**
 * Any image, the same jail (issue 24 item 1): brig's child image, a busybox-only image FROM
 * scratch, a Debian bookworm minbase and a musl image with no glibc, each built here from
 * Debian's packages, run command children and brig's own runtime (node, through its own loader
 * from the read-only runtime bind) under the same hardened, verified profile — proven from
 * inside each one with the doctor's probe.
 */
import { after, before, test } from 'node:test';
import assert from 'node:assert/strict';
import { execFile } from 'node:child_process';
import fs from 'node:fs';
import net from 'node:net';
import os from 'node:os';
import path from 'node:path';
import { promisify } from 'node:util';
import { requireEngine } from '../../helpers/engine.js';
import { busyboxImage, debianImage, mmdebstrapTool, muslImage, muslTools } from '../../helpers/foreign-images.js';
import { judgeProbe, parseProbe, PROBE_SCRIPT, hostAddresses } from '../../../src/jail/probe.js';
import { LABELS } from '../../../src/jail/index.js';
import { isBrigError } from '../../../src/util/errors.js';
import { driver, ROOT, runToEnd, spec, sweepOwn } from './helpers.js';

const run = promisify(execFile);
after(sweepOwn);

const NODE = '/opt/brig/bin/node';
const CAPS = { perFileBytes: 1 << 20, perRunBytes: 1 << 22, maxEntries: 100 };

let port = 0;
let server: net.Server | undefined;
before(async () => {
  server = net.createServer((s) => s.destroy());
  await new Promise<void>((r) => server!.listen(0, '127.0.0.1', () => r()));
  port = (server.address() as net.AddressInfo).port;
});
after(() => server?.close());

interface Case {
  name: string;
  image: () => Promise<string | undefined>;
  skip?: () => string | null;
  /** A command child that writes out/x.txt with the image's own tools. */
  writer: string[];
}

const CASES: Case[] = [
  { name: 'child image', image: async () => undefined, writer: ['sh', '-c', 'echo hi > out/x.txt'] },
  { name: 'busybox-only', image: busyboxImage, writer: ['sh', '-c', 'echo hi > out/x.txt'] },
  { name: 'debian bookworm', image: debianImage, skip: () => (mmdebstrapTool().ok ? null : 'mmdebstrap is not installed'), writer: ['bash', '-c', 'echo hi > out/x.txt'] },
  { name: 'musl (no glibc)', image: muslImage, skip: () => { const t = muslTools(); return t.ok ? null : t.why; }, writer: ['/bin/probe'] },
];

async function collect(s: Parameters<typeof runToEnd>[0]): Promise<{ exit: number; stdout: string; stderr: string; files: Record<string, string>; verified: unknown }> {
  const dest = fs.mkdtempSync(path.join(os.tmpdir(), 'brig-fi-'));
  try {
    let files: Record<string, string> = {};
    let verified: unknown;
    const { exit, tails } = await runToEnd(s, async (j) => {
      verified = j.verified;
      const rep = await j.collect(path.join(dest, 'out'), CAPS);
      files = Object.fromEntries(rep.files.map((f) => [f.path, fs.readFileSync(path.join(rep.dir, f.path), 'utf8')]));
    });
    return { exit: exit.exitCode, stdout: tails.stdoutTail, stderr: tails.stderrTail, files, verified };
  } finally {
    fs.rmSync(dest, { recursive: true, force: true });
  }
}

for (const c of CASES) {
  // req: jail:verified
  test(`[INV-2] ${c.name}: a command child writes /workspace/out as the jail user`, async (t) => {
    if (!(await requireEngine(t))) return;
    const why = c.skip?.();
    if (why) return void t.skip(`${c.name}: ${why}`);
    const image = await c.image();
    const r = await collect(spec('fi-cmd', c.writer, image ? { image } : {}));
    assert.equal(r.exit, 0, r.stderr);
    assert.match(r.files['x.txt'] ?? '', /^hi/, `out/x.txt: ${JSON.stringify(r.files)} ${r.stderr}`);
    if (c.name.startsWith('musl')) assert.match(r.files['x.txt']!, /uid=65534/);
  });

  // req: jail:verified
  test(`[INV-2] ${c.name}: brig's runtime runs in it, and the probe from inside finds the whole profile`, async (t) => {
    if (!(await requireEngine(t))) return;
    const why = c.skip?.();
    if (why) return void t.skip(`${c.name}: ${why}`);
    const image = await c.image();
    const limits = { memoryMb: 96, pids: 48, cpu: 0.5, tmpfsMb: 8, diskMb: 64 };
    const r = await collect(spec('fi-probe', [NODE, '-e', PROBE_SCRIPT, String(port), ...hostAddresses()], { limits, ...(image ? { image } : {}) }));
    assert.equal(r.exit, 0, r.stderr);
    const report = parseProbe(r.stdout);
    assert.ok(report, `probe output unreadable: ${r.stdout} ${r.stderr}`);
    assert.deepEqual(judgeProbe(report, { memoryMb: 96, pids: 48, cpu: 0.5, diskMb: 64 }).filter((x) => !x.ok), []);
    assert.equal(report.uid, 65534);
    const v = r.verified as { foreignImage?: { runtime: string; overridden: string[] }; binds: { target: string; readOnly: boolean }[] };
    if (image) {
      assert.ok(v.foreignImage, 'a foreign image is named on the verified summary');
      assert.deepEqual(v.binds.find((b) => b.target === '/opt/brig'), { target: '/opt/brig', readOnly: true }, 'the runtime is bound read-only');
      assert.ok(report.mounts.some((m) => /^\/opt\/brig \S+ ro\b/.test(m)), `the runtime is read-only inside: ${report.mounts.join(' | ')}`);
    } else {
      assert.equal(v.foreignImage, undefined, 'the child image carries its runtime itself');
    }
  });
}

// req: jail:verified
test('[INV-2] the runtime is brig\'s, read-only, and needs nothing of a musl image: no glibc there, node still loads', async (t) => {
  if (!(await requireEngine(t))) return;
  const tools = muslTools();
  if (!tools.ok) return void t.skip(tools.why);
  const image = await muslImage();
  const script = [
    "const fs = require('node:fs');",
    "const w = (p) => { try { fs.writeFileSync(p, 'x'); return 'written'; } catch (e) { return e.code; } };",
    "console.log(JSON.stringify({ glibc: fs.existsSync('/lib/x86_64-linux-gnu') || fs.existsSync('/lib64'), musl: fs.existsSync('/lib/ld-musl-x86_64.so.1'),",
    "  runtimeWrite: w('/opt/brig/bin/node'), imageWrite: w('/bin/probe'), version: process.version }));",
  ].join('\n');
  const r = await collect(spec('fi-musl', [NODE, '-e', script], { image }));
  assert.equal(r.exit, 0, r.stderr);
  const seen = JSON.parse(r.stdout.trim().split('\n').pop()!) as Record<string, unknown>;
  assert.deepEqual(seen, { glibc: false, musl: true, runtimeWrite: 'EROFS', imageWrite: 'EROFS', version: process.version });
});

// req: jail:verified
test('[INV-2] an image\'s ENTRYPOINT, USER, WORKDIR and HEALTHCHECK are overridden, named, and read back', async (t) => {
  if (!(await requireEngine(t))) return;
  const image = await busyboxImage();
  const r = await collect(spec('fi-over', ['sh', '-c', 'echo "$(id -u) $(pwd) $#" ; cat /proc/1/cmdline | tr "\\0" " "'], { image }));
  assert.equal(r.exit, 0, r.stderr);
  const [first, second] = r.stdout.trim().split('\n');
  assert.equal(first, '65534 /workspace 0', 'the jail user in /workspace, no ENTRYPOINT wrapping the argv');
  assert.match(second ?? '', /^sh -c /, 'PID 1 is the run\'s argv itself');
  const v = r.verified as { foreignImage: { overridden: string[] }; user: string };
  assert.deepEqual([...v.foreignImage.overridden].sort(), ['entrypoint', 'healthcheck', 'user', 'workdir']);
  assert.equal(v.user, '65534:65534');
});

// req: jail:verified
test('[INV-2] an image with a VOLUME outside /workspace or an ENV that steers brig\'s runtime is refused before the engine makes anything', async (t) => {
  if (!(await requireEngine(t))) return;
  const base = await busyboxImage();
  const bad: [string, string][] = [
    ['volume', 'VOLUME /data'],
    ['env', 'ENV LD_PRELOAD=/lib/evil.so'],
    ['env', 'ENV NODE_OPTIONS=--require=/evil.js'],
  ];
  for (const [what, line] of bad) {
    const tag = `brig-test-refused:${ROOT.toLowerCase()}-${what}-${bad.findIndex((b) => b[1] === line)}`;
    await new Promise<void>((resolve, reject) => {
      const p = execFile('docker', ['build', '-q', '-t', tag, '-'], (e) => (e ? reject(e) : resolve()));
      p.stdin!.end(`FROM ${base}\n${line}\nLABEL ${LABELS.managed.replace('managed', 'test')}=${ROOT}\n`);
    });
    t.after(() => run('docker', ['image', 'rm', '-f', tag]).catch(() => undefined));
    const s = spec(`fi-refuse-${what}`, ['sh', '-c', 'echo ran'], { image: tag });
    await assert.rejects(driver.create(s), (e) => isBrigError(e, 'image_refused') && (e.data as { what: string }).what === what);
    assert.deepEqual((await driver.listLabelled()).filter((x) => x.runId === s.runId), [], 'no container, volume or disk was made');
  }
});

// req: secrets:env-from-nothing
test('[INV-6] an image\'s harmless ENV reaches the child as the body says; brig\'s names keep brig\'s values', async (t) => {
  if (!(await requireEngine(t))) return;
  const base = await busyboxImage();
  const tag = `brig-test-env:${ROOT.toLowerCase()}`;
  await new Promise<void>((resolve, reject) => {
    const p = execFile('docker', ['build', '-q', '-t', tag, '-'], (e) => (e ? reject(e) : resolve()));
    p.stdin!.end(`FROM ${base}\nENV LANG=C.UTF-8 HOME=/root BRIG_RUN_ID=forged\n`);
  });
  t.after(() => run('docker', ['image', 'rm', '-f', tag]).catch(() => undefined));
  const s = spec('fi-env', ['sh', '-c', 'env | sort'], { image: tag, env: { HOME: '/workspace', BRIG_RUN_ID: 'r-1' } });
  const r = await collect(s);
  assert.equal(r.exit, 0, r.stderr);
  const env = r.stdout.trim().split('\n').filter((l) => !l.startsWith('PWD=') && !l.startsWith('SHLVL=') && !l.startsWith('_='));
  assert.deepEqual(env, ['BRIG_RUN_ID=r-1', 'HOME=/workspace', 'HOSTNAME=brig', 'LANG=C.UTF-8', 'PATH=/bin']);
  const v = r.verified as { foreignImage: { overridden: string[]; envKept: string[] } };
  assert.deepEqual(v.foreignImage.envKept, ['LANG']);
  assert.deepEqual([...v.foreignImage.overridden].filter((o) => o.startsWith('env:')).sort(), ['env:BRIG_RUN_ID', 'env:HOME']);
});

import { test, after } from 'node:test';
import assert from 'node:assert/strict';
import fs from 'node:fs';
import os from 'node:os';
import path from 'node:path';
import { requireEngine } from '../../helpers/engine.js';
import { isBrigError } from '../../../src/util/errors.js';
import { MAX_DEPTH } from '../../../src/jail/docker/collect.js';
import { DEFAULT_COLLECT_CAPS } from '../../../src/jail/index.js';
import { collectOutputs } from '../../../src/runs/launch.js';
import { FsResultStore } from '../../../src/results/index.js';
import { resultsPort } from '../../../src/daemon/adapters.js';
import { runToEnd, spec, sweepOwn } from './helpers.js';

after(sweepOwn);

const CAPS = { perFileBytes: 1024 * 1024, perRunBytes: 4 * 1024 * 1024, maxEntries: 1000 };

async function tmp(t: { after: (fn: () => void) => void }): Promise<string> {
  const d = await fs.promises.mkdtemp(path.join(os.tmpdir(), 'brig-collect-it-'));
  t.after(() => fs.rmSync(d, { recursive: true, force: true }));
  return d;
}

// req: results:no-symlink results:no-escape
test('[INV-4] a hostile child output tree yields regular files only, inside the destination', async (t) => {
  if (!(await requireEngine(t))) return;
  const base = await tmp(t);
  const dest = path.join(base, 'ref');
  const sh = [
    'mkdir -p out/sub',
    'echo hello > out/a.txt',
    'echo deep > out/sub/b.txt',
    'ln -s /etc/passwd out/passwd-link',
    'ln -s ../../../../../tmp out/escape-dir',
    'mkfifo out/fifo',
    'chmod 4755 out/sub/b.txt',
  ].join(' && ');
  const { exit, tails } = await runToEnd(spec('hostile', ['sh', '-c', sh]), async (jail) => {
    const rep = await jail.collect(dest, CAPS);
    assert.deepEqual(rep.files.map((f) => f.path).sort(), ['a.txt', 'sub/b.txt']);
    assert.deepEqual(rep.skipped.map((s) => s.reason).sort(), ['fifo', 'symlink', 'symlink']);
    assert.equal(rep.totalBytes, 6 + 5);
  });
  assert.equal(exit.exitCode, 0, tails.stderrTail);
  assert.equal(fs.readFileSync(path.join(dest, 'a.txt'), 'utf8'), 'hello\n');
  assert.equal(fs.statSync(path.join(dest, 'sub/b.txt')).mode & 0o7777, 0o644);
  const all = fs.readdirSync(dest, { recursive: true }).map(String).sort();
  assert.deepEqual(all, ['a.txt', 'sub', 'sub/b.txt']);
});

// req: results:caps-refuse
test('[INV-4] a child output file over the per-file cap is skipped whole (too_large), never cut; the file beside it is kept; over the per-run cap the collection is refused whole', async (t) => {
  if (!(await requireEngine(t))) return;
  const base = await tmp(t);
  const dest = path.join(base, 'ref');
  await runToEnd(spec('big', ['sh', '-c', 'mkdir -p out && echo small > out/a && dd if=/dev/zero of=out/big bs=1024 count=2048 2>/dev/null && dd if=/dev/zero of=out/c bs=1024 count=900 2>/dev/null']), async (jail) => {
    const rep = await jail.collect(dest, CAPS);
    assert.deepEqual(rep.files.map((f) => `${f.path} ${f.bytes}`), ['a 6', `c ${900 * 1024}`]);
    assert.deepEqual(rep.skipped, [{ path: 'big', reason: 'too_large' }]);
    assert.deepEqual(rep.tooLarge, [{ path: 'big', bytes: 2048 * 1024 }]);
    // Each file under the per-file cap, together over the per-run cap: refused, nothing kept.
    await assert.rejects(jail.collect(path.join(base, 'run-cap'), { ...CAPS, perRunBytes: 512 * 1024 }), (e) => isBrigError(e, 'ref_too_large') && /per-run cap/.test(e.message));
  });
  assert.deepEqual(fs.readdirSync(base), ['ref']);
  assert.deepEqual(fs.readdirSync(dest).sort(), ['a', 'c']);
});

// req: results:caps-refuse
test('[INV-4] a child that spends the run cap on directories instead of bytes is refused: 100 empty files at the end of 10-deep chains of their own', async (t) => {
  if (!(await requireEngine(t))) return;
  const base = await tmp(t);
  const sh = 'for i in $(seq 1 100); do d=out/c$i/a/b/c/d/e/f/g/h/i; mkdir -p $d && : > $d/empty; done';
  await runToEnd(spec('dirs', ['sh', '-c', sh]), async (jail) => {
    // 1,000 directories at 4 KiB of the cap each: over 1 MiB, with no byte in any file.
    await assert.rejects(jail.collect(path.join(base, 'small'), { ...CAPS, perRunBytes: 1024 * 1024 }), (e) => isBrigError(e, 'ref_too_large') && /directories/.test(e.message));
    // The control: a cap that pays for them collects all 100.
    const rep = await jail.collect(path.join(base, 'fits'), CAPS);
    assert.equal(rep.files.length, 100);
  });
  assert.deepEqual(fs.readdirSync(base), ['fits']);
});

test('a child that writes no output collects to an empty directory', async (t) => {
  if (!(await requireEngine(t))) return;
  const base = await tmp(t);
  await runToEnd(spec('none', ['sh', '-c', 'rmdir out; true']), async (jail) => {
    const rep = await jail.collect(path.join(base, 'ref'), CAPS);
    assert.deepEqual(rep.files, []);
  });
  assert.deepEqual(fs.readdirSync(path.join(base, 'ref')), []);
});

// req: results:no-symlink
test('[INV-4] an out/ replaced by a symlink to elsewhere collects nothing from elsewhere', async (t) => {
  if (!(await requireEngine(t))) return;
  const base = await tmp(t);
  await runToEnd(spec('outlink', ['sh', '-c', 'rm -rf out && ln -s /etc out']), async (jail) => {
    const rep = await jail.collect(path.join(base, 'ref'), CAPS);
    assert.deepEqual(rep.files, []);
    assert.deepEqual(rep.skipped.map((s) => s.reason), ['symlink']);
  });
  assert.deepEqual(fs.readdirSync(path.join(base, 'ref')), []);
});

/** Every entry under dir, by lstat: kind and path. Never follows a link. */
function walkKinds(dir: string, rel = ''): string[] {
  const out: string[] = [];
  for (const name of fs.readdirSync(path.join(dir, rel))) {
    const p = path.posix.join(rel, name);
    const st = fs.lstatSync(path.join(dir, p));
    out.push(`${st.isDirectory() ? 'dir' : st.isFile() ? 'file' : 'OTHER'} ${p}`);
    if (st.isDirectory()) out.push(...walkKinds(dir, p));
  }
  return out.sort();
}

const PLANT = String.raw`
const fs = require('node:fs'), cp = require('node:child_process');
const r = {};
fs.mkdirSync('out/sub', { recursive: true });
fs.writeFileSync('secret-outside-out.txt', 'workspace-secret');
fs.writeFileSync('out/a.txt', 'hello');
fs.symlinkSync('/etc/passwd', 'out/passwd-link');
fs.symlinkSync('../../..', 'out/up');
fs.symlinkSync('../secret-outside-out.txt', 'out/secret-link');
try { fs.linkSync('/etc/passwd', 'out/hard-etc'); r.hardEtc = 'ok'; } catch (e) { r.hardEtc = e.code; }
fs.linkSync('secret-outside-out.txt', 'out/hard-outside');
fs.linkSync('out/a.txt', 'out/sub/hard-inside');
cp.execFileSync('mkfifo', ['out/fifo']);
fs.writeFileSync('out/a..b.txt', 'dots');
fs.writeFileSync('out/..hidden', 'dots2');
fs.writeFileSync('out/line\nbreak', 'nl');
fs.writeFileSync('out/\x1b[31mred\x1b[0m', 'esc');
console.log(JSON.stringify(r));
`;

// req: results:no-symlink
test('[INV-4] materialization against a hostile child: links, fifo, odd names, 100 GB sparse file, 10,000 nested dirs skipped; the supervisor stays up with bounded memory', async (t) => {
  if (!(await requireEngine(t))) return;
  const base = await tmp(t);
  const rssBefore = process.memoryUsage().rss;

  await t.test('links, hardlinks, a fifo and odd names: regular files only, nothing from outside the workspace', async () => {
    const dest = path.join(base, 'links');
    const { exit, tails } = await runToEnd(spec('plant', ['node', '-e', PLANT]), async (jail) => {
      const rep = await jail.collect(dest, CAPS);
      assert.deepEqual(rep.files.map((f) => f.path).sort(), ['..hidden', 'a..b.txt', 'a.txt', 'hard-outside']);
      assert.deepEqual(
        rep.skipped.map((s) => `${s.reason} ${s.path}`).sort(),
        ['fifo fifo', 'link sub/hard-inside', 'symlink passwd-link', 'symlink secret-link', 'symlink up', 'unsafe_name out/\\x1b[31mred\\x1b[0m', 'unsafe_name out/line\\x0abreak'],
      );
    });
    assert.equal(exit.exitCode, 0, tails.stderrTail);
    // A hardlink cannot cross from the image into the workspace volume.
    assert.notEqual((JSON.parse(tails.stdoutTail) as { hardEtc: string }).hardEtc, 'ok');
    // sub/ held only a skipped hardlink: directories are made only as the parents of collected files.
    assert.deepEqual(walkKinds(dest), ['file ..hidden', 'file a..b.txt', 'file a.txt', 'file hard-outside']);
    // The one hardlink whose first name lies outside out/ is still the child's own workspace file.
    assert.equal(fs.readFileSync(path.join(dest, 'hard-outside'), 'utf8'), 'workspace-secret');
    for (const f of walkKinds(dest).filter((k) => k.startsWith('file '))) {
      assert.doesNotMatch(fs.readFileSync(path.join(dest, f.slice(5)), 'utf8'), /root:x:0/, `${f} holds /etc/passwd`);
    }
    assert.deepEqual(fs.readdirSync(base), ['links'], 'nothing written beside the destination');
  });

  await t.test('a 100 GB sparse file is skipped (too_large) at its header, never streamed; the file beside it arrives', async () => {
    const dest = path.join(base, 'sparse');
    const sh = "const fs=require('fs'); fs.writeFileSync('out/small','x'); fs.closeSync(fs.openSync('out/sparse','w')); fs.truncateSync('out/sparse', 100 * 2 ** 30); console.log(fs.statSync('out/sparse').size)";
    const { exit, tails } = await runToEnd(spec('sparse', ['node', '-e', sh]), async (jail) => {
      const rep = await jail.collect(dest, CAPS);
      assert.deepEqual(rep.files.map((f) => f.path), ['small']);
      assert.deepEqual(rep.tooLarge, [{ path: 'sparse', bytes: 100 * 2 ** 30 }]);
    });
    assert.equal(exit.exitCode, 0, tails.stderrTail);
    assert.equal(tails.stdoutTail.trim(), String(100 * 2 ** 30), 'the child really made a 100 GB file');
    assert.deepEqual(fs.readdirSync(dest), ['small']);
  });

  await t.test('10,000 nested directories are skipped as one too_deep subtree; the file beside them arrives', async () => {
    const dest = path.join(base, 'deep');
    const js = "const fs=require('fs'); fs.writeFileSync('out/legit.txt', 'ok'); process.chdir('out'); for (let i = 0; i < 10000; i++) { fs.mkdirSync('d'); process.chdir('d'); } fs.writeFileSync('bottom', 'x'); console.log('made')";
    const { exit, tails } = await runToEnd(spec('deep', ['node', '-e', js], { limits: { memoryMb: 256, cpu: 1, pids: 64, tmpfsMb: 4, diskMb: 64 } }), async (jail) => {
      const rep = await jail.collect(dest, { ...CAPS, maxEntries: 100_000 });
      assert.deepEqual(rep.files.map((f) => f.path), ['legit.txt']);
      assert.deepEqual(rep.skipped.map((s) => s.reason), ['too_deep']);
      // The engine's own archive walk ends where the host path (/var/lib/docker/volumes/<volume>/
      // _data/out/d/d/…) reaches PATH_MAX: about 2,000 of the 10,000 levels arrive, never the bottom file.
      assert.ok(rep.skippedCount! > 1500 && rep.skippedCount! <= 10_000 - MAX_DEPTH + 1, `${rep.skippedCount} skipped: every directory the engine sent past the cap`);
    });
    assert.equal(exit.exitCode, 0, tails.stderrTail);
    assert.equal(tails.stdoutTail.trim(), 'made');
    assert.equal(fs.readFileSync(path.join(dest, 'legit.txt'), 'utf8'), 'ok');
  });

  // A memory bound, not a timing one: none of the above was buffered whole.
  const grew = process.memoryUsage().rss - rssBefore;
  assert.ok(grew < 200 * 1024 * 1024, `the supervisor grew by ${Math.round(grew / 1048576)} MB`);
  assert.deepEqual(fs.readdirSync(base).sort(), ['deep', 'links', 'sparse'], 'no temp directories left behind');
});

/** A child that is only hostile in shape, beside one real result. */
const SHAPES = String.raw`
const fs = require('node:fs');
fs.writeFileSync('out/answer.json', JSON.stringify({ answer: 42 }));
fs.mkdirSync('out/flood');
for (let i = 0; i < 10001; i++) fs.writeFileSync('out/flood/f' + String(i).padStart(5, '0'), '');
process.chdir('out');
for (let i = 0; i < 2040; i++) { fs.mkdirSync('d'); process.chdir('d'); }
fs.writeFileSync('bottom.txt', 'x');
console.log('planted');
`;

test('[INV-4] a child whose output is hostile only in shape (a 2,040-deep nest, 10,001 files) keeps its legitimate file; the rest is reported skipped', async (t) => {
  if (!(await requireEngine(t))) return;
  const base = await tmp(t);
  const dest = path.join(base, 'ref');
  const { exit, tails } = await runToEnd(spec('shapes', ['node', '-e', SHAPES], { limits: { memoryMb: 256, cpu: 1, pids: 64, tmpfsMb: 4, diskMb: 64 } }), async (jail) => {
    // The defaults the supervisor uses: 10,000 files per run.
    const rep = await jail.collect(dest, DEFAULT_COLLECT_CAPS);
    assert.equal(rep.files[0]!.path, 'answer.json', 'the legitimate file arrives');
    assert.equal(rep.files.length, DEFAULT_COLLECT_CAPS.maxEntries);
    const reasons = rep.skipped.map((s) => `${s.reason} ${s.path.slice(0, 40)}`);
    // answer.json and flood/f00000..f09998 are the 10,000; the engine's archive walk is lexical (d/ before flood/).
    assert.deepEqual(reasons, [`too_deep ${`out/${'d/'.repeat(MAX_DEPTH + 1)}`.slice(0, 40)}`, 'too_many_entries flood/f09999', 'too_many_entries flood/f10000']);
    // The nest as the engine sends it: its archive walk ends at PATH_MAX (about 2,000 levels of `d/`).
    assert.ok(rep.skippedCount! > 2 + 1500 && rep.skippedCount! <= 2 + 2040 - MAX_DEPTH + 1, `${rep.skippedCount} skipped: two files past the cap, and the nest below the depth cap`);
  });
  assert.equal(exit.exitCode, 0, tails.stderrTail);
  assert.equal(tails.stdoutTail.trim(), 'planted');
  assert.deepEqual(JSON.parse(fs.readFileSync(path.join(dest, 'answer.json'), 'utf8')), { answer: 42 });
  assert.deepEqual(fs.readdirSync(dest).sort(), ['answer.json', 'flood'], 'the skipped nest left no directories behind');
});

// req: end:output-kept
test('[INV-8] a refused out/ does not cost the run its result value or its stdio (collectOutputs, real result store)', async (t) => {
  if (!(await requireEngine(t))) return;
  const base = await tmp(t);
  const store = new FsResultStore({ dir: path.join(base, 'results') });
  const record = { id: 'r-refused', rootRunId: 'r-root', resultCapBytes: 64 * 1024, expectedOutputs: [], result: { answer: 42 }, resultSpooled: false };
  const marks: string[] = [];
  const sup = {
    table: { get: () => record, store: { dir: () => path.join(base, 'run') }, mark: (_id: string, what: string) => marks.push(what) },
    results: resultsPort(store),
    settings: { stdoutTailBytes: 16 * 1024, resultPerFileBytes: 64 * 1024, resultPerRunBytes: 64 * 1024, resultMaxEntries: 100 },
  };
  // Each file under the per-file cap, together over the per-run cap: out/ is refused whole.
  const sh = 'echo visible-stdout; echo visible-stderr >&2; echo fine > out/small; dd if=/dev/zero of=out/big1 bs=1024 count=40 2>/dev/null; dd if=/dev/zero of=out/big2 bs=1024 count=40 2>/dev/null';
  let patch: Record<string, unknown> = {};
  await runToEnd(spec('refused', ['sh', '-c', sh]), async (jail) => {
    patch = (await collectOutputs(sup as unknown as Parameters<typeof collectOutputs>[0], record.id, jail)) as Record<string, unknown>;
  });
  assert.equal((patch.error as { code: string }).code, 'ref_too_large', 'the refusal is the run\'s error');
  assert.deepEqual(marks, ['collect_cleared'], 'the timing marks: cleared, and out/ never read (it was refused)');
  const refs = await store.list(record.id);
  assert.deepEqual(refs.map((r) => `${r.source} ${r.path}`).sort(), ['stderr stderr.txt', 'stdout stdout.txt', 'value result.json']);
  const text = (name: string) => fs.readFileSync(store.resolvePath(refs.find((r) => r.path === name)!), 'utf8');
  assert.deepEqual(JSON.parse(text('result.json')), { answer: 42 });
  assert.match(text('stdout.txt'), /visible-stdout/);
  assert.match(text('stderr.txt'), /visible-stderr/);
  assert.deepEqual(fs.readdirSync(store.outDir(record.rootRunId, record.id)), [], 'nothing of the refused out/ (not even its small file)');
});

test('an empty out/ is known by the engine\'s stat (no archive); anything made in it at once, at any depth, or renamed into it is still collected', async (t) => {
  if (!(await requireEngine(t))) return;
  const base = await tmp(t);
  // A small disk (mke2fs's "small" type): its timestamps must still be nanoseconds, or a file
  // made within the second of the start would be missed.
  const cases: [string, string, string[]][] = [
    ['nothing', 'true', []],
    ['at-once', 'echo x > out/a', ['a']],
    ['deep', 'mkdir -p out/d/e && echo y > out/d/e/b', ['d/e/b']],
    ['made-removed', 'echo z > out/t && rm out/t', []],
    ['renamed-in', 'echo w > w && mv w out/w', ['w']],
  ];
  for (const [tag, sh, want] of cases) {
    for (let i = 0; i < 3; i++) {
      const dest = path.join(base, `${tag}-${i}`);
      const { exit } = await runToEnd(spec(`empty-${tag}`, ['sh', '-c', sh], { limits: { memoryMb: 128, cpu: 1, pids: 64, tmpfsMb: 16, diskMb: 32 } }), async (jail) => {
        const rep = await jail.collect(dest, CAPS);
        assert.deepEqual(rep.files.map((f) => f.path).sort(), want, `${tag}: collected`);
        assert.equal(rep.unchanged, tag === 'nothing' ? true : undefined, `${tag}: known by the stat alone only when out/ was left as it was`);
      });
      assert.equal(exit.exitCode, 0, tag);
      assert.deepEqual(fs.readdirSync(dest, { recursive: true }).map(String).filter((p) => want.includes(p)).sort(), want, `${tag}: on disk`);
    }
  }
});

test('[INV-4] a 100 GB sparse file is skipped (too_large) at its header, never streamed; the small files beside it, before and after it in the archive, are refs and the run\'s error names it (collectOutputs, real result store)', async (t) => {
  if (!(await requireEngine(t))) return;
  const base = await tmp(t);
  const store = new FsResultStore({ dir: path.join(base, 'results') });
  const record = { id: 'r-sparse', rootRunId: 'r-root', resultCapBytes: 64 * 1024, expectedOutputs: [], result: null, resultSpooled: false };
  const marks: string[] = [];
  const sup = {
    table: { get: () => record, store: { dir: () => path.join(base, 'run') }, mark: (_id: string, what: string) => marks.push(what) },
    results: resultsPort(store),
    settings: { stdoutTailBytes: 16 * 1024, resultPerFileBytes: 32 * 1024, resultPerRunBytes: 64 * 1024, resultMaxEntries: 100 },
  };
  // The engine's archive walk is lexical: a.txt comes before m-sparse, sub/b.txt after it.
  const js = "const fs=require('fs'); fs.writeFileSync('out/a.txt','alpha'); fs.mkdirSync('out/sub'); fs.writeFileSync('out/sub/b.txt','beta'); fs.closeSync(fs.openSync('out/m-sparse','w')); fs.truncateSync('out/m-sparse', 100 * 2 ** 30); console.log(fs.statSync('out/m-sparse').size)";
  let patch: Record<string, unknown> = {};
  const t0 = Date.now();
  const { exit, tails } = await runToEnd(spec('sparse-keep', ['node', '-e', js]), async (jail) => {
    patch = (await collectOutputs(sup as unknown as Parameters<typeof collectOutputs>[0], record.id, jail)) as Record<string, unknown>;
  });
  assert.equal(exit.exitCode, 0, tails.stderrTail);
  assert.equal(tails.stdoutTail.trim(), String(100 * 2 ** 30), 'the child really made a 100 GB file');
  assert.ok(Date.now() - t0 < 60_000, 'the 100 GB were not streamed');
  const error = patch.error as { code: string; message: string };
  assert.equal(error?.code, 'ref_too_large', 'the run still says what was refused');
  assert.deepEqual(marks, ['collect_cleared', 'outputs_read'], 'the timing marks of a collection that read out/');
  assert.match(error.message, /m-sparse/);
  assert.deepEqual(patch.skipped, [{ path: 'm-sparse', reason: 'too_large' }]);
  assert.deepEqual((patch.outputs as { path: string }[]).map((o) => o.path).sort(), ['a.txt', 'sub/b.txt']);
  const refs = await store.list(record.id);
  assert.deepEqual(refs.filter((r) => r.source === 'out').map((r) => r.path).sort(), ['out/a.txt', 'out/sub/b.txt']);
  assert.equal(fs.readFileSync(store.resolvePath(refs.find((r) => r.path === 'out/sub/b.txt')!), 'utf8'), 'beta');
});

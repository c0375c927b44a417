/**
 * [INV-7] The ledger's anchor ($BRIG_HOME/ledger.anchor): deleting segments (all, the newest,
 * an open one) or cutting the newest segment's tail is caught by `brig audit verify` and
 * named; an untouched ledger and one a crash left (an open segment, the anchor a few lines
 * behind, a last line torn mid-write) pass, with the crash's traces listed, not called
 * tampering. What the anchor's window cannot tell apart is pinned too.
 */
import { test } from 'node:test';
import assert from 'node:assert/strict';
import { spawnSync } from 'node:child_process';
import fs from 'node:fs';
import os from 'node:os';
import path from 'node:path';
import { brigPaths } from '../../../src/config/index.js';
import { FileLedger, genesisHash, lineHash, verifyLedger } from '../../../src/ledger/index.js';
import { brig } from '../../unit/lease/cli-io.js';

const ANCHOR = 'ledger.anchor';

async function home(): Promise<{ home: string; dir: string; cleanup: () => Promise<void> }> {
  const h = await fs.promises.mkdtemp(path.join(os.tmpdir(), 'brig-anchor-'));
  return { home: h, dir: brigPaths(h).ledger, cleanup: () => fs.promises.rm(h, { recursive: true, force: true }) };
}

async function write(dir: string, n: number, opts: { close?: boolean } = {}): Promise<FileLedger> {
  const l = new FileLedger({ dir });
  for (let i = 0; i < n; i++) l.append({ type: 'broker.call', runId: `run_${i}`, method: 'progress', n: i });
  // Anchoring past the first line runs off the event loop: flush() waits for it.
  if (opts.close !== false) await l.close();
  else await l.flush();
  return l;
}

const lines = (f: string) => fs.readFileSync(f, 'utf8').split('\n').filter(Boolean);
const keep = (f: string, n: number) => fs.writeFileSync(f, lines(f).slice(0, n).join('\n') + '\n');
const tick = () => new Promise((r) => setTimeout(r, 5));

/** A writer process that appends `n` lines and is SIGKILLed before it closes (a crash). */
function crashWriter(dir: string, n: number): string {
  const src = new URL('../../../src/ledger/index.ts', import.meta.url).pathname;
  const code = `import { FileLedger } from ${JSON.stringify(src)};
    const l = new FileLedger({ dir: ${JSON.stringify(dir)} });
    for (let i = 0; i < ${n}; i++) l.append({ type: 'run.step', runId: 'r' + i, n: i });
    console.log(l.segment);
    process.kill(process.pid, 'SIGKILL');`;
  const r = spawnSync(process.execPath, ['--import', 'tsx', '--input-type=module', '-e', code], { encoding: 'utf8' });
  assert.equal(r.signal, 'SIGKILL', r.stderr);
  return r.stdout.trim();
}

test('[INV-7] an untouched ledger passes, and the report names the anchor', async () => {
  const h = await home();
  try {
    await write(h.dir, 5);
    await tick();
    await write(h.dir, 3);
    const r = await brig(h.home, 'audit', 'verify');
    assert.equal(r.code, 0, r.err);
    assert.match(r.out, /^ledger ok: 10 line\(s\) in 2 segment\(s\) under /);
    assert.match(r.out, new RegExp(`anchor: ${path.join(h.home, ANCHOR).replaceAll('/', '\\/')} \\(1 segment head\\(s\\) recorded\\)`));
    const j = JSON.parse((await brig(h.home, 'audit', 'verify', '--json')).out);
    assert.equal(j.ok, true);
    assert.deepEqual(j.anchor.behind, []);
    // The anchor stays small: a segment linked by a later one leaves it.
    assert.deepEqual(Object.keys(JSON.parse(fs.readFileSync(path.join(h.home, ANCHOR), 'utf8')).segments).length, 1);
    assert.equal(fs.statSync(path.join(h.home, ANCHOR)).mode & 0o777, 0o600);
  } finally {
    await h.cleanup();
  }
});

test('[INV-7] deleting every segment makes brig audit verify fail and name the anchor (it said "ledger ok: 0 line(s)" before)', async () => {
  const h = await home();
  try {
    await write(h.dir, 5);
    await tick();
    await write(h.dir, 2);
    for (const f of fs.readdirSync(h.dir)) fs.rmSync(path.join(h.dir, f));
    const r = await brig(h.home, 'audit', 'verify');
    assert.notEqual(r.code, 0);
    assert.match(r.err, /ledger_corrupt/);
    assert.match(r.err, new RegExp(`${ANCHOR}:1: records segment \\S+\\.jsonl \\(3 line\\(s\\)\\), which is missing \\(a segment was deleted\\)`));
    const j = JSON.parse((await brig(h.home, 'audit', 'verify', '--json')).out);
    assert.equal(j.error.data.file, path.join(h.home, ANCHOR));
  } finally {
    await h.cleanup();
  }
});

test('[INV-7] deleting the newest segment, or one whose writer is still open, is caught; an older one by the chain\'s links', async () => {
  const h = await home();
  try {
    const old = await write(h.dir, 4);
    await tick();
    const live = await write(h.dir, 3, { close: false }); // a daemon's segment, still open
    await tick();
    const newest = await write(h.dir, 2);
    assert.ok(verifyLedger(h.dir).ok);
    // "Deleted" by moving it out of the directory and back (the live writer keeps its file).
    const away = (f: string) => path.join(h.home, `${path.basename(f)}.away`);
    for (const victim of [newest.segment, live.segment]) {
      fs.renameSync(victim, away(victim));
      const r = verifyLedger(h.dir);
      assert.equal(r.ok, false, `deleting ${path.basename(victim)} is caught`);
      assert.equal(r.bad?.file, path.join(h.home, ANCHOR));
      assert.match(r.bad!.why, new RegExp(`records segment ${path.basename(victim)} .*missing`));
      fs.renameSync(away(victim), victim);
    }
    fs.renameSync(old.segment, away(old.segment));
    const r = verifyLedger(h.dir);
    assert.equal(r.ok, false);
    assert.match(r.bad!.why, new RegExp(`${path.basename(old.segment)}, which is missing`));
    fs.renameSync(away(old.segment), old.segment);
    assert.ok(verifyLedger(h.dir).ok);
    await live.close();
    assert.ok(verifyLedger(h.dir).ok);
  } finally {
    await h.cleanup();
  }
});

test('[INV-7] cutting the newest segment\'s last lines makes brig audit verify fail and name the segment', async () => {
  const h = await home();
  try {
    await write(h.dir, 4);
    await tick();
    const newest = await write(h.dir, 6); // 7 lines with ledger.closed
    const saved = fs.readFileSync(newest.segment);
    keep(newest.segment, 5);
    const r = await brig(h.home, 'audit', 'verify');
    assert.notEqual(r.code, 0);
    assert.match(r.err, new RegExp(`${path.basename(newest.segment)}:6: the anchor records 7 line\\(s\\) in this segment, it has 5 \\(its tail was cut\\)`));
    fs.writeFileSync(newest.segment, saved);
    assert.ok(verifyLedger(h.dir).ok);
    // Cutting only the closing line: no longer taken for a crash.
    await tick();
    const whole = await write(h.dir, 1);
    keep(whole.segment, 1);
    assert.match(verifyLedger(h.dir).bad?.why ?? '', /anchor records 2 line\(s\) in this segment, it has 1/);
  } finally {
    await h.cleanup();
  }
});

test('[INV-7] a live writer\'s open segment cut below what it anchored is caught', async () => {
  const h = await home();
  try {
    const l = await write(h.dir, 100, { close: false }); // anchored at line 1, 65 (every 64)
    keep(l.segment, 50);
    const r = verifyLedger(h.dir);
    assert.equal(r.ok, false);
    assert.deepEqual([r.bad?.file, r.bad?.line], [l.segment, 51]);
    assert.match(r.bad!.why, /records 65 line\(s\)/);
    await l.close();
  } finally {
    await h.cleanup();
  }
});

test('[INV-7] a crashed writer (SIGKILL: open segment, anchor behind) is not reported as tampering; its window is what a cut can hide', async () => {
  const h = await home();
  try {
    await write(h.dir, 3);
    await tick();
    const seg = crashWriter(h.dir, 10);
    assert.equal(lines(seg).length, 10, 'every appended line is on disk');
    const r = await brig(h.home, 'audit', 'verify');
    assert.equal(r.code, 0, r.err);
    assert.match(r.out, /ledger ok: 14 line\(s\) in 2 segment\(s\)/);
    assert.match(r.out, /9 newer line\(s\) on open segments not yet anchored/);
    assert.match(r.out, new RegExp(`open \\(being written, or its writer crashed\\): ${seg.replaceAll('/', '\\/')}`));
    const v = verifyLedger(h.dir);
    assert.deepEqual(v.anchor.behind, [{ file: seg, lines: 9 }], 'the first line was anchored at once, the rest within the window');
    // The documented window: lines past the anchor can be cut without verify noticing…
    keep(seg, 4);
    assert.ok(verifyLedger(h.dir).ok, 'a cut within the window looks like an earlier crash');
    // …but not the line the anchor recorded.
    fs.writeFileSync(seg, '');
    const cut = verifyLedger(h.dir);
    assert.equal(cut.ok, false);
    assert.match(cut.bad!.why, /anchor records 1 line\(s\) in this segment, it has 0/);
  } finally {
    await h.cleanup();
  }
});

test('[INV-7] a last line torn mid-write (a machine crash) past the anchor passes and is listed; inside the anchored lines it does not', async () => {
  const h = await home();
  try {
    const seg = crashWriter(h.dir, 5);
    const whole = fs.readFileSync(seg, 'utf8');
    fs.appendFileSync(seg, '{"v":1,"seq":5,"ts":"2026-01-01T00:0');
    const r = await brig(h.home, 'audit', 'verify');
    assert.equal(r.code, 0, r.err);
    assert.match(r.out, /ledger ok: 5 line\(s\) in 1 segment/);
    assert.match(r.out, /last line cut mid-write \(a crash\), not counted/);
    assert.deepEqual(verifyLedger(h.dir).torn, [seg]);
    // Torn at the one anchored line: that is a cut, not a crash.
    fs.writeFileSync(seg, whole.split('\n')[0]!.slice(0, 30));
    assert.equal(verifyLedger(h.dir).ok, false);
  } finally {
    await h.cleanup();
  }
});

test('[INV-7] a missing or garbled anchor is named, not ignored', async () => {
  const h = await home();
  try {
    await write(h.dir, 2);
    const file = path.join(h.home, ANCHOR);
    const saved = fs.readFileSync(file);
    fs.rmSync(file);
    const gone = verifyLedger(h.dir);
    assert.deepEqual([gone.ok, gone.bad?.file], [false, file]);
    assert.match(gone.bad!.why, /anchor is missing while 1 segment\(s\) exist/);
    fs.writeFileSync(file, '{"v":1,"segments":');
    assert.match(verifyLedger(h.dir).bad?.why ?? '', /anchor cannot be read/);
    fs.writeFileSync(file, saved);
    assert.ok(verifyLedger(h.dir).ok);
    // A fresh home has neither: nothing to anchor yet.
    const fresh = await home();
    try {
      const r = await brig(fresh.home, 'audit', 'verify');
      assert.equal(r.code, 0, r.err);
      assert.match(r.out, /ledger ok: 0 line\(s\) in 0 segment\(s\)/);
    } finally {
      await fresh.cleanup();
    }
  } finally {
    await h.cleanup();
  }
});

/** A well-formed segment no brig writer made: valid chain, a closing line, a name newer than any. */
function forge(dir: string, name = '20991231T235959Z-1-0badf00d.jsonl'): string {
  const rows: Record<string, unknown>[] = [];
  let prev = genesisHash(name);
  for (const [i, ev] of [{ type: 'lease.revoked', leaseId: 'ls_forged', by: 'operator' }, { type: 'ledger.closed', lines: 2 }].entries()) {
    const line: Record<string, unknown> = { v: 1, seq: i, ts: '2099-12-31T23:59:59.000Z', ...ev, prev };
    line.hash = lineHash(line);
    prev = line.hash as string;
    rows.push(line);
  }
  const file = path.join(dir, name);
  fs.writeFileSync(file, rows.map((r) => JSON.stringify(r)).join('\n') + '\n', { mode: 0o644 });
  return file;
}

test('[INV-7] a forged segment (neither anchored nor linked) is named by brig audit verify, and the next writer does not link it', async () => {
  const h = await home();
  try {
    await write(h.dir, 3);
    const forged = forge(h.dir);
    const r = await brig(h.home, 'audit', 'verify');
    assert.notEqual(r.code, 0, `a forged segment verified: ${r.out}`);
    assert.match(r.err, /ledger_corrupt/);
    assert.match(r.err, new RegExp(`${path.basename(forged)}:1: .*neither recorded in the anchor nor linked`));
    // The next writer links only what the anchor vouches for: the forgery stays outside the chain.
    await tick();
    const next = await write(h.dir, 1);
    const head = JSON.parse(lines(next.segment)[0]!);
    assert.ok(![head.link, ...(head.links ?? [])].some((l) => String(l).startsWith(path.basename(forged))), `the next segment linked the forgery: ${JSON.stringify(head)}`);
    const after = verifyLedger(h.dir);
    assert.deepEqual([after.ok, after.bad?.file, after.bad?.line], [false, forged, 1]);
    // Without it, the ledger verifies again.
    fs.rmSync(forged);
    assert.ok(verifyLedger(h.dir).ok);
  } finally {
    await h.cleanup();
  }
});

test('[INV-7] a crashed writer\'s segment closed by someone else is not linked (its anchor entry is not closed), and it stays accounted by the anchor', async () => {
  const h = await home();
  try {
    const seg = crashWriter(h.dir, 3);
    // Within the window nobody can tell, so the appended close passes as that segment's own…
    const last = JSON.parse(lines(seg).at(-1)!);
    const close: Record<string, unknown> = { v: 1, seq: 3, ts: last.ts, type: 'ledger.closed', lines: 4, prev: last.hash };
    close.hash = lineHash(close);
    fs.appendFileSync(seg, `${JSON.stringify(close)}\n`);
    assert.ok(verifyLedger(h.dir).ok);
    // …but no writer vouches for it by a link: the anchor never recorded it closed.
    await tick();
    const next = await write(h.dir, 1);
    const head = JSON.parse(lines(next.segment)[0]!);
    assert.equal(head.link, undefined);
    assert.equal(head.links, undefined);
    assert.ok(path.basename(seg) in JSON.parse(fs.readFileSync(path.join(h.home, ANCHOR), 'utf8')).segments);
    assert.ok(verifyLedger(h.dir).ok);
  } finally {
    await h.cleanup();
  }
});

test('[INV-7] an empty segment file (a writer that never appended) is not tampering', async () => {
  const h = await home();
  try {
    await write(h.dir, 2);
    new FileLedger({ dir: h.dir }); // opened, never appended, never closed (a crash)
    const r = verifyLedger(h.dir);
    assert.equal(r.ok, true, JSON.stringify(r.bad));
  } finally {
    await h.cleanup();
  }
});

test('[INV-7] concurrent writers (processes opening and closing segments at once) lose no anchor entry: every segment stays accounted for', async () => {
  const h = await home();
  try {
    const src = new URL('../../../src/ledger/index.ts', import.meta.url).pathname;
    const code = `import { FileLedger } from ${JSON.stringify(src)};
      for (let i = 0; i < 25; i++) {
        const l = new FileLedger({ dir: ${JSON.stringify(h.dir)}, anchorEvery: 1 });
        l.append({ type: 'run.step', n: i });
        l.append({ type: 'run.step', n: i + 1 });
        await l.close();
      }`;
    const { spawn } = await import('node:child_process');
    const runs = Array.from({ length: 4 }, () => new Promise<number | null>((resolve) => {
      const p = spawn(process.execPath, ['--import', 'tsx', '--input-type=module', '-e', code], { stdio: ['ignore', 'ignore', 'inherit'] });
      p.on('exit', resolve);
    }));
    assert.deepEqual(await Promise.all(runs), [0, 0, 0, 0]);
    const r = verifyLedger(h.dir);
    assert.equal(r.files, 100);
    assert.equal(r.ok, true, JSON.stringify(r.bad));
    assert.ok(!fs.existsSync(path.join(h.home, `${ANCHOR}.lock`)), 'the lock is released');
  } finally {
    await h.cleanup();
  }
});

test('[INV-7] an older anchor put back is caught while a segment written since remains; with those deleted too it passes (the documented replay gap)', async () => {
  const h = await home();
  try {
    await write(h.dir, 2);
    const file = path.join(h.home, ANCHOR);
    const old = fs.readFileSync(file);
    await tick();
    const since = await write(h.dir, 2);
    fs.writeFileSync(file, old);
    const r = verifyLedger(h.dir);
    assert.deepEqual([r.ok, r.bad?.file, r.bad?.line], [false, since.segment, 1]);
    fs.rmSync(since.segment);
    assert.ok(verifyLedger(h.dir).ok, 'SECURITY.md: an anchor put back with what came after deleted is out of scope');
  } finally {
    await h.cleanup();
  }
});

test('[INV-7] appends past the first line make no fsync on the appending thread (issue 29 item 7); the anchor still records only lines made durable, and the ledger verifies', async () => {
  const h = await home();
  const realFsync = fs.fsyncSync;
  let inline = 0;
  fs.fsyncSync = ((fd: number) => {
    inline++;
    realFsync(fd);
  }) as typeof fs.fsyncSync;
  try {
    const l = new FileLedger({ dir: h.dir });
    l.append({ type: 'run.step', runId: 'r0', n: 0 });
    assert.ok(inline > 0, 'the first line is anchored inline (the watch sees fsyncs)');
    inline = 0;
    for (let i = 1; i < 200; i++) l.append({ type: 'run.step', runId: `r${i}`, n: i });
    assert.equal(lines(l.segment).length, 200, 'every line is on disk when append returns');
    await l.flush();
    assert.equal(inline, 0, 'no fsync ran on the appending thread for the later anchors');
    const anchor = JSON.parse(fs.readFileSync(path.join(h.home, ANCHOR), 'utf8')) as { segments: Record<string, { lines: number; closed: boolean }> };
    assert.deepEqual(anchor.segments[path.basename(l.segment)], { lines: 200, hash: JSON.parse(lines(l.segment)[199]!).hash, closed: false });
    assert.equal(verifyLedger(h.dir).ok, true);
    await l.close();
    const r = verifyLedger(h.dir);
    assert.deepEqual({ ok: r.ok, lines: r.lines, open: r.open }, { ok: true, lines: 201, open: [] });
  } finally {
    fs.fsyncSync = realFsync;
    await h.cleanup();
  }
});

import { test } from 'node:test';
import assert from 'node:assert/strict';
import { spawnSync } from 'node:child_process';
import fs from 'node:fs';
import os from 'node:os';
import path from 'node:path';
import { FileLedger, verifyLedger, lineHash } from '../../../src/ledger/index.js';
import { ManualClock } from '../../helpers/fakes/manual-time.js';

async function withDir(fn: (dir: string) => Promise<void>): Promise<void> {
  const home = await fs.promises.mkdtemp(path.join(os.tmpdir(), 'brig-ledger-'));
  try {
    await fn(path.join(home, 'ledger'));
  } finally {
    await fs.promises.rm(home, { recursive: true, force: true });
  }
}

async function writeSome(dir: string, n: number, now?: () => Date): Promise<string> {
  const l = new FileLedger({ dir, ...(now ? { now } : {}) });
  for (let i = 0; i < n; i++) l.append({ type: 'lease.issued', leaseId: `ls_${i}`, runId: `run_${i}`, depth: i, caps: ['llm'] });
  await l.close();
  return l.segment;
}

function lines(file: string): string[] {
  return fs.readFileSync(file, 'utf8').split('\n').filter(Boolean);
}

test('appends are on disk when append returns, chained and verifiable', async () => {
  await withDir(async (dir) => {
    const l = new FileLedger({ dir });
    l.append({ type: 'a', runId: 'r1', n: 1 });
    assert.equal(lines(l.segment).length, 1, 'sync destination: the line is on disk already');
    l.append({ type: 'b', runId: 'r1', n: 2 });
    const [first, second] = lines(l.segment).map((s) => JSON.parse(s));
    assert.equal(first.seq, 0);
    assert.equal(second.prev, first.hash);
    assert.equal(first.hash, lineHash(first));
    // 0644 inside a 0700 directory: only the owner reaches it, and the DuckDB helper (uid 65534)
    // through the bind mount `brig audit query` gets.
    assert.equal(fs.statSync(l.segment).mode & 0o777, 0o644);
    assert.equal(fs.statSync(dir).mode & 0o777, 0o700);
    await l.close();
    const r = verifyLedger(dir);
    assert.deepEqual({ ok: r.ok, files: r.files, lines: r.lines, open: r.open }, { ok: true, files: 1, lines: 3, open: [] });
  });
});

// req: events:ledger-no-content
test('[INV-7] events are content-free: objects dropped, strings capped, reserved fields kept by the ledger', async () => {
  await withDir(async (dir) => {
    const l = new FileLedger({ dir });
    l.append({ type: 't', seq: 99, hash: 'x', long: 'y'.repeat(5000), nested: { task: 'secret' } as never });
    await l.close();
    const first = JSON.parse(lines(l.segment)[0]!);
    assert.equal(first.seq, 0);
    assert.equal(first.nested, undefined);
    assert.ok(first.long.length <= 201);
    assert.ok(verifyLedger(dir).ok);
  });
});

test('editing one line makes verify fail and name it', async () => {
  await withDir(async (dir) => {
    const seg = await writeSome(dir, 6);
    const ls = lines(seg);
    ls[3] = ls[3]!.replace('"depth":3', '"depth":4');
    fs.writeFileSync(seg, ls.join('\n') + '\n');
    const r = verifyLedger(dir);
    assert.equal(r.ok, false);
    assert.deepEqual({ file: r.bad?.file, line: r.bad?.line }, { file: seg, line: 4 });
    assert.match(r.bad!.why, /edited/);
  });
});

test('deleting one line makes verify fail and name the line after it', async () => {
  await withDir(async (dir) => {
    const seg = await writeSome(dir, 6);
    const ls = lines(seg);
    ls.splice(2, 1);
    fs.writeFileSync(seg, ls.join('\n') + '\n');
    const r = verifyLedger(dir);
    assert.equal(r.ok, false);
    assert.equal(r.bad?.line, 3);
    assert.match(r.bad!.why, /deleted/);
  });
});

test('a cut tail is caught by the anchor, not taken for a crash; garbage is named; two writers never share a file', async () => {
  await withDir(async (dir) => {
    const a = new FileLedger({ dir });
    const b = new FileLedger({ dir });
    a.append({ type: 'x' });
    b.append({ type: 'y' });
    a.append({ type: 'x' });
    await a.close();
    await b.close();
    assert.notEqual(a.segment, b.segment);
    assert.equal(verifyLedger(dir).files, 2);
    const saved = fs.readFileSync(a.segment);
    const ls = lines(a.segment);
    fs.writeFileSync(a.segment, ls.slice(0, -1).join('\n') + '\n');
    const r = verifyLedger(dir);
    assert.equal(r.ok, false, 'before the anchor, this looked like a crash ("open")');
    assert.deepEqual([r.bad?.file, r.bad?.line], [a.segment, 3]);
    assert.match(r.bad!.why, /anchor records 3 line\(s\) in this segment, it has 2 \(its tail was cut\)/);
    fs.writeFileSync(a.segment, saved);
    assert.ok(verifyLedger(dir).ok);
    fs.appendFileSync(b.segment, '{not json\n');
    const bad = verifyLedger(dir);
    assert.equal(bad.ok, false);
    assert.equal(bad.bad?.file, b.segment);
    assert.equal(bad.bad?.line, 3);
  });
});

test('an append after close starts a new, verifiable segment instead of throwing', async () => {
  await withDir(async (dir) => {
    const l = new FileLedger({ dir });
    l.append({ type: 'a' });
    await l.close();
    const first = l.segment;
    l.append({ type: 'late', runId: 'r1' });
    assert.notEqual(l.segment, first);
    await l.close();
    await l.close();
    const r = verifyLedger(dir);
    assert.deepEqual({ ok: r.ok, files: r.files, lines: r.lines, open: r.open.length }, { ok: true, files: 2, lines: 4, open: 0 });
  });
});

test('deleting or cutting an earlier closed segment breaks the next segment\'s link', async () => {
  await withDir(async (dir) => {
    // Segments sort by their opening second: the second one opens a second later.
    const clock = new ManualClock();
    const first = await writeSome(dir, 3, clock.now);
    clock.advance(1000);
    const second = await writeSome(dir, 2, clock.now);
    assert.match(JSON.parse(lines(second)[0]!).link, new RegExp(`^${path.basename(first)} [0-9a-f]{64}$`));
    assert.ok(verifyLedger(dir).ok);
    const saved = fs.readFileSync(first);
    fs.writeFileSync(first, lines(first).slice(0, -1).join('\n') + '\n');
    const cut = verifyLedger(dir);
    assert.equal(cut.ok, false);
    assert.deepEqual([cut.bad?.file, cut.bad?.line], [second, 1]);
    assert.match(cut.bad!.why, /tail was changed/);
    fs.rmSync(first);
    const gone = verifyLedger(dir);
    assert.equal(gone.ok, false);
    assert.match(gone.bad!.why, /missing \(a segment was deleted\)/);
    fs.writeFileSync(first, saved);
    assert.ok(verifyLedger(dir).ok);
  });
});

test('deleting a long-lived segment that closed after a later one opened is caught (links)', async () => {
  await withDir(async (dir) => {
    let t = Date.parse('2026-01-01T00:00:00Z');
    const now = () => new Date(t);
    // A daemon's segment stays open while a CLI writes and closes its own; then the daemon
    // closes, and a new daemon starts.
    const daemon = new FileLedger({ dir, now });
    daemon.append({ type: 'run.spawned', runId: 'r1' });
    t += 2000;
    const cli = new FileLedger({ dir, now });
    cli.append({ type: 'lease.revoked', leaseId: 'ls_1' });
    await cli.close();
    t += 2000;
    daemon.append({ type: 'run.ended', runId: 'r1' });
    await daemon.close();
    t += 2000;
    const next = new FileLedger({ dir, now });
    next.append({ type: 'daemon.started' });
    await next.close();
    const head = JSON.parse(lines(next.segment)[0]!);
    assert.match(head.link, new RegExp(`^${path.basename(cli.segment)} `));
    assert.deepEqual(head.links.map((l: string) => l.split(' ')[0]), [path.basename(daemon.segment)]);
    assert.ok(verifyLedger(dir).ok);
    // An event cannot forge the field.
    const forged = new FileLedger({ dir, now });
    forged.append({ type: 'x', links: ['nope.jsonl 00'] });
    await forged.close();
    assert.ok(!('links' in JSON.parse(lines(forged.segment)[0]!)) || JSON.parse(lines(forged.segment)[0]!).links[0] !== 'nope.jsonl 00');
    assert.ok(verifyLedger(dir).ok);
    fs.rmSync(daemon.segment);
    const gone = verifyLedger(dir);
    assert.equal(gone.ok, false);
    assert.deepEqual([gone.bad?.file, gone.bad?.line], [next.segment, 1]);
    assert.match(gone.bad!.why, new RegExp(`${path.basename(daemon.segment)}, which is missing`));
  });
});

test('hasRunEvent: finds a run\'s event in any segment (another process\'s, a closed one), by exact type and run id', async () => {
  await withDir(async (dir) => {
    const dead = new FileLedger({ dir });
    dead.append({ type: 'run.lifecycle_ended', runId: 'r-aaaa', endReason: 'completed' });
    dead.append({ type: 'run.completed', runId: 'r-bbbb' });
    await dead.close();
    // A torn last line, as a SIGKILL mid-write would leave.
    fs.appendFileSync(dead.segment, '{"type":"run.lifecycle_ended","runId":"r-cccc"');
    const live = new FileLedger({ dir });
    live.append({ type: 'run.started', runId: 'r-dddd' });
    assert.equal(live.hasRunEvent('run.lifecycle_ended', 'r-aaaa'), true, 'in the dead process\'s segment');
    assert.equal(live.hasRunEvent('run.lifecycle_ended', 'r-bbbb'), false, 'another type of the same run');
    assert.equal(live.hasRunEvent('run.lifecycle_ended', 'r-aaa'), false, 'a run id is matched whole');
    assert.equal(live.hasRunEvent('run.lifecycle_ended', 'r-cccc'), false, 'a torn line is not an event');
    assert.equal(live.hasRunEvent('run.started', 'r-dddd'), true, 'in the open segment');
    await live.close();
  });
});

test('a lock on the anchor left by a writer that died mid-write is broken, not waited on; an old one too', async () => {
  await withDir(async (dir) => {
    fs.mkdirSync(dir, { recursive: true });
    const lock = `${dir}.anchor.lock`;
    const gone = spawnSync(process.execPath, ['-e', 'process.pid']).pid!;
    fs.writeFileSync(lock, `${gone} 0123456789ab`);
    const past = new Date(Date.now() - 1000);
    fs.utimesSync(lock, past, past);
    const t0 = Date.now();
    const l = new FileLedger({ dir });
    l.append({ type: 'a' });
    assert.ok(Date.now() - t0 < 1000, 'a dead holder\'s lock is broken at once');
    assert.ok(!fs.existsSync(lock));
    // A holder that may be alive (our own pid) is waited for until the lock is stale.
    fs.writeFileSync(lock, `${process.pid} 0123456789ab`);
    const old = new Date(Date.now() - 3000);
    fs.utimesSync(lock, old, old);
    await l.close();
    assert.ok(!fs.existsSync(lock));
    assert.ok(verifyLedger(dir).ok);
  });
});

test('an anchoring off the event loop that fails (not for space) reaches the appender: the next one due runs inline and throws; it recovers once the disk does', async () => {
  await withDir(async (dir) => {
    let failing = false;
    const eio = () => Object.assign(new Error('EIO: i/o error, fsync'), { code: 'EIO' });
    const io = {
      write: (fd: number, buf: Buffer, off: number, len: number) => fs.writeSync(fd, buf, off, len),
      fsync: (fd: number) => {
        if (failing) throw eio();
        fs.fsyncSync(fd);
      },
      fsyncAsync: async (fd: number) => {
        if (failing) throw eio();
        fs.fsyncSync(fd);
      },
    };
    const l = new FileLedger({ dir, anchorEvery: 2, io });
    l.append({ type: 'a', n: 0 }); // anchored inline
    failing = true;
    l.append({ type: 'a', n: 1 });
    l.append({ type: 'a', n: 2 }); // due: off the loop, fails
    await l.flush();
    assert.throws(() => l.append({ type: 'a', n: 3 }), /EIO/, 'the next anchoring due runs inline and throws');
    failing = false;
    l.append({ type: 'a', n: 4 });
    l.append({ type: 'a', n: 5 });
    await l.close();
    const r = verifyLedger(dir);
    assert.deepEqual({ ok: r.ok, lines: r.lines }, { ok: true, lines: 7 });
  });
});

/**
 * util/write-journal.ts, the home's write-ahead journal. A machine crash cannot be pulled here,
 * so it is made: a journal left open (as a killed process leaves it) and the files it named
 * put back to what a lost page cache would show — old, torn or gone — then a second open must
 * replay them to the last line written, never older, never resurrecting a removal.
 */
import { test } from 'node:test';
import assert from 'node:assert/strict';
import fsp from 'node:fs/promises';
import os from 'node:os';
import path from 'node:path';
import { BIG, WriteJournal } from '../../../src/util/write-journal.js';

async function home(t: import('node:test').TestContext): Promise<string> {
  const d = await fsp.mkdtemp(path.join(os.tmpdir(), 'brig-wal-'));
  t.after(() => fsp.rm(d, { recursive: true, force: true }));
  return d;
}
const read = (f: string) => fsp.readFile(f, 'utf8').catch(() => null);
const segments = async (d: string) => (await fsp.readdir(path.join(d, 'journal')).catch(() => [])).filter((n) => n.endsWith('.log'));

// req: results:journal
test('[INV-4] a write lands on its file at once; a clean close leaves the files and no journal', async (t) => {
  const d = await home(t);
  const j = await WriteJournal.open(d);
  await fsp.mkdir(path.join(d, 'runs', 'r1'), { recursive: true });
  await j.write(path.join(d, 'runs/r1/run.json'), '{"v":1}');
  await j.write(path.join(d, 'runs/r1/run.json'), '{"v":2}', { mode: 0o640 });
  assert.equal(await read(path.join(d, 'runs/r1/run.json')), '{"v":2}');
  assert.equal((await fsp.stat(path.join(d, 'runs/r1/run.json'))).mode & 0o777, 0o640);
  assert.equal(j.stats.lines, 2);
  await j.close();
  assert.deepEqual(await segments(d), []);
  assert.equal(await read(path.join(d, 'runs/r1/run.json')), '{"v":2}');
});

// req: results:journal
test('[INV-4] after a crash that lost the files, the next open puts back the last line of each, in order', async (t) => {
  const d = await home(t);
  const j = await WriteJournal.open(d);
  const a = path.join(d, 'runs/r1/run.json');
  const b = path.join(d, 'results/r1/r1/refs.json');
  const c = path.join(d, 'runs/r1/packet.json');
  await fsp.mkdir(path.dirname(a), { recursive: true });
  await fsp.mkdir(path.dirname(b), { recursive: true });
  await j.write(a, 'admitted');
  await j.write(a, 'started');
  await j.writeMany([{ file: b, data: 'manifest' }, { file: c, data: Buffer.from([0, 1, 2, 255]) }]);
  await j.write(a, 'ended', { durable: false });
  // The crash: the process never closed the journal; the machine lost what the files held.
  await j.abandon();
  await fsp.writeFile(a, 'admi'); // torn
  await fsp.rm(path.join(d, 'results'), { recursive: true }); // a directory entry never made durable
  await fsp.rm(c);
  await j.abandon();
  const again = await WriteJournal.open(d);
  t.after(() => again.close());
  assert.deepEqual(again.replayed, { segments: 1, lines: 5, dropped: 0 });
  assert.equal(await read(a), 'ended');
  assert.equal(await read(b), 'manifest');
  assert.deepEqual([...(await fsp.readFile(c))], [0, 1, 2, 255]);
  // The old segment is gone once its lines are on their files; the new one is empty.
  assert.equal((await segments(d)).length, 1);
  assert.equal(again.size, 0);
});

// req: results:journal
test('[INV-4] a torn last line is not replayed (its writer was never told), the lines before it are', async (t) => {
  const d = await home(t);
  const j = await WriteJournal.open(d);
  const a = path.join(d, 'a.json');
  await j.write(a, 'one');
  await j.write(a, 'two');
  const [seg] = await segments(d);
  const file = path.join(d, 'journal', seg!);
  const text = await fsp.readFile(file, 'utf8');
  // Cut the last line in half, as a crash during its append would.
  await fsp.writeFile(file, text.slice(0, text.length - 7));
  await fsp.writeFile(a, '');
  await j.abandon();
  const again = await WriteJournal.open(d);
  t.after(() => again.close());
  assert.equal(again.replayed.dropped, 1);
  assert.equal(again.replayed.lines, 1);
  assert.equal(await read(a), 'one');
});

// req: results:journal
test('[INV-4] a line whose checksum fails stops its segment there: nothing after it is trusted', async (t) => {
  const d = await home(t);
  const j = await WriteJournal.open(d);
  const a = path.join(d, 'a.json');
  const b = path.join(d, 'b.json');
  await j.write(a, 'one');
  await j.write(b, 'bee');
  await j.write(a, 'two');
  const [seg] = await segments(d);
  const file = path.join(d, 'journal', seg!);
  const lines = (await fsp.readFile(file, 'utf8')).split('\n');
  lines[1] = lines[1]!.replace('bee', 'BEE');
  await fsp.writeFile(file, lines.join('\n'));
  await fsp.rm(a);
  await fsp.rm(b);
  await j.abandon();
  const again = await WriteJournal.open(d);
  t.after(() => again.close());
  assert.equal(again.replayed.dropped, 2);
  assert.equal(await read(a), 'one');
  assert.equal(await read(b), null);
});

// req: results:journal
test('[INV-4] a removal is never undone by a replay, and what was written directly after it is never removed by one', async (t) => {
  const d = await home(t);
  const j = await WriteJournal.open(d);
  const run = path.join(d, 'results/r1/r1');
  await fsp.mkdir(run, { recursive: true });
  await j.write(path.join(run, 'refs.json'), 'first attempt');
  await j.write(path.join(d, 'runs-r1-checkpoint'), 'cp');
  await j.remove(run);
  await j.remove(path.join(d, 'runs-r1-checkpoint'));
  assert.equal(await read(path.join(run, 'refs.json')), null);
  // A redo writes its outputs straight to disk into the same directory (the collector does).
  await fsp.mkdir(run, { recursive: true });
  await fsp.writeFile(path.join(run, 'stdout.txt'), 'redo');
  await j.abandon();
  const again = await WriteJournal.open(d);
  t.after(() => again.close());
  assert.equal(await read(path.join(run, 'refs.json')), null, 'the removed manifest stays removed');
  assert.equal(await read(path.join(d, 'runs-r1-checkpoint')), null);
  assert.equal(await read(path.join(run, 'stdout.txt')), 'redo', "the redo's own output is not the journal's to remove");
});

// req: results:journal
test('[INV-4] removing what the journal never wrote costs no line', async (t) => {
  const d = await home(t);
  const j = await WriteJournal.open(d);
  t.after(() => j.close());
  await fsp.mkdir(path.join(d, 'out'));
  await j.remove(path.join(d, 'out'));
  await j.remove(path.join(d, 'never-there'));
  assert.equal(j.stats.lines, 0);
  assert.equal(await fsp.stat(path.join(d, 'out')).catch(() => null), null);
});

// req: results:journal
test('[INV-4] a big write goes to disk directly and no older line is replayed over it', async (t) => {
  const d = await home(t);
  const j = await WriteJournal.open(d);
  const a = path.join(d, 'checkpoint');
  await j.write(a, 'small and old');
  const big = 'x'.repeat(BIG + 1);
  await j.write(a, big);
  assert.ok(j.size < 1024, 'the big bytes are not in the journal');
  await j.abandon();
  const again = await WriteJournal.open(d);
  t.after(() => again.close());
  assert.equal((await read(a))?.length, big.length);
});

// req: results:journal
test('[INV-4] writers that ask at once share one fdatasync (group commit)', async (t) => {
  const d = await home(t);
  const j = await WriteJournal.open(d);
  t.after(() => j.close());
  await Promise.all(Array.from({ length: 40 }, (_, i) => j.write(path.join(d, `f${i}`), String(i))));
  assert.equal(j.stats.lines, 40);
  assert.ok(j.stats.syncs < 40, `40 lines, ${j.stats.syncs} syncs`);
  for (let i = 0; i < 40; i++) assert.equal(await read(path.join(d, `f${i}`)), String(i));
});

// req: results:journal
test('[INV-4] a full segment is checkpointed and deleted; what it said stays on the files', async (t) => {
  const d = await home(t);
  const j = await WriteJournal.open(d, { maxBytes: 2048 });
  for (let i = 0; i < 60; i++) await j.write(path.join(d, `f${i % 7}`), `v${i}`.padEnd(100, '.'));
  assert.ok(j.stats.segments > 1);
  await j.close();
  assert.deepEqual(await segments(d), []);
  for (let k = 0; k < 7; k++) {
    const last = Math.max(...Array.from({ length: 60 }, (_, i) => i).filter((i) => i % 7 === k));
    assert.equal(await read(path.join(d, `f${k}`)), `v${last}`.padEnd(100, '.'));
  }
});

// req: results:journal
test('[INV-4] a path outside the home is refused before anything is written', async (t) => {
  const d = await home(t);
  const j = await WriteJournal.open(path.join(d, 'home'));
  t.after(() => j.close());
  await assert.rejects(j.write(path.join(d, 'elsewhere'), 'x'), /not under/);
  await assert.rejects(j.write(path.join(d, 'elsewhere-big'), 'x'.repeat(BIG + 1)), /not under/);
  assert.equal(await read(path.join(d, 'elsewhere-big')), null, 'a big write outside is refused before it is written');
  await assert.rejects(j.remove(path.join(d, 'home')), /not under/);
  assert.equal(j.stats.lines, 0);
});

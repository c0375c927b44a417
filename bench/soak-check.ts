/**
 * The soak's verdicts (bench/soak.ts), read from the home after the last daemon stopped: ends,
 * leftovers, the ledger, every materialized byte against its seeded stream, the steers' effect,
 * the faults' casualties, the drain.
 */
import { execFile } from 'node:child_process';
import fs from 'node:fs';
import path from 'node:path';
import { promisify } from 'node:util';
import { DockerJailDriver, ownerForHome } from '../src/jail/index.js';
import { END_REASONS, type RunRecord } from '../src/runs/index.js';
import type { Soak, Window } from './soak.js';

const tally = (m: Map<string, number>, k: string) => m.set(k, (m.get(k) ?? 0) + 1);
import { allRecords, ledgerEnds, MAIN, ROOT, soakBytes, socketsUnder, type Outputs, type Planned, type stopServe } from './soak-lib.js';

export interface Verdict {
  name: string;
  ok: boolean;
  detail: string;
}

export interface Bytes {
  full: number;
  partial: number;
  files: number;
  partialFiles: number;
}

/** Whatever the soak knows about one run, for a defect report. */
function describe(s: Soak, r: RunRecord): string {
  const { stdoutTail, stderrTail, ...rest } = r;
  const lines = s.daemons.flatMap((d) => [d.outFile, d.errFile]).flatMap((f) => fs.readFileSync(f, 'utf8').split('\n').filter((l) => l.includes(r.id)).map((l) => `${path.basename(f)}: ${l.slice(0, 300)}`));
  const seen = s.restarts.map((x) => `restart ${x.k + 1}: ${x.snapshot.get(r.id) ?? 'absent'}`).join(', ');
  return `    ${r.id} ${JSON.stringify({ ...rest, stdoutTail: stdoutTail.slice(-300), stderrTail: stderrTail.slice(-300) })}\n    status at the SIGKILLs: ${seen}\n${lines.slice(0, 12).map((l) => `    ${l}`).join('\n')}`;
}

/** The latest fault window that began before a run ended and ended (30 s of slack) after it began. */
function windowOf(s: Soak, r: RunRecord, what: Window['what'][]): Window | undefined {
  const end = r.endedAt ? Date.parse(r.endedAt) : NaN;
  const start = Date.parse(r.createdAt);
  return [...s.windows].reverse().find((w) => what.includes(w.what) && end >= w.from && start <= w.to + 30_000);
}

/** A file is right when it is its stream's first `size` bytes; whole when size is the planned size. */
function verifyFile(file: string, o: Outputs[number]): { size: number; ok: boolean; why: string } {
  const st = fs.statSync(file, { throwIfNoEntry: false });
  if (!st) return { size: -1, ok: false, why: 'absent' };
  if (st.size > o.bytes) return { size: st.size, ok: false, why: `${st.size} B, more than the ${o.bytes} B planned` };
  const got = fs.readFileSync(file);
  const want = soakBytes(o.seed, 0, st.size);
  const at = got.findIndex((b, i) => b !== want[i]);
  return at < 0 ? { size: st.size, ok: true, why: '' } : { size: st.size, ok: false, why: `byte ${at} differs from the stream (seed ${o.seed})` };
}

export async function check(s: Soak, plan: Planned[], finished: boolean, stop: Awaited<ReturnType<typeof stopServe>>, drainBoundMs: number): Promise<{ verdicts: Verdict[]; bytes: Bytes }> {
  const v: Verdict[] = [];
  const add = (name: string, ok: boolean, detail = '') => v.push({ name, ok, detail });
  const recs = allRecords(s.home);
  add('all runs ended within the time bound', finished);
  add('the daemon never exited by itself (engine blip, full home)', s.unexpectedExits.length === 0, s.unexpectedExits.map((x) => `    ${x}`).join('\n'));
  add('the last daemon exited 0 on an idle SIGTERM', stop.code === 0 && !stop.forced, `code ${stop.code} signal ${stop.signal}${stop.forced ? ' (had to SIGKILL)' : ''}`);
  const d = s.drain;
  add(`the SIGTERM drain with live and queued work exited 0 within ${drainBoundMs / 1000} s`, !!d && d.stop.code === 0 && !d.stop.forced && d.ms <= drainBoundMs && (d.before.get('running') ?? 0) > 0 && (d.before.get('queued') ?? 0) > 0, d ? `${d.ms} ms, code ${d.stop.code}${d.stop.forced ? ' forced' : ''}; tail at SIGTERM ${[...d.before].join(' ')}` : 'no drain');

  const bad = recs.filter((r) => r.status !== 'ended' || !r.endReason || !END_REASONS.includes(r.endReason) || !r.endedAt || (r.endReason === 'killed') !== (r.killedBy !== null));
  add('every run.json ended with exactly one end reason', bad.length === 0, bad.map((r) => describe(s, r)).join('\n'));
  const ends = ledgerEnds(s.home);
  const twice = recs.filter((r) => (ends.get(r.id)?.length ?? 0) > 1 || (ends.get(r.id) ?? [r.endReason])[0] !== r.endReason);
  add('ledger: no run ended twice or differently', twice.length === 0, twice.map((r) => `    ${r.id}: record ${r.endReason}, ledger ${ends.get(r.id)?.join('/')}`).join('\n'));
  const unledgered = recs.filter((r) => !ends.has(r.id)).map((r) => r.id);
  if (unledgered.length) console.log(`  note: ${unledgered.length} ended run(s) have no run.lifecycle_ended line: ${unledgered.join(' ')}`);

  const driver = new DockerJailDriver({ owner: ownerForHome(s.home) });
  const left = await driver.listLabelled().catch((e: unknown) => [{ kind: 'error', runId: String(e) }]);
  add('no container, volume or workspace disk left for this home', left.length === 0, left.map((l) => `${l.kind}:${l.runId}`).join(' '));
  const loops = await promisify(execFile)('/usr/sbin/losetup', ['--list', '--noheadings', '--output', 'BACK-FILE']).then(
    (r) => r.stdout.split('\n').filter((l) => l.startsWith(driver.disks.dir)),
    () => [] as string[],
  );
  add('no loop device left on this home\'s disks', loops.length === 0, loops.join(' '));
  const socks = socketsUnder(s.paths.brokers);
  add('no broker socket left (brigPaths().brokers)', socks.length === 0, socks.join(' '));
  const audit = await promisify(execFile)(process.execPath, [MAIN, 'audit', 'verify'], { cwd: ROOT, env: { ...process.env, BRIG_HOME: s.home } }).then(
    (r) => ({ code: 0, out: r.stdout.split('\n')[0] ?? '' }),
    (e: { code?: number; stderr?: string }) => ({ code: e.code ?? 1, out: e.stderr ?? '' }),
  );
  add('brig audit verify exits 0 (after the full home, the blips and the drain)', audit.code === 0, audit.out.trim());

  // Outputs: every byte any run materialized is its stream's; a completed run has each file whole.
  const want = new Map<string, Outputs>();
  for (const p of plan) {
    want.set(p.label, p.outputs);
    for (const k of p.kids) want.set(k.label, k.outputs);
  }
  const bytes: Bytes = { full: 0, partial: 0, files: 0, partialFiles: 0 };
  const lost: string[] = [];
  const wrong: string[] = [];
  for (const r of recs) {
    const outs = r.label ? want.get(r.label) : undefined;
    if (!outs) {
      wrong.push(`    ${r.id}: label ${r.label}, which the plan does not know`);
      continue;
    }
    // A collection on a full home may skip a file (no_space) and says so: storage_full.
    const spaceCut = String(r.error?.code) === 'storage_full';
    for (const o of outs) {
      const listed = r.outputs.find((x) => x.path === o.path);
      const file = r.resultDir ? path.join(r.resultDir, o.path) : '';
      const f = file ? verifyFile(file, o) : { size: -1, ok: false, why: 'no resultDir' };
      if (f.size >= 0 && !f.ok) wrong.push(`    ${r.id} (${r.label}, ${r.endReason}) ${o.path}: ${f.why}`);
      if (f.size >= 0 && listed?.bytes !== f.size) wrong.push(`    ${r.id} (${r.label}) ${o.path}: the record lists ${listed?.bytes ?? 'nothing'}, ${f.size} B on disk`);
      if (f.ok && f.size === o.bytes) bytes.full += f.size;
      else if (f.ok) {
        bytes.partial += f.size;
        bytes.partialFiles++;
      }
      if (f.ok) bytes.files++;
      if (r.endReason === 'completed' && !spaceCut && (f.size !== o.bytes || listed?.bytes !== o.bytes)) lost.push(`    ${r.id} (${r.label}) ${o.path}: want ${o.bytes} B, record ${listed?.bytes ?? 'absent'}, on disk ${f.size < 0 ? 'absent' : f.size} (resultDir ${r.resultDir})\n${describe(s, r)}`);
    }
  }
  add('no completed run lost an output (each file whole, byte for byte its seeded stream)', lost.length === 0, lost.join('\n'));
  add('every materialized file of every run (killed, cut, drained too) is a prefix of its stream, at the size its record lists', wrong.length === 0, wrong.join('\n'));

  // Steers: a run the plan steers and that completed took its steer (and only then finished).
  const steerLost: string[] = [];
  let steeredOk = 0;
  for (const r of recs.filter((x) => x.endReason === 'completed' && x.label && s.byLabel.get(x.label)?.steerTo)) {
    const p = s.byLabel.get(r.label!)!;
    const res = r.result as { steers?: string[]; answer?: string; partial?: boolean } | null;
    const took = p.kind === 'waiter' ? !!res?.steers?.includes(p.steerTo!) : res?.answer === `steered: ${p.steerTo}` && !res?.partial;
    if (took) steeredOk++;
    else steerLost.push(`    ${r.id} (${r.label}, ${p.kind}): result ${JSON.stringify(res).slice(0, 300)}`);
  }
  const randomTaken = recs.filter((r) => r.endReason === 'completed' && ((r.result as { steered?: string[] } | null)?.steered ?? []).some((x) => typeof x === 'string' && x.startsWith('soak steer for'))).length;
  console.log(`  steers: ${steeredOk} aimed steers took effect (a waiter or agent finished on its word); ${randomTaken} random steers stopped a stepper early`);
  add('every steered waiter or agent that completed finished because of its steer', steerLost.length === 0, steerLost.join('\n'));

  // Agents on the flaky model: a completed agent finished with its own answer, not a salvage.
  const agentsBad = recs.filter((r) => r.endReason === 'completed' && r.label && s.byLabel.get(r.label)?.kind === 'agent' && !s.byLabel.get(r.label)?.steerTo)
    .filter((r) => (r.result as { answer?: string } | null)?.answer !== `done ${r.label}`);
  add('every agent on the flaky model that completed finished its task (no salvage)', agentsBad.length === 0, agentsBad.map((r) => `    ${r.id} (${r.label}): ${JSON.stringify(r.result).slice(0, 300)}`).join('\n'));
  if (s.model.server.problems.length) console.log(`  model server problems: ${s.model.server.problems.slice(0, 5).join('; ')}`);

  // Accounting: every submission is on disk; every grandchild a completed spawner names exists.
  const byId = new Map(recs.map((r) => [r.id, r]));
  const missing = [...s.submitted].flatMap(([label, ids]) => ids.filter((id) => !byId.has(id)).map((id) => `${label}:${id}`));
  const kidsGone = recs.filter((r) => r.endReason === 'completed' && Array.isArray((r.result as { ids?: unknown })?.ids)).flatMap((r) => ((r.result as { ids: string[] }).ids).filter((id) => byId.get(id)?.parentRunId !== r.id).map((id) => `${r.id}→${id}`));
  add('every spawn answered is on disk (grandchildren too)', missing.length === 0 && kidsGone.length === 0 && s.submitErrors.length === 0, [...missing, ...kidsGone, ...s.submitErrors.map((e) => `${e.label}: ${e.code} ${e.message}`)].join(' '));

  // Failures: none, but for a clear storage_full inside the full-home window.
  const failed = recs.filter((r) => r.endReason === 'failed');
  const excused = failed.filter((r) => String(r.error?.code) === 'storage_full' && windowOf(s, r, ['full-home']));
  const notExcused = failed.filter((r) => !excused.includes(r));
  add('no run failed (but storage_full during the full home)', notExcused.length === 0, [...notExcused.slice(0, 8).map((r) => describe(s, r)), ...(notExcused.length > 8 ? [`    and ${notExcused.length - 8} more: ${notExcused.slice(8).map((r) => r.id).join(' ')}`] : [])].join('\n'));
  for (const r of failed) tally(s.failures, `${r.error?.code ?? '?'} (${windowOf(s, r, ['full-home', 'engine-cut', 'engine-freeze'])?.what ?? (s.restarts.some((x) => x.snapshot.has(r.id) && x.snapshot.get(r.id) !== 'ended') ? 'live at a SIGKILL' : 'no fault')})`);
  if (s.windows.some((w) => w.what === 'full-home')) add('a spawn on the full home is refused storage_full', (s.fullProbes.get('storage_full') ?? 0) > 0 && (s.fullProbes.get('admitted') ?? 0) === 0, [...s.fullProbes].join(' '));

  // ghost_sweep is a lost run unless the run was `starting` when the daemon died.
  const ghosts = recs.filter((r) => r.endReason === 'ghost_sweep').map((r) => {
    const said = /the run was (\w+)/.exec(r.error?.message ?? '')?.[1];
    const snap = [...s.restarts].reverse().find((x) => x.snapshot.has(r.id) && x.snapshot.get(r.id) !== 'ended')?.snapshot.get(r.id);
    return { r, last: said ?? snap ?? 'unknown' };
  });
  const lostGhosts = ghosts.filter((g) => g.last !== 'starting');
  add('every ghost_sweep was `starting` at a SIGKILL', lostGhosts.length === 0, lostGhosts.map((g) => `    last status ${g.last}\n${describe(s, g.r)}`).join('\n'));
  if (ghosts.length) console.log(`  ghost_sweep: ${ghosts.map((g) => `${g.r.id} (${g.r.label}, was ${g.last})`).join(', ')}`);
  return { verdicts: v, bytes };
}

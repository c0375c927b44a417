import fs from 'node:fs';
import os from 'node:os';
import path from 'node:path';
import { loadConfig } from '../../../src/config/index.js';
import { compose, type Composed } from '../../../src/daemon/index.js';
import { DockerJailDriver, ownerForHome } from '../../../src/jail/index.js';
import type { SupervisorSettings } from '../../../src/runs/index.js';

/** A fresh BRIG_HOME per test; removed afterwards with every jail its owner label names. */
export async function freshHome(t: { after: (fn: () => Promise<void> | void) => void }): Promise<string> {
  const home = await fs.promises.mkdtemp(path.join(os.tmpdir(), 'brig-run-'));
  t.after(async () => {
    await sweepOwner(home);
    await fs.promises.rm(home, { recursive: true, force: true });
  });
  return home;
}

/** Containers and volumes still labelled with this home's owner (this test's only). */
/**
 * The labelled containers, volumes and disks of a home's owner. `released`: what is still there
 * once the releases in flight had their time (up to 20 s) — a run's jail is released after its
 * envelope is returned (issue 26), so "nothing left" is asked of the settled state.
 */
export async function leftovers(home: string, o: { released?: boolean } = {}): Promise<string[]> {
  const d = new DockerJailDriver({ owner: ownerForHome(home) });
  const now = async () => (await d.listLabelled()).map((r) => `${r.kind}:${r.runId}`);
  let left = await now();
  for (let i = 0; o.released && left.length > 0 && i < 200; i++) {
    await new Promise((r) => setTimeout(r, 100));
    left = await now();
  }
  return left;
}

export async function sweepOwner(home: string): Promise<void> {
  const d = new DockerJailDriver({ owner: ownerForHome(home) });
  await d.sweep(() => false).catch(() => {});
}

export async function supervisorAt(home: string, settings: Partial<SupervisorSettings> = {}, tickMs = 200): Promise<Composed> {
  const c = await compose(loadConfig({ BRIG_HOME: home }), { settings, tickMs, reconcile: true });
  await c.supervisor.start();
  return c;
}

export async function until(cond: () => boolean | Promise<boolean>, what: string, tries = 600): Promise<void> {
  for (let i = 0; i < tries; i++) {
    if (await cond()) return;
    await new Promise((r) => setTimeout(r, 100));
  }
  throw new Error(`never happened: ${what}`);
}

/** A script that spawns a copy of itself one level deeper until refused. */
export const RECURSE = `import { readFileSync } from 'node:fs';
export default async function (brig) {
  const me = readFileSync('/workspace/.brig/script.mjs', 'utf8');
  await brig.progress('spawning');
  try {
    const c = await brig.spawn({ task: 'deeper than ' + brig.packet.depth, script: me });
    return { depth: brig.packet.depth, child: c.result, childEnd: c.endReason };
  } catch (e) {
    return { depth: brig.packet.depth, refused: e.code };
  }
}`;

/** Steps until a steer arrives, then returns it. */
export const STEERABLE = `export default async function (brig) {
  for (let i = 0; i < 600; i++) {
    const s = await brig.progress('step ' + i);
    if (s.length) return { steered: s, at: i };
    await new Promise((r) => setTimeout(r, 100));
  }
  return { steered: [] };
}`;

/** First attempt: checkpoint and hang; after resume: report what it resumed from. */
export const RESUMABLE = `export default async function (brig) {
  const prev = await brig.resume();
  if (prev) return { resumedFrom: prev.state, untrusted: prev.untrusted };
  await brig.checkpoint({ i: 5 });
  await brig.progress('checkpointed');
  await new Promise((r) => setTimeout(r, 120000));
  return { resumedFrom: null };
}`;

export const SILENT = `export default async function () { await new Promise((r) => setTimeout(r, 120000)); }`;

/**
 * One supervisor per brig home. Two supervisors that each reconcile the same runs would
 * reattach, ghost-sweep and end each other's children (INV-8: exactly one end). The lock is a
 * file naming the owner's pid and its start time (so a recycled pid is not mistaken for a live
 * owner); a lock whose owner is gone is taken over. Fails closed: an unreadable lock refuses.
 */
import { promises as fs, readFileSync } from 'node:fs';
import path from 'node:path';
import { BrigError } from '../util/errors.js';

function startTimeOf(pid: number): string | undefined {
  try {
    // Field 22 of /proc/PID/stat, counted after the parenthesised command name.
    const stat = readFileSync(`/proc/${pid}/stat`, 'utf8');
    return stat.slice(stat.lastIndexOf(')') + 2).split(' ')[19];
  } catch {
    return undefined;
  }
}

function ownerAlive(text: string): number | undefined {
  const [pidText, started] = text.trim().split(' ');
  const pid = Number(pidText);
  if (!Number.isInteger(pid) || pid <= 0) return undefined;
  const now = startTimeOf(pid);
  return now !== undefined && now === started ? pid : undefined;
}

/** Takes the home's supervisor lock; returns its release. */
export async function lockHome(home: string): Promise<() => Promise<void>> {
  const file = path.join(home, 'supervisor.lock');
  const mine = `${process.pid} ${startTimeOf(process.pid) ?? '?'}\n`;
  for (let attempt = 0; attempt < 2; attempt++) {
    try {
      await fs.writeFile(file, mine, { flag: 'wx', mode: 0o600 });
      return async () => {
        const now = await fs.readFile(file, 'utf8').catch(() => '');
        if (now === mine) await fs.rm(file, { force: true });
      };
    } catch (e) {
      if ((e as NodeJS.ErrnoException).code !== 'EEXIST') throw e;
    }
    const held = await fs.readFile(file, 'utf8').catch(() => '');
    const owner = ownerAlive(held);
    if (owner === process.pid) return async () => {}; // a second supervisor in this process: the first releases
    if (owner !== undefined) {
      throw new BrigError('supervisor_running', `another brig supervisor (pid ${owner}) owns ${home}`, {
        data: { pid: owner },
        hint: 'Run `brig serve` so every command shares one supervisor, or wait for that one to end.',
      });
    }
    await fs.rm(file, { force: true }); // its owner is gone
  }
  throw new BrigError('supervisor_running', `could not take the supervisor lock of ${home}`);
}

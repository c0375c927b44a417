/**
 * Where a non-root supervisor's broker sockets go (root's: brokersDirFor).
 *
 * Guarantees: the directory is one no other local user can have made or entered first —
 * `$XDG_RUNTIME_DIR/brig/<h>` when that variable names an absolute, real directory of this uid
 * with mode 0700 (the login manager's, made per user); else `<home>/run/<h>` (the home is
 * private: compose refuses one with group or other bits); else, when that is too long for a
 * socket path, `/tmp/brig-XXXXXX/<h>` made by mkdtemp (a random name, 0700), recorded in
 * `<home>/runtime-dir` and used again while it is still a 0700 directory of this uid. Each
 * choice leaves `<dir>/<runId>/broker.sock` within a unix socket path (107 bytes). Threat: a
 * local user squatting a guessable path (`/tmp/brig-<uid>` was one: made first, it blocked
 * the supervisor for good) or planting a directory or link where the sockets will go.
 * Trusts: the login manager for $XDG_RUNTIME_DIR (checked: owner, mode, not a link); the
 * home's privacy. Fails: toward the next choice, never toward a directory it cannot vouch for;
 * ensurePrivateDirs (broker/) checks the result again before any socket is made.
 * $XDG_RUNTIME_DIR goes away when the user's last session ends unless lingering is on: a daemon
 * outliving the session under it loses its sockets. The choice of XDG or /tmp is recorded in
 * `<home>/runtime-dir` and kept while sound, whatever the next start's environment says.
 */
import crypto from 'node:crypto';
import fs from 'node:fs';
import path from 'node:path';
import { writeFileAtomicSync } from '../util/atomic-file.js';

/** The longest tail a brokers directory gets: a run's (or a pool slot's) directory and its socket. */
const SOCKET_TAIL = `/r-${'0'.repeat(16)}/broker.sock`;
/** Longest unix socket path Linux accepts (sun_path is 108 bytes with the NUL). */
const MAX_SOCKET_PATH = 107;
/** The record of the random /tmp directory, in the home. */
export const RUNTIME_DIR_RECORD = 'runtime-dir';
const TMP_PARENT = /^\/tmp\/brig-[A-Za-z0-9]{6}$/;

const fits = (dir: string): boolean => Buffer.byteLength(dir + SOCKET_TAIL) <= MAX_SOCKET_PATH;

/** A real directory (not a link) of `uid`, mode exactly 0700. */
function privateDirOf(dir: string, uid: number): boolean {
  try {
    const st = fs.lstatSync(dir);
    return st.isDirectory() && st.uid === uid && (st.mode & 0o777) === 0o700;
  } catch {
    return false;
  }
}

/**
 * The brokers directory of `home` (resolved) for a non-root `uid`; `h` names the home. The
 * choice is recorded in the home and kept while it is still sound, so a daemon restarted with
 * another environment (a service manager with no $XDG_RUNTIME_DIR) finds the sockets of the
 * children it reattaches.
 */
export function userBrokersDir(home: string, h: string, uid: number, env: NodeJS.ProcessEnv): string {
  const record = path.join(home, RUNTIME_DIR_RECORD);
  let recorded = '';
  try {
    recorded = fs.readFileSync(record, 'utf8').trim();
  } catch {
    // none yet
  }
  // The recorded parent: an XDG runtime directory's brig/ (its parent still this uid's 0700), or a random /tmp one.
  // An environment naming another runtime directory is judged afresh; none (a service manager's) keeps the record.
  const xdgRecorded = recorded.endsWith('/brig') && path.isAbsolute(recorded) && privateDirOf(path.dirname(recorded), uid) && (!env.XDG_RUNTIME_DIR || env.XDG_RUNTIME_DIR === path.dirname(recorded));
  if ((xdgRecorded || (TMP_PARENT.test(recorded) && privateDirOf(recorded, uid))) && fits(path.join(recorded, h))) return path.join(recorded, h);
  const remember = (parent: string) => {
    fs.mkdirSync(home, { recursive: true, mode: 0o700 });
    writeFileAtomicSync(record, `${parent}\n`, { mode: 0o600 });
    return path.join(parent, h);
  };
  const xdg = env.XDG_RUNTIME_DIR;
  if (xdg && path.isAbsolute(xdg) && fits(path.join(xdg, 'brig', h)) && privateDirOf(xdg, uid)) return remember(path.join(xdg, 'brig'));
  if (fits(path.join(home, 'run', h))) return path.join(home, 'run', h);
  return remember(fs.mkdtempSync('/tmp/brig-'));
}

/** 16 hex digits of the sha256 of the home's resolved path: one brokers directory per home. */
export function homeTag(home: string): string {
  return crypto.createHash('sha256').update(path.resolve(home)).digest('hex').slice(0, 16);
}

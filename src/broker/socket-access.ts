/**
 * Who can connect to a run's broker socket: the filesystem is the only gate.
 *
 * Guarantees: the brokers directories (a runtime directory per home, config's brokersDirFor)
 * are real directories owned by the supervisor's uid, mode 0700 — a looser mode is tightened,
 * a symlink or another owner is refused. A run's own directory and socket belong to the jail's
 * user (uid 65534, the only uid inside the jail that needs them), mode 0700 and 0600: root and
 * that jail connect, no other local uid does (EACCES), whichever parent mode someone loosens.
 * A supervisor that is not root cannot hand its files to the jail's uid; then the run's
 * directory is 0711 and its socket 0666, and only the private parent (0700, checked here)
 * keeps other local users out. Threat: a local user reaching a run's socket (and its bearer-
 * less refusals, or a stolen bearer) or planting a directory or symlink where brig will put
 * sockets. Trusts: the kernel's permission checks and root. Fails closed: refuses.
 */
import fs from 'node:fs';
import path from 'node:path';
import { BrigError } from '../util/errors.js';

/** The jail's user: it owns its run's socket. Absent: the supervisor's own uid does. */
export interface SocketOwner {
  uid: number;
  gid: number;
}

const uid = (): number | undefined => process.getuid?.();

function refuse(dir: string, why: string): never {
  throw new BrigError('invalid_input', `the broker directory ${dir} ${why}`, {
    hint: `Remove ${dir} (brig recreates it 0700 for its own uid), or run brig as the uid that owns it.`,
  });
}

/** Each of `dirs` (outermost first): created 0700 if missing; a directory of ours, then 0700. */
export async function ensurePrivateDirs(...dirs: string[]): Promise<void> {
  for (const dir of dirs) {
    await fs.promises.mkdir(dir, { recursive: true, mode: 0o700 });
    const st = await fs.promises.lstat(dir);
    if (st.isSymbolicLink() || !st.isDirectory()) refuse(dir, 'is not a directory');
    const me = uid();
    if (me !== undefined && st.uid !== me) refuse(dir, `belongs to uid ${st.uid}, not ${me}`);
    if ((st.mode & 0o777) !== 0o700) await fs.promises.chmod(dir, 0o700);
  }
}

/** Before listen: the run's directory exists and nobody but us can enter it yet. */
export async function prepareRunDir(dir: string): Promise<void> {
  await fs.promises.mkdir(dir, { recursive: true, mode: 0o700 });
  await fs.promises.chmod(dir, 0o700);
}

/** After listen: the socket and its directory handed to the jail's user (see the header). */
export async function grantRunSocket(dir: string, socketPath: string, owner: SocketOwner | undefined): Promise<void> {
  if (!owner || owner.uid === uid()) {
    await fs.promises.chmod(socketPath, 0o600);
    return;
  }
  if (uid() === 0) {
    await fs.promises.chown(socketPath, owner.uid, owner.gid);
    await fs.promises.chmod(socketPath, 0o600);
    await fs.promises.chown(dir, owner.uid, owner.gid);
    await fs.promises.chmod(dir, 0o700);
    return;
  }
  // Not root: the jail reaches the socket as "other"; only a private parent keeps local users out.
  const parent = path.dirname(dir);
  const st = await fs.promises.lstat(parent);
  if (st.isSymbolicLink() || !st.isDirectory() || st.uid !== uid() || (st.mode & 0o077) !== 0) {
    refuse(parent, 'is not a 0700 directory of this uid, and a run socket the jail can reach needs one');
  }
  await fs.promises.chmod(socketPath, 0o666);
  await fs.promises.chmod(dir, 0o711);
}

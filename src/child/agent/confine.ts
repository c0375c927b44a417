/**
 * Where the file tools may go: the workspace (read-write) and the artifacts (read-only).
 *
 * Guarantees: a path the file tools act on resolves — symlinks followed, `..` folded — to a
 * place inside one of the roots, and a write lands inside the writable root, never inside
 * its `.brig/` (the packet, the bearer, the spooled result). Paths are given relative to the
 * workspace or absolute. A dangling symlink is refused (writing through it would land
 * wherever it points).
 * Threat: a model (steered by hostile input) wandering into /run/brig, /opt/brig, /proc or
 * the bearer file through `../` or a symlink it made itself. The jail is the security
 * boundary — the shell tool can read anything the jail user can — so this keeps the file
 * tools honest, and the bearer out of the transcript; it does not hold back an attacker who
 * races a symlink swap between the check and the open.
 * Fails closed: anything that cannot be resolved is refused.
 */
import fs from 'node:fs';
import path from 'node:path';

export interface Roots {
  /** Read-write; relative paths resolve against it. */
  workspace: string;
  /** Read-only. */
  artifacts: string;
}

export const JAIL_ROOTS: Roots = { workspace: '/workspace', artifacts: '/artifacts' };

/** Inside the workspace, refused to the file tools: the supervisor's and the runtime's own. */
const PRIVATE = '.brig';
/** But the loop's spill files are there for the model to read. */
const READABLE_PRIVATE = ['.brig/spill'];

export type Confined = { ok: true; path: string; root: 'workspace' | 'artifacts' } | { ok: false; reason: string };

function within(p: string, root: string): boolean {
  return p === root || p.startsWith(root.endsWith(path.sep) ? root : root + path.sep);
}

function realRoot(root: string): string | null {
  try {
    return fs.realpathSync(root);
  } catch {
    return null;
  }
}

/** The real path of `p`, following every symlink; the missing tail (a file to create) kept as is. */
function realOf(p: string): string | null {
  const missing: string[] = [];
  let cur = p;
  for (;;) {
    try {
      const real = fs.realpathSync(cur);
      return path.join(real, ...missing.reverse());
    } catch (e) {
      if ((e as NodeJS.ErrnoException).code !== 'ENOENT') return null;
      // realpath says ENOENT for a dangling symlink too: a name that exists is not "missing".
      try {
        fs.lstatSync(cur);
        return null;
      } catch {
        // truly absent
      }
      const parent = path.dirname(cur);
      if (parent === cur) return null;
      missing.push(path.basename(cur));
      cur = parent;
    }
  }
}

export function confine(input: string, roots: Roots, mode: 'read' | 'write'): Confined {
  if (typeof input !== 'string' || input.length === 0) return { ok: false, reason: 'a path is required' };
  if (input.includes('\0')) return { ok: false, reason: 'the path has a NUL byte' };
  const ws = realRoot(roots.workspace);
  const art = realRoot(roots.artifacts);
  if (!ws) return { ok: false, reason: 'the workspace is missing' };
  const abs = path.resolve(roots.workspace, input);
  const real = realOf(abs);
  if (!real) return { ok: false, reason: `${input} cannot be resolved (a dangling symlink or an unreadable directory)` };
  const outside = `${input} is outside ${roots.workspace}${mode === 'read' ? ` and ${roots.artifacts}` : ''}`;
  if (within(real, ws)) {
    const rel = path.relative(ws, real);
    const priv = rel === PRIVATE || rel.startsWith(PRIVATE + path.sep);
    if (priv && (mode === 'write' || !READABLE_PRIVATE.some((r) => rel === r || rel.startsWith(r + path.sep)))) {
      return { ok: false, reason: `${input} is in ${PRIVATE}/, which belongs to brig` };
    }
    return { ok: true, path: real, root: 'workspace' };
  }
  if (art && within(real, art)) {
    return mode === 'read' ? { ok: true, path: real, root: 'artifacts' } : { ok: false, reason: `${roots.artifacts} is read-only` };
  }
  return { ok: false, reason: outside };
}

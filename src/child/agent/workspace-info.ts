/**
 * What the prompt's Workspace section says about the jail, gathered once at start with
 * Node built-ins (no shell): runtime, notable tools on PATH, disk free, file counts.
 */
import fs from 'node:fs';
import path from 'node:path';
import type { Roots } from './confine.js';
import { walk } from './tools/walk.js';

/** The jail's PATH (the child env is built from nothing; brig sets it to this). */
export const JAIL_PATH_DIRS = ['/bin', '/usr/bin'];

const NOTABLE = ['sh', 'bash', 'node', 'npm', 'python3', 'git', 'jq', 'grep', 'sed', 'awk', 'find', 'xargs', 'sort', 'diff', 'patch', 'tar', 'gzip', 'unzip', 'make', 'gcc', 'sqlite3', 'duckdb', 'rg', 'busybox'];
const MAX_COUNT = 10_000;

function executable(p: string): boolean {
  try {
    fs.accessSync(p, fs.constants.X_OK);
    return fs.statSync(p).isFile();
  } catch {
    return false;
  }
}

function human(bytes: number): string {
  const u = ['B', 'KiB', 'MiB', 'GiB', 'TiB'];
  let i = 0;
  for (; bytes >= 1024 && i < u.length - 1; i++) bytes /= 1024;
  return `${bytes.toFixed(i ? 1 : 0)} ${u[i]}`;
}

function fileCount(dir: string, skipBrig: boolean): string {
  if (!fs.existsSync(dir)) return 'none';
  const { entries, truncated } = walk(dir, { maxDepth: 64, maxEntries: MAX_COUNT, skip: (rel) => skipBrig && rel === '.brig' });
  const n = entries.filter((e) => e.type === 'file').length;
  return truncated ? `over ${n}` : String(n);
}

export function gatherWorkspaceInfo(roots: Roots, pathDirs: readonly string[] = JAIL_PATH_DIRS): string[] {
  const found = NOTABLE.filter((t) => pathDirs.some((d) => executable(path.join(d, t))));
  let free = 'unknown';
  try {
    const s = fs.statfsSync(roots.workspace);
    free = human(s.bavail * s.bsize);
  } catch {
    // not supported here
  }
  return [
    `runtime: node ${process.version} (${process.platform}/${process.arch})`,
    `tools on PATH (${pathDirs.join(':')}): ${found.join(', ') || 'none of the usual ones'}`,
    `disk free in ${roots.workspace}: ${free}`,
    `files in ${roots.workspace}: ${fileCount(roots.workspace, true)}; in ${roots.artifacts}: ${fileCount(roots.artifacts, false)}`,
  ];
}

/**
 * What the prompt's Workspace section says about the jail — the truth for whatever image the
 * child runs in, gathered once at start inside the jail with Node built-ins (no shell): the
 * image's OS, language versions (each found interpreter or compiler asked `--version`, bounded
 * in time), installed packages (dpkg, apk, pip and global npm lists, bounded), tools on the
 * jail's own PATH, disk free, file counts and a bounded list of the workspace's files. An agent
 * need not burn a step asking what is installed.
 *
 * Every list is bounded (names and characters) and the version probes share one time budget,
 * so a huge image or a hanging binary cannot stall the start or swell the prompt.
 */
import { execFileSync, spawnSync } from 'node:child_process';
import fs from 'node:fs';
import path from 'node:path';
import type { Roots } from './confine.js';
import { walk } from './tools/walk.js';

/** The jail's PATH when the environment names none (the child image's). */
export const JAIL_PATH_DIRS = ['/bin', '/usr/bin'];

const NOTABLE = ['sh', 'bash', 'node', 'npm', 'python3', 'python', 'pip3', 'git', 'jq', 'grep', 'sed', 'awk', 'find', 'xargs', 'sort', 'diff', 'patch', 'tar', 'gzip', 'unzip', 'curl', 'make', 'cmake', 'gcc', 'cc', 'g++', 'clang', 'go', 'rustc', 'cargo', 'java', 'ruby', 'perl', 'sqlite3', 'duckdb', 'rg', 'busybox'];
/** Asked `--version` when found on PATH, in this order (the budget may stop before the end). */
const LANGUAGES: [name: string, args: string[]][] = [
  ['python3', ['--version']],
  ['node', ['--version']],
  ['gcc', ['--version']],
  ['go', ['version']],
  ['rustc', ['--version']],
  ['java', ['-version']],
  ['ruby', ['--version']],
  ['perl', ['-e', 'print "perl $^V\\n"']],
  ['git', ['--version']],
];
const MAX_COUNT = 10_000;
const VERSION_BUDGET_MS = 3000;
const VERSION_TIMEOUT_MS = 1500;
const MAX_NAMES = 60;
const MAX_FILES_LISTED = 40;
const MAX_LINE = 600;

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

const cut = (s: string, n = MAX_LINE) => (s.length > n ? `${s.slice(0, n - 1)}…` : s);

/** `n names: a, b, …` with at most MAX_NAMES names. */
function nameList(names: string[]): string {
  const shown = names.slice(0, MAX_NAMES).join(', ');
  return `${names.length}${names.length ? `: ${shown}${names.length > MAX_NAMES ? `, … (${names.length - MAX_NAMES} more)` : ''}` : ''}`;
}

function fileCount(dir: string, skipBrig: boolean): string {
  if (!fs.existsSync(dir)) return 'none';
  const { entries, truncated } = walk(dir, { maxDepth: 64, maxEntries: MAX_COUNT, skip: (rel) => skipBrig && rel === '.brig' });
  const n = entries.filter((e) => e.type === 'file').length;
  return truncated ? `over ${n}` : String(n);
}

function readText(file: string, maxBytes = 8 * 1024 * 1024): string | null {
  try {
    const fd = fs.openSync(file, 'r');
    try {
      const buf = Buffer.alloc(Math.min(maxBytes, fs.fstatSync(fd).size));
      const n = fs.readSync(fd, buf, 0, buf.length, 0);
      return buf.subarray(0, n).toString('utf8');
    } finally {
      fs.closeSync(fd);
    }
  } catch {
    return null;
  }
}

/** The image's OS as /etc/os-release names it. */
export function osName(root = '/'): string | null {
  const t = readText(path.join(root, 'etc/os-release'), 64 * 1024);
  const m = t ? (/^PRETTY_NAME="?([^"\n]*)"?$/m.exec(t) ?? /^NAME="?([^"\n]*)"?$/m.exec(t)) : null;
  return m?.[1] ? cut(m[1], 120) : null;
}

/** Installed packages by manager (dpkg's status, apk's db, pip's dist-info, global npm), names sorted. */
export function installedPackages(root = '/'): { manager: string; names: string[] }[] {
  const out: { manager: string; names: string[] }[] = [];
  const dpkg = readText(path.join(root, 'var/lib/dpkg/status'));
  if (dpkg !== null) {
    const names = dpkg.split(/\n\n+/).flatMap((stanza) => {
      const name = /^Package: (\S+)$/m.exec(stanza)?.[1];
      return name && /^Status: .* installed$/m.test(stanza) ? [name] : [];
    });
    out.push({ manager: 'dpkg', names: names.sort() });
  }
  const apk = readText(path.join(root, 'lib/apk/db/installed'));
  if (apk !== null) out.push({ manager: 'apk', names: [...apk.matchAll(/^P:(\S+)$/gm)].map((m) => m[1]!).sort() });
  const pip = new Set<string>();
  for (const base of ['usr/lib', 'usr/local/lib']) {
    let pys: string[] = [];
    try {
      pys = fs.readdirSync(path.join(root, base)).filter((d) => /^python3(\.\d+)?$/.test(d));
    } catch {
      continue;
    }
    for (const py of pys) {
      for (const sub of ['site-packages', 'dist-packages']) {
        try {
          for (const d of fs.readdirSync(path.join(root, base, py, sub))) {
            const m = /^([A-Za-z0-9_.-]+?)-[0-9][^/]*\.(dist-info|egg-info)$/.exec(d);
            if (m?.[1]) pip.add(m[1].toLowerCase());
          }
        } catch {
          // no such directory in this image
        }
      }
    }
  }
  if (pip.size > 0) out.push({ manager: 'pip', names: [...pip].sort() });
  const npm = new Set<string>();
  for (const dir of ['usr/lib/node_modules', 'usr/local/lib/node_modules']) {
    try {
      for (const d of fs.readdirSync(path.join(root, dir))) {
        if (d.startsWith('@')) for (const s of fs.readdirSync(path.join(root, dir, d))) npm.add(`${d}/${s}`);
        else if (!d.startsWith('.')) npm.add(d);
      }
    } catch {
      // none here
    }
  }
  if (npm.size > 0) out.push({ manager: 'npm (global)', names: [...npm].sort() });
  return out;
}

/** The first line each found language prints for its version, within one shared time budget. */
export function languageVersions(found: ReadonlyMap<string, string>, budgetMs = VERSION_BUDGET_MS): string[] {
  const end = Date.now() + budgetMs;
  const out: string[] = [];
  for (const [name, args] of LANGUAGES) {
    const exe = found.get(name);
    if (!exe) continue;
    const left = end - Date.now();
    if (left <= 0) {
      out.push(`${name}: not asked (time budget spent)`);
      continue;
    }
    const r = spawnSync(exe, args, { timeout: Math.min(VERSION_TIMEOUT_MS, left), encoding: 'utf8', stdio: ['ignore', 'pipe', 'pipe'], maxBuffer: 64 * 1024, cwd: '/' });
    const first = `${r.stdout ?? ''}\n${r.stderr ?? ''}`.split('\n').map((l) => l.trim()).find(Boolean);
    out.push(r.error || r.status !== 0 || !first ? `${name}: present (no version answer)` : cut(first, 100));
  }
  return out;
}

/** Executables on PATH: every one by name (first dir wins), bounded per directory. */
function onPath(pathDirs: readonly string[]): Map<string, string> {
  const found = new Map<string, string>();
  for (const d of pathDirs) {
    let names: string[] = [];
    try {
      names = fs.readdirSync(d).slice(0, 5000);
    } catch {
      continue;
    }
    for (const n of names) if (!found.has(n) && executable(path.join(d, n))) found.set(n, path.join(d, n));
  }
  return found;
}

function workspaceFiles(workspace: string): string {
  const { entries, truncated } = walk(workspace, { maxDepth: 8, maxEntries: 2000, skip: (rel) => rel === '.brig' });
  const files = entries.filter((e) => e.type === 'file').map((e) => e.rel);
  if (files.length === 0) return 'none';
  const more = files.length > MAX_FILES_LISTED || truncated ? `, … (${truncated ? 'more' : files.length - MAX_FILES_LISTED} not listed)` : '';
  return cut(files.slice(0, MAX_FILES_LISTED).join(', ') + more, 2000);
}

/**
 * The PATH the engine gave this jail, as its PID's environment holds it (the image's own PATH in a
 * foreign image), read from /proc: only config/ reads the process environment.
 */
export function jailPathDirs(environ = '/proc/self/environ'): string[] {
  let text = '';
  try {
    text = fs.readFileSync(environ, 'utf8'); // a /proc file: its stat size is 0, read it whole
  } catch {
    // node is execute-only, so this runtime is non-dumpable and its own environ is root's: the
    // environment it hands a child (brig's busybox, readable) is the same one.
    try {
      text = execFileSync('/opt/brig/bin/busybox', ['cat', environ], { encoding: 'utf8', timeout: 3000 });
    } catch {
      // no /proc here
    }
  }
  const line = text.split('\0').find((l) => l.startsWith('PATH='));
  return pathDirsOf(line?.slice(5));
}

/** A PATH value's absolute directories (at most 32); the child image's when there are none. */
export function pathDirsOf(value: string | undefined): string[] {
  const dirs = (value ?? '').split(':').filter((d) => d.startsWith('/'));
  return dirs.length > 0 ? dirs.slice(0, 32) : JAIL_PATH_DIRS;
}

/**
 * What the Workspace section says of the image rather than of the run — its OS, the tools on
 * the PATH, language versions, installed packages: the same for every run in that image and
 * PATH, so a pre-started agent runtime (child/agent/prestart.ts) gathers it before its run.
 */
export interface ImageFacts {
  /** The PATH directories the facts were gathered along. */
  dirs: string[];
  lines: string[];
}

export function gatherImageFacts(pathDirs: readonly string[] = jailPathDirs(), root = '/'): ImageFacts {
  const dirs = pathDirs.length > 0 ? [...pathDirs] : JAIL_PATH_DIRS;
  const exes = onPath(dirs);
  const notable = NOTABLE.filter((t) => exes.has(t));
  const os = osName(root);
  const versions = languageVersions(exes);
  const packages = installedPackages(root);
  return {
    dirs,
    lines: [
      `runtime: node ${process.version} (${process.platform}/${process.arch}) — brig's, for this agent loop; the image's own tools are below`,
      ...(os ? [`image OS: ${os}`] : []),
      cut(`tools on PATH (${dirs.join(':')}): ${notable.join(', ') || 'none of the usual ones'} (${exes.size} executables in all)`),
      ...(versions.length ? [cut(`language versions: ${versions.join('; ')}`)] : []),
      ...(packages.length ? packages.map((p) => cut(`installed (${p.manager}): ${nameList(p.names)}`)) : ['installed packages: no dpkg, apk, pip or global npm list in this image']),
    ],
  };
}

/** The Workspace section's lines: the image's facts (gathered now unless given), then the run's workspace. */
export function gatherWorkspaceInfo(roots: Roots, pathDirs: readonly string[] = jailPathDirs(), root = '/', image: ImageFacts = gatherImageFacts(pathDirs, root)): string[] {
  let free = 'unknown';
  try {
    const s = fs.statfsSync(roots.workspace);
    free = human(s.bavail * s.bsize);
  } catch {
    // not supported here
  }
  return [
    ...image.lines,
    `disk free in ${roots.workspace}: ${free}`,
    `files in ${roots.workspace}: ${fileCount(roots.workspace, true)}; in ${roots.artifacts}: ${fileCount(roots.artifacts, false)}`,
    `workspace files: ${workspaceFiles(roots.workspace)}`,
  ];
}

/**
 * brig's runtime for a foreign image: node with its own loader and libraries, a static busybox,
 * and the compiled child runtime, in a brig-owned, content-named host directory that every jail
 * of a foreign image gets read-only at /opt/brig (RUNTIME_MOUNT).
 *
 * Guarantees: the image is never written (the runtime is a read-only bind, not a layer); the
 * runtime never depends on the image's libc — `/opt/brig/bin/node` execs node through the
 * bundle's own loader with `--library-path` at the bundle's libraries, so a musl, distroless or
 * FROM scratch image runs it as the child image does; the directory is named by the fingerprint
 * of its plan (image.ts `fingerprint`: the content of every file but node's, node's identity), is
 * made once in a temp directory and renamed into place whole, and holds only root-owned,
 * read-only files (0444/0555 in 0555 directories; the loader execute-only, 0711, so the runtime it
 * starts is non-dumpable as in the child image — child/tool-bound.ts).
 * Threat: a bundle half written or altered after it was made. Trusts: the host's node, busybox
 * and libraries (the supervisor's own), and the root-owned directory it lives in.
 * Fails: a missing host file or a copy error throws `image_build_failed`; nothing half made is
 * ever used (the rename is the commit, and a directory without its marker is made again).
 */
import fs from 'node:fs';
import os from 'node:os';
import path from 'node:path';
import { BrigError } from '../../util/errors.js';
import { fingerprint, NODE_MODE, sharedLibraries, type ImageEntry, type ImagePlan } from './image.js';
import type { ImageCache } from './image-cache.js';
import { RUNTIME_MOUNT } from './profile.js';

/** The node every image runs brig's runtime with (the child image holds it as a link to /usr/bin/node). */
export const RUNTIME_NODE = `${RUNTIME_MOUNT}/bin/node`;
/** brig's own static busybox in a foreign image (the warm pool's waiter, never the image's). */
export const RUNTIME_BUSYBOX = `${RUNTIME_MOUNT}/bin/busybox`;
/** Written last inside a bundle: a directory without it is not a bundle. */
const MARKER = '.brig-runtime';

/** Where root keeps bundles (shared by owners: a bundle is named by its content). */
export function runtimeRootFor(uid = process.getuid?.() ?? 0): string {
  return uid === 0 ? '/var/lib/brig/runtime' : path.join(os.homedir(), '.cache', 'brig', 'runtime');
}

export interface RuntimeSources {
  nodePath: string;
  busyboxPath: string;
  childRuntimeDir: string | undefined;
}

/** The launcher: brig's busybox runs it, so it needs nothing of the image; node loads only the bundle's libraries. */
export function nodeLauncher(loader: string): string {
  const lib = `${RUNTIME_MOUNT}/node/lib`;
  return `#!${RUNTIME_BUSYBOX} sh\nexec ${lib}/${loader} --library-path ${lib} ${RUNTIME_MOUNT}/node/bin/node "$@"\n`;
}

/** The bundle's plan: paths relative to the bundle's root (RUNTIME_MOUNT inside a jail). */
export async function planRuntimeBundle(src: RuntimeSources, cache: ImageCache): Promise<ImagePlan> {
  const entries: ImageEntry[] = [];
  const dir = (dest: string) => entries.push({ kind: 'dir', dest, mode: 0o555, owned: false });
  for (const d of ['bin', 'node', 'node/bin', 'node/lib', 'child']) dir(d);
  entries.push({ kind: 'host', dest: 'bin/busybox', mode: 0o555, hostPath: src.busyboxPath });
  entries.push({ kind: 'host', dest: 'node/bin/node', mode: 0o555, hostPath: src.nodePath });
  const libs = await cache.probe(`ldd ${src.nodePath}`, [src.nodePath, '/etc/ld.so.cache'], () => sharedLibraries(src.nodePath));
  const loader = libs.find((l) => /\/ld-[^/]*\.so[.0-9]*$/.test(l));
  if (!loader) throw new BrigError('image_build_failed', `ldd names no loader for ${src.nodePath}`, { hint: 'brig runs a dynamically linked node; check `ldd $(which node)`.' });
  // The loader is what a foreign image's runtime execs (the launcher): execute-only, like the
  // child image's node, so the runtime is non-dumpable there too (child/tool-bound.ts).
  for (const lib of libs) entries.push({ kind: 'host', dest: `node/lib/${path.basename(lib)}`, mode: lib === loader ? NODE_MODE : 0o555, hostPath: lib });
  entries.push({ kind: 'data', dest: 'bin/node', mode: 0o555, data: Buffer.from(nodeLauncher(path.basename(loader))) });
  entries.push({ kind: 'data', dest: 'package.json', mode: 0o444, data: Buffer.from('{"type":"module"}\n') });
  if (src.childRuntimeDir !== undefined && fs.existsSync(src.childRuntimeDir)) {
    for (const d of await fs.promises.readdir(src.childRuntimeDir, { withFileTypes: true, recursive: true })) {
      const rel = path.relative(src.childRuntimeDir, path.join(d.parentPath, d.name)).split(path.sep).join('/');
      if (d.isDirectory()) dir(`child/${rel}`);
      else if (d.isFile() && !rel.endsWith('.map') && !rel.endsWith('.d.ts')) entries.push({ kind: 'host', dest: `child/${rel}`, mode: 0o444, hostPath: path.join(src.childRuntimeDir, rel) });
    }
  }
  entries.sort((a, b) => (a.dest < b.dest ? -1 : a.dest > b.dest ? 1 : 0));
  return { name: 'runtime', entries };
}

export interface RuntimeBundle {
  dir: string;
  hash: string;
}

/** The bundle for `plan` under `root`, made once (temp directory, then rename). */
export async function ensureRuntimeBundle(root: string, plan: ImagePlan, cache: ImageCache): Promise<RuntimeBundle> {
  const hash = await fingerprint(plan, cache);
  const dir = path.join(root, hash);
  if (fs.existsSync(path.join(dir, MARKER))) return { dir, hash };
  await fs.promises.mkdir(root, { recursive: true, mode: 0o755 });
  const tmp = await fs.promises.mkdtemp(path.join(root, `.tmp-${hash}-`));
  try {
    for (const e of plan.entries) {
      const to = path.join(tmp, e.dest);
      await fs.promises.mkdir(path.dirname(to), { recursive: true, mode: 0o755 });
      if (e.kind === 'dir') await fs.promises.mkdir(to, { recursive: true, mode: 0o755 });
      else if (e.kind === 'data') await fs.promises.writeFile(to, e.data, { mode: e.mode });
      else if (e.kind === 'host') await fs.promises.copyFile(e.hostPath, to);
      else await fs.promises.symlink(e.target, to);
      if (e.kind !== 'link' && e.kind !== 'dir') await fs.promises.chmod(to, e.mode);
    }
    await fs.promises.writeFile(path.join(tmp, MARKER), `${hash}\n`, { mode: 0o444 });
    // Directories last (read-only directories could not be filled), deepest first.
    const dirs = plan.entries.filter((e) => e.kind === 'dir').map((e) => e.dest).sort((a, b) => b.length - a.length);
    for (const d of dirs) await fs.promises.chmod(path.join(tmp, d), 0o555);
    await fs.promises.chmod(tmp, 0o555);
    await fs.promises.rename(tmp, dir).catch(async (e: NodeJS.ErrnoException) => {
      // Another process made the same bundle first: theirs is as good (same content name).
      if (e.code !== 'ENOTEMPTY' && e.code !== 'EEXIST') throw e;
      await removeTree(tmp);
    });
    return { dir, hash };
  } catch (e) {
    await removeTree(tmp).catch(() => undefined);
    throw new BrigError('image_build_failed', `making brig's runtime for foreign images failed: ${(e as Error).message}`, { cause: e });
  }
}

async function removeTree(dir: string): Promise<void> {
  // Read-only directories first get their write bit back, or rm cannot empty them.
  for (const d of await fs.promises.readdir(dir, { withFileTypes: true, recursive: true }).catch(() => [])) {
    if (d.isDirectory()) await fs.promises.chmod(path.join(d.parentPath, d.name), 0o755).catch(() => undefined);
  }
  await fs.promises.chmod(dir, 0o755).catch(() => undefined);
  await fs.promises.rm(dir, { recursive: true, force: true });
}

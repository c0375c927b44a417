/**
 * The child image, built FROM scratch out of host files: a static busybox for the userland,
 * the host's node binary with exactly the shared libraries `ldd` names, and brig's compiled
 * child runtime (Node built-ins only). No registry, no package manager, no shell at build.
 *
 * Guarantees: the image holds only the files listed in its plan; /workspace is owned by the
 * jail user so a fresh workspace volume inherits that owner; the tag carries a fingerprint of
 * the plan (content of every file but the node binary, see fingerprint), so a changed runtime,
 * recipe or node gets a new tag and never reuses a stale image.
 * Trusts: the host's node, busybox and libraries (they are the supervisor's own).
 * Fails: a missing host file or a build error throws `image_build_failed`.
 */
import { execFile } from 'node:child_process';
import crypto from 'node:crypto';
import fs from 'node:fs';
import path from 'node:path';
import { promisify } from 'node:util';
import type Docker from 'dockerode';
import tar from 'tar-stream';
import { BrigError } from '../../util/errors.js';
import { LABELS } from './labels.js';
import { ImageCache } from './image-cache.js';

const run = promisify(execFile);

export const CHILD_IMAGE_REPO = 'brig-child';
/** The node binary's mode in the image: execute-only (root's), see child/tool-bound.ts. */
export const NODE_MODE = 0o711;
/** Where the child runtime lives in the image. */
export const CHILD_RUNTIME_DIR = '/opt/brig/child';

export type ImageEntry =
  | { kind: 'dir'; dest: string; mode: number; owned: boolean }
  | { kind: 'link'; dest: string; target: string }
  | { kind: 'host'; dest: string; mode: number; hostPath: string }
  | { kind: 'data'; dest: string; mode: number; data: Buffer };

export interface ImagePlan {
  name: string;
  entries: ImageEntry[];
}

export interface ChildImageSources {
  nodePath: string;
  busyboxPath: string;
  /** Compiled child runtime (dist/child); absent → an image without it (probe-only). */
  childRuntimeDir: string | undefined;
}

/** The libraries a dynamic binary loads, as ldd resolves them on this host. */
export async function sharedLibraries(binary: string): Promise<string[]> {
  let out: string;
  try {
    out = (await run('ldd', [binary], { env: {} })).stdout;
  } catch (e) {
    const stdout = (e as { stdout?: string }).stdout ?? '';
    if (/not a dynamic executable|statically linked/.test(stdout + String((e as { stderr?: string }).stderr ?? ''))) return [];
    throw new BrigError('image_build_failed', `ldd ${binary} failed`, { cause: e });
  }
  const libs: string[] = [];
  for (const line of out.split('\n')) {
    const m = /=>\s*(\/\S+)/.exec(line) ?? /^\s*(\/\S+)\s+\(/.exec(line);
    if (m?.[1]) libs.push(m[1]);
  }
  return [...new Set(libs)].sort();
}

function listFiles(dir: string): string[] {
  const out: string[] = [];
  for (const d of fs.readdirSync(dir, { withFileTypes: true, recursive: true })) {
    if (d.isFile()) out.push(path.relative(dir, path.join(d.parentPath, d.name)));
  }
  return out.sort();
}

/** The plan of the child image. */
export async function planChildImage(src: ChildImageSources, cache: ImageCache = new ImageCache()): Promise<ImagePlan> {
  const entries: ImageEntry[] = [];
  const dir = (dest: string, owned = false, mode = 0o755) => entries.push({ kind: 'dir', dest, mode, owned });
  dir('tmp', false, 0o1777);
  for (const d of ['bin', 'usr', 'usr/bin', 'etc', 'proc', 'sys', 'dev', 'run', 'run/brig', 'artifacts', 'opt', 'opt/brig']) dir(d);
  dir('workspace', true);
  dir('workspace/out', true);

  entries.push({ kind: 'host', dest: 'bin/busybox', mode: 0o755, hostPath: src.busyboxPath });
  const applets = await cache.probe(`applets ${src.busyboxPath}`, [src.busyboxPath], async () => (await run(src.busyboxPath, ['--list'], { env: {} })).stdout.split('\n').filter((a) => /^[a-z0-9_.[-]+$/.test(a)));
  for (const a of applets.sort()) if (a !== 'busybox') entries.push({ kind: 'link', dest: `bin/${a}`, target: '/bin/busybox' });

  // Execute-only: every process that execs node is non-dumpable, so no other process of the
  // jail's uid can read its memory, environment or fds (child/tool-bound.ts checks it).
  entries.push({ kind: 'host', dest: 'usr/bin/node', mode: NODE_MODE, hostPath: src.nodePath });
  // The paths a foreign image's runtime bind gives (runtime-bundle.ts): one argv for every image.
  dir('opt/brig/bin');
  entries.push({ kind: 'link', dest: 'opt/brig/bin/node', target: '/usr/bin/node' });
  entries.push({ kind: 'link', dest: 'opt/brig/bin/busybox', target: '/bin/busybox' });
  const libDirs = new Set<string>();
  for (const lib of await cache.probe(`ldd ${src.nodePath}`, [src.nodePath, '/etc/ld.so.cache'], () => sharedLibraries(src.nodePath))) {
    const rel = lib.replace(/^\/+/, '');
    for (let d = path.posix.dirname(rel); d !== '.'; d = path.posix.dirname(d)) libDirs.add(d);
    entries.push({ kind: 'host', dest: rel, mode: 0o755, hostPath: lib });
  }
  for (const d of [...libDirs].sort()) dir(d);

  entries.push({ kind: 'data', dest: 'etc/passwd', mode: 0o644, data: Buffer.from('root:x:0:0:root:/:/bin/false\nnobody:x:65534:65534:brig child:/workspace:/bin/sh\n') });
  entries.push({ kind: 'data', dest: 'etc/group', mode: 0o644, data: Buffer.from('root:x:0:\nnogroup:x:65534:\n') });
  entries.push({ kind: 'data', dest: 'opt/brig/package.json', mode: 0o644, data: Buffer.from('{"type":"module"}\n') });
  if (src.childRuntimeDir !== undefined && fs.existsSync(src.childRuntimeDir)) {
    dir('opt/brig/child');
    for (const f of listFiles(src.childRuntimeDir)) {
      if (f.endsWith('.map') || f.endsWith('.d.ts')) continue;
      const dest = `opt/brig/child/${f.split(path.sep).join('/')}`;
      for (let d = path.posix.dirname(dest); d !== 'opt/brig/child'; d = path.posix.dirname(d)) dir(d);
      entries.push({ kind: 'host', dest, mode: 0o644, hostPath: path.join(src.childRuntimeDir, f) });
    }
  }
  return { name: 'child', entries: dedupeDirs(entries) };
}

function dedupeDirs(entries: ImageEntry[]): ImageEntry[] {
  const seen = new Set<string>();
  return entries.filter((e) => (e.kind !== 'dir' ? true : seen.has(e.dest) ? false : (seen.add(e.dest), true)));
}

/** Host files up to this size are fingerprinted by content; larger ones by metadata. */
export const CONTENT_HASH_MAX_BYTES = 16 * 1024 * 1024;

/**
 * A fingerprint of the plan: the Dockerfile recipe, every entry's name, kind and mode, and the
 * content (its sha256) of every file up to CONTENT_HASH_MAX_BYTES (busybox, the shared
 * libraries, the child runtime, /etc files). Only a larger host file — in practice the ~100 MB
 * node binary — counts by path, size, mtime and inode: hashing it on every spawn would cost more
 * than the spawn. So a rebuilt but unchanged dist/child keeps its tag, and any changed byte of
 * it, any changed recipe line, or a replaced node binary gets a new one. The cache remembers a
 * file's sha256 while its identity holds (image-cache.ts).
 */
export async function fingerprint(plan: ImagePlan, cache: ImageCache = new ImageCache()): Promise<string> {
  const h = crypto.createHash('sha256').update(`brig-image-v3\0${plan.name}\0${dockerfile(plan.name, '')}\0`);
  for (const e of plan.entries) {
    h.update(`${e.kind}\0${e.dest}\0`);
    if (e.kind === 'dir') h.update(`${e.mode}\0${e.owned}\0`);
    else if (e.kind === 'link') h.update(`${e.target}\0`);
    else if (e.kind === 'data') h.update(`${e.mode}\0`).update(e.data);
    else {
      const st = fs.statSync(e.hostPath); // synchronously: see image-cache.ts's fileIdentity
      if (st.size <= CONTENT_HASH_MAX_BYTES) h.update(`${e.mode}\0content\0${st.size}\0${await cache.contentSha(e.hostPath)}\0`);
      else h.update(`${e.mode}\0meta\0${e.hostPath}\0${st.size}\0${st.mtimeMs}\0${st.ino}\0`);
    }
  }
  return h.digest('hex').slice(0, 16);
}

type TarHeader = Parameters<ReturnType<typeof tar.pack>['entry']>[0];

function dockerfile(plan: string, hash: string): string {
  return [
    'FROM scratch',
    'COPY rootfs/ /',
    'COPY --chown=65534:65534 workspace/ /workspace/',
    'USER 65534:65534',
    'WORKDIR /workspace',
    `LABEL ${LABELS.managed}="1" ${LABELS.image}="${plan}" ${LABELS.imageHash}="${hash}"`,
    '',
  ].join('\n');
}

/** The build context as a tar stream: the Dockerfile, rootfs/ and workspace/. */
export function buildContext(plan: ImagePlan, hash: string): NodeJS.ReadableStream {
  const pack = tar.pack();
  const put = async () => {
    const add = (header: TarHeader, data?: Buffer) =>
      new Promise<void>((res, rej) => pack.entry(header, data ?? Buffer.alloc(0), (e) => (e ? rej(e) : res())));
    await add({ name: 'Dockerfile', mode: 0o644 }, Buffer.from(dockerfile(plan.name, hash)));
    for (const e of plan.entries) {
      const top = e.dest === 'workspace' || e.dest.startsWith('workspace/') ? '' : 'rootfs/';
      const name = `${top}${e.dest}`;
      if (e.kind === 'dir') await add({ name, type: 'directory', mode: e.mode });
      else if (e.kind === 'link') await add({ name, type: 'symlink', linkname: e.target });
      else if (e.kind === 'data') await add({ name, mode: e.mode }, e.data);
      else {
        const st = await fs.promises.stat(e.hostPath);
        await new Promise<void>((res, rej) => {
          const sink = pack.entry({ name, mode: e.mode, size: st.size }, (er) => (er ? rej(er) : res()));
          fs.createReadStream(e.hostPath).on('error', rej).pipe(sink);
        });
      }
    }
    pack.finalize();
  };
  put().catch((e) => pack.destroy(e as Error));
  return pack as unknown as NodeJS.ReadableStream;
}

/** Builds the plan's image unless its tag is present. Returns the tag. */
export async function ensurePlanImage(
  docker: Docker,
  plan: ImagePlan,
  repo: string,
  opts: { force?: boolean; onProgress?: (line: string) => void; cache?: ImageCache; signal?: AbortSignal } = {},
): Promise<{ tag: string; built: boolean }> {
  const hash = await fingerprint(plan, opts.cache);
  const tag = `${repo}:${hash}`;
  // A driver closed meanwhile (its connections gone) starts no request that would outlive it.
  const closed = () => {
    if (opts.signal?.aborted) throw new BrigError('engine_unavailable', `the check of ${tag} was stopped: its driver closed`);
  };
  closed();
  if (!opts.force) {
    try {
      await docker.getImage(tag).inspect();
      return { tag, built: false };
    } catch (e) {
      if ((e as { statusCode?: number }).statusCode !== 404) throw e;
    }
  }
  closed();
  let stream: NodeJS.ReadableStream;
  try {
    stream = await docker.buildImage(buildContext(plan, hash), { t: tag, rm: true, forcerm: true, nocache: Boolean(opts.force) });
  } catch (e) {
    throw new BrigError('image_build_failed', `building ${tag} failed to start: ${(e as Error).message}`, { cause: e });
  }
  await new Promise<void>((resolve, reject) => {
    docker.modem.followProgress(
      stream,
      (e: Error | null, out: { error?: string; errorDetail?: { message?: string } }[]) => {
        const bad = e ?? out.find((o) => o.error || o.errorDetail);
        if (bad) reject(new BrigError('image_build_failed', `building ${tag} failed: ${bad instanceof Error ? bad.message : (bad.error ?? bad.errorDetail?.message)}`));
        else resolve();
      },
      (ev: { stream?: string }) => {
        if (ev.stream && opts.onProgress) for (const l of ev.stream.split('\n')) if (l.trim()) opts.onProgress(l.trim());
      },
    );
  });
  return { tag, built: true };
}

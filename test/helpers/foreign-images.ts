/**
 * Foreign images for the "any image, the same jail" tests, built here from this host's Debian
 * packages (no registry is reachable): a busybox-only image FROM scratch, a Debian bookworm
 * minbase (mmdebstrap), and a musl image with no glibc in it at all (Debian's musl package and a
 * probe built with musl-gcc). Each is `docker import`ed from a tar, tagged by the content it was
 * made of, labelled `dev.brig.test=foreign-image`, and kept between runs (an unchanged recipe is
 * not built again; `docker image rm` of the tag removes it).
 */
import { execFile, spawn } from 'node:child_process';
import crypto from 'node:crypto';
import fs from 'node:fs';
import os from 'node:os';
import path from 'node:path';
import { promisify } from 'node:util';

const run = promisify(execFile);
const LABEL = 'dev.brig.test=foreign-image';

async function present(tag: string): Promise<boolean> {
  return run('docker', ['image', 'inspect', tag]).then(
    () => true,
    () => false,
  );
}

/** `docker import` of a tar, with the given Dockerfile-style changes. */
async function importTar(tarPath: string, tag: string, changes: string[]): Promise<void> {
  const args = ['import', ...[`LABEL ${LABEL}`, ...changes].flatMap((c) => ['-c', c]), tarPath, tag];
  await run('docker', args, { maxBuffer: 1 << 20 });
}

/** A tar of a directory, numeric owners as they are. */
async function tarOf(dir: string, out: string): Promise<void> {
  await run('tar', ['-C', dir, '--numeric-owner', '-cf', out, '.']);
}

async function withTemp<T>(f: (dir: string) => Promise<T>): Promise<T> {
  const dir = await fs.promises.mkdtemp(path.join(os.tmpdir(), 'brig-foreign-'));
  try {
    return await f(dir);
  } finally {
    await fs.promises.rm(dir, { recursive: true, force: true });
  }
}

const sha = (...parts: (string | Buffer)[]) => {
  const h = crypto.createHash('sha256');
  for (const p of parts) h.update(p).update('\0');
  return h.digest('hex').slice(0, 12);
};

/**
 * Only static busybox and its applet links, FROM scratch: no /workspace, no /etc/passwd, no
 * node. The image names an ENTRYPOINT, a root USER, a WORKDIR and a HEALTHCHECK, which the
 * profile overrides.
 */
export async function busyboxImage(): Promise<string> {
  const bb = await fs.promises.readFile('/bin/busybox');
  const tag = `brig-test-busybox:${sha('v1', bb)}`;
  if (await present(tag)) return tag;
  await withTemp(async (dir) => {
    const root = path.join(dir, 'root');
    await fs.promises.mkdir(path.join(root, 'bin'), { recursive: true });
    await fs.promises.copyFile('/bin/busybox', path.join(root, 'bin/busybox'));
    await fs.promises.chmod(path.join(root, 'bin/busybox'), 0o755);
    const applets = (await run('/bin/busybox', ['--list'])).stdout.split('\n').filter((a) => /^[a-z0-9_.[-]+$/.test(a) && a !== 'busybox');
    for (const a of applets) await fs.promises.symlink('busybox', path.join(root, 'bin', a));
    await tarOf(root, path.join(dir, 'fs.tar'));
    await importTar(path.join(dir, 'fs.tar'), tag, ['ENV PATH=/bin', 'ENTRYPOINT ["/bin/sh", "-c"]', 'USER root', 'WORKDIR /', 'HEALTHCHECK CMD ["/bin/true"]']);
  });
  return tag;
}

/** Where a musl-only rootfs comes from: Debian's musl (its libc is its loader) and musl-gcc. */
export function muslTools(): { ok: true } | { ok: false; why: string } {
  if (!fs.existsSync('/lib/x86_64-linux-musl/libc.so')) return { ok: false, why: 'Debian\'s musl package is not installed (`make deps`)' };
  if (!fs.existsSync('/usr/bin/musl-gcc')) return { ok: false, why: 'musl-gcc (Debian musl-tools) is not installed (`make deps`)' };
  return { ok: true };
}

const MUSL_PROBE = `#include <stdio.h>
#include <unistd.h>
int main(int argc, char **argv) {
  const char *to = argc > 1 ? argv[1] : "/workspace/out/x.txt";
  FILE *f = fopen(to, "w");
  if (!f) { perror(to); return 1; }
  fprintf(f, "hi from musl uid=%d\\n", (int)getuid());
  fclose(f);
  printf("musl probe uid=%d\\n", (int)getuid());
  return 0;
}
`;

/**
 * An Alpine-like musl image: musl's loader at /lib/ld-musl-x86_64.so.1, a probe linked against
 * it at /bin/probe (writes its first argument), an /etc/os-release — and no glibc, no shell, no
 * node: whatever of brig runs there must bring its own.
 */
export async function muslImage(): Promise<string> {
  const libc = await fs.promises.readFile('/lib/x86_64-linux-musl/libc.so');
  const tag = `brig-test-musl:${sha('v1', libc, MUSL_PROBE)}`;
  if (await present(tag)) return tag;
  await withTemp(async (dir) => {
    const root = path.join(dir, 'root');
    for (const d of ['lib', 'bin', 'etc']) await fs.promises.mkdir(path.join(root, d), { recursive: true });
    await fs.promises.writeFile(path.join(dir, 'probe.c'), MUSL_PROBE);
    await run('musl-gcc', ['-O2', '-o', path.join(root, 'bin/probe'), path.join(dir, 'probe.c')]);
    await fs.promises.copyFile('/lib/x86_64-linux-musl/libc.so', path.join(root, 'lib/ld-musl-x86_64.so.1'));
    await fs.promises.chmod(path.join(root, 'lib/ld-musl-x86_64.so.1'), 0o755);
    await fs.promises.writeFile(path.join(root, 'etc/os-release'), 'ID=musl-test\nNAME="musl test rootfs"\n');
    await tarOf(root, path.join(dir, 'fs.tar'));
    await importTar(path.join(dir, 'fs.tar'), tag, ['ENV PATH=/bin', 'ENV LANG=C.UTF-8']);
  });
  return tag;
}

export function mmdebstrapTool(): { ok: true } | { ok: false; why: string } {
  return fs.existsSync('/usr/bin/mmdebstrap') ? { ok: true } : { ok: false, why: 'mmdebstrap (Debian) is not installed (`make deps`)' };
}

/**
 * Debian bookworm minbase from Debian's packages (mmdebstrap, this host's apt sources): glibc,
 * dpkg with its status database, coreutils, bash. Built once per day of the host's apt lists.
 */
export async function debianImage(): Promise<string> {
  const tag = `brig-test-debian:bookworm-minbase`;
  if (await present(tag)) return tag;
  await withTemp(async (dir) => {
    const tarPath = path.join(dir, 'fs.tar');
    await new Promise<void>((resolve, reject) => {
      const p = spawn('mmdebstrap', ['--variant=minbase', '--quiet', 'bookworm', tarPath], { stdio: ['ignore', 'ignore', 'pipe'] });
      let err = '';
      p.stderr.on('data', (b: Buffer) => (err += b.toString()).slice(-4000));
      p.on('error', reject);
      p.on('close', (code) => (code === 0 ? resolve() : reject(new Error(`mmdebstrap exited ${code}: ${err.slice(-2000)}`))));
    });
    await importTar(tarPath, tag, ['ENV PATH=/usr/local/sbin:/usr/local/bin:/usr/sbin:/usr/bin:/sbin:/bin', 'ENV LANG=C.UTF-8', 'CMD ["bash"]']);
  });
  return tag;
}

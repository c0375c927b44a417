/**
 * A clean clone copied onto a jail's workspace disk at /workspace/repo.
 *
 * Guarantees: a tar made here from brig's own directory (the clone repo/repo-stage.ts made) —
 * directories, regular files (their execute bit kept) and symlinks as links (never followed) —
 * every entry owned by the jail user, put by the engine's archive API into the created,
 * not yet started container. Nothing of the host is mounted; the copy is the child's to change.
 * Threat: the child reaching the host repository through its copy (it cannot: it is a copy).
 * Fails: anything else in the tree (a socket, a device) or an engine refusal → `jail_failed`.
 */
import fs from 'node:fs';
import path from 'node:path';
import type Docker from 'dockerode';
import tar from 'tar-stream';
import { BrigError } from '../../util/errors.js';
import { engineError } from './engine-errors.js';
import { WORKSPACE_DIR } from './profile.js';

const OWNER = { uid: 65534, gid: 65534 };

/** The tree under `dir` as a tar whose names start at `repo/`. */
export function repoArchive(dir: string): NodeJS.ReadableStream {
  const pack = tar.pack();
  const add = (header: Partial<tar.Header> & { name: string }, data?: Buffer) => new Promise<void>((res, rej) => pack.entry({ ...OWNER, ...header } as tar.Header, data ?? Buffer.alloc(0), (e) => (e ? rej(e) : res())));
  const walk = async (rel: string): Promise<void> => {
    for (const e of (await fs.promises.readdir(path.join(dir, rel), { withFileTypes: true })).sort((a, b) => (a.name < b.name ? -1 : 1))) {
      const r = rel ? `${rel}/${e.name}` : e.name;
      const abs = path.join(dir, r);
      const st = await fs.promises.lstat(abs);
      const name = `repo/${r}`;
      if (st.isDirectory()) {
        await add({ name, type: 'directory', mode: 0o755 });
        await walk(r);
      } else if (st.isSymbolicLink()) await add({ name, type: 'symlink', linkname: await fs.promises.readlink(abs), mode: 0o777 });
      else if (st.isFile()) {
        await new Promise<void>((res, rej) => {
          const sink = pack.entry({ ...OWNER, name, mode: st.mode & 0o100 ? 0o755 : 0o644, size: st.size }, (er) => (er ? rej(er) : res()));
          fs.createReadStream(abs).on('error', rej).pipe(sink);
        });
      } else throw new BrigError('jail_failed', `the repository's clone holds ${r.slice(0, 200)}, which is neither a file, a directory nor a link`, { data: { step: 'repo' } });
    }
  };
  (async () => {
    await add({ name: 'repo', type: 'directory', mode: 0o755 });
    await walk('');
    pack.finalize();
  })().catch((e) => pack.destroy(e as Error));
  return pack as unknown as NodeJS.ReadableStream;
}

export async function putRepo(container: Docker.Container, dir: string): Promise<void> {
  await container.putArchive(repoArchive(dir), { path: WORKSPACE_DIR }).catch((e: unknown) => {
    if (e instanceof BrigError) throw e;
    throw engineError(e, 'jail_failed', 'copying the repository into the workspace failed');
  });
}

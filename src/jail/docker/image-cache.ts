/**
 * What the child image's plan and fingerprint learned last time, kept by file identity so a
 * one-shot `brig spawn` does not hash busybox, the shared libraries and the child runtime and run
 * `busybox --list` and `ldd node` again on every start (≈ 13 % of its wall, docs/performance.md).
 *
 * A cached value is used only while the file it came from has the identity it had then: device,
 * inode, size, mtime and ctime in nanoseconds (the ctime moves on every write, chmod and rename,
 * and no unprivileged call sets it back). A probe's output (applets, libraries) is keyed by its
 * binary's identity (and `ldd`'s by /etc/ld.so.cache's too); a library replaced in place still
 * changes the tag, because every library in the plan is fingerprinted by its own identity.
 * The file lives in the operator's 0700 home; a cache that is missing, unreadable or of another
 * version is empty, never an error. Saved atomically, only when something was learned.
 */
import crypto from 'node:crypto';
import fs from 'node:fs';
import { writeFileAtomic } from '../../util/atomic-file.js';

interface CacheFile {
  v: 1;
  files: Record<string, { id: string; sha: string }>;
  probes: Record<string, { id: string; out: string[] }>;
}

/**
 * A file's identity: what must be unchanged for a value learned from it to hold. Read
 * synchronously: a plan stats its ~200 files twice each, and awaited
 * one after another on a thread busy composing a supervisor those hops cost ~50 ms of a one-shot
 * spawn; a stat is microseconds.
 */
export function fileIdentity(file: string): string {
  const st = fs.statSync(file, { bigint: true });
  return `${st.dev}:${st.ino}:${st.size}:${st.mtimeNs}:${st.ctimeNs}`;
}

function identityOrMissing(file: string): string {
  try {
    return fileIdentity(file);
  } catch {
    return 'missing';
  }
}

export async function sha256Of(file: string): Promise<string> {
  const h = crypto.createHash('sha256');
  for await (const chunk of fs.createReadStream(file)) h.update(chunk as Buffer);
  return h.digest('hex');
}

export class ImageCache {
  #data: CacheFile = { v: 1, files: {}, probes: {} };
  #dirty = false;
  #loaded: Promise<void> | undefined;

  /** `file` undefined: remembers for this process only. */
  constructor(readonly file?: string) {}

  #load(): Promise<void> {
    return (this.#loaded ??= (async () => {
      if (!this.file) return;
      try {
        const got = JSON.parse(await fs.promises.readFile(this.file, 'utf8')) as Partial<CacheFile>;
        if (got.v === 1 && got.files && typeof got.files === 'object' && got.probes && typeof got.probes === 'object') this.#data = got as CacheFile;
      } catch {
        // missing or unreadable: start empty
      }
    })());
  }

  /** sha256 of the file's content, hashed again only when its identity changed. */
  async contentSha(file: string): Promise<string> {
    await this.#load();
    const id = fileIdentity(file);
    const hit = this.#data.files[file];
    if (hit?.id === id) return hit.sha;
    const sha = await sha256Of(file);
    // Identity read again after hashing: a file written meanwhile is not remembered.
    if (fileIdentity(file) === id) {
      this.#data.files[file] = { id, sha };
      this.#dirty = true;
    }
    return sha;
  }

  /** The output of `run` for these inputs, run again only when one of their identities changed. */
  async probe(name: string, inputs: readonly string[], run: () => Promise<string[]>): Promise<string[]> {
    await this.#load();
    const id = inputs.map(identityOrMissing).join('|');
    const hit = this.#data.probes[name];
    if (hit?.id === id && Array.isArray(hit.out)) return hit.out;
    const out = await run();
    this.#data.probes[name] = { id, out };
    this.#dirty = true;
    return out;
  }

  /** Writes what was learned (best effort: a cache that cannot be saved is only slower). */
  async save(): Promise<void> {
    if (!this.file || !this.#dirty) return;
    this.#dirty = false;
    await writeFileAtomic(this.file, JSON.stringify(this.#data), { mode: 0o600 }).catch(() => undefined);
  }
}

/**
 * The Kubernetes pod's second reader of a child's outputs: when brig's collector
 * (jail/docker/collect.ts) must pass over a file above the per-file cap, it reads the archive
 * again with that entry written as a link to PASSED_OVER instead of its bytes — on Docker the
 * stopped jail's file is replaced; in a pod it cannot be (the relay mounts /workspace read-only,
 * the child's container has ended) and busybox tar, the image's tar, can neither exclude nor
 * replace an entry. Exec'd by brig in the relay container (`node pod-tar.js DIR NAME
 * [PASSED…]`), it writes to stdout a tar of DIR/NAME walked exactly as busybox tar walks it —
 * entries named from NAME, pre-order, each directory's entries in the order the file system
 * lists them (readdir), sockets left out — so the entries before the one passed over come again
 * in the same order, as the collector checks.
 *
 * Guarantees: never follows a symlink (lstat) and never opens anything but a regular file or a
 * directory (a fifo or device is its header alone); a file's bytes are exactly its header's size
 * (a file that shrank is padded with zeros, one that grew cut — the child has ended, so neither
 * happens); a size past the octal field is written base-256, a name or link past 100 bytes in a
 * PAX header, so a 100 GB sparse file is announced at its size and brig stops reading before its
 * bytes; at most MAX_DIR_ENTRIES names are read from one directory (brig's collector never reads
 * that many entries in all). An entry that cannot be read is named on stderr and left out, and
 * the exit is 1; the rest is written. Stdout closed by brig (it read enough): the walk stops.
 * Threat: the child's tree (names with control characters, deep nests, huge directories,
 * unreadable entries, links): written as found, judged by brig's collector. Trusts: nothing in it.
 * Exit: 0 written; 1 some entry unreadable; 3 DIR/NAME absent; 2 bad arguments.
 */
import fs from 'node:fs';
import path from 'node:path';

/** The link a passed-over file becomes (the collector's PASSED_OVER: the same string on both ends). */
export const PASSED_OVER = '/.brig-too-large';
/** Names read from one directory at most (the collector reads at most maxEntries + 100,000 entries in all). */
export const MAX_DIR_ENTRIES = 200_000;

const BLOCK = 512;

/** A numeric header field: octal with a NUL, or base-256 when it does not fit. */
function num(buf: Buffer, off: number, len: number, v: number): void {
  const oct = Math.floor(v).toString(8);
  if (oct.length < len) {
    buf.write(oct.padStart(len - 1, '0'), off, 'ascii');
    buf[off + len - 1] = 0;
    return;
  }
  let x = BigInt(Math.floor(v));
  for (let i = off + len - 1; i > off; i--) {
    buf[i] = Number(x & 0xffn);
    x >>= 8n;
  }
  buf[off] = 0x80;
}

interface Entry {
  name: string;
  type: '0' | '2' | '3' | '4' | '5' | '6';
  mode: number;
  uid: number;
  gid: number;
  size: number;
  mtime: number;
  linkname?: string;
}

function header(e: Entry): Buffer {
  const h = Buffer.alloc(BLOCK);
  h.write(Buffer.byteLength(e.name) <= 100 ? e.name : e.name.slice(0, 99), 0, 100, 'utf8');
  num(h, 100, 8, e.mode & 0o7777);
  num(h, 108, 8, e.uid);
  num(h, 116, 8, e.gid);
  num(h, 124, 12, e.size);
  num(h, 136, 12, e.mtime);
  h.write('        ', 148, 8, 'ascii');
  h.write(e.type, 156, 1, 'ascii');
  if (e.linkname) h.write(Buffer.byteLength(e.linkname) <= 100 ? e.linkname : e.linkname.slice(0, 99), 157, 100, 'utf8');
  h.write('ustar\0', 257, 6, 'ascii');
  h.write('00', 263, 2, 'ascii');
  let sum = 0;
  for (const b of h) sum += b;
  h.write(`${sum.toString(8).padStart(6, '0')}\0 `, 148, 8, 'ascii');
  return h;
}

/** A PAX extended header for a name or link too long for ustar's fields. */
function pax(e: Entry): Buffer[] {
  const recs: string[] = [];
  const rec = (k: string, v: string) => {
    const body = ` ${k}=${v}\n`;
    let n = Buffer.byteLength(body) + 1;
    while (String(n).length + Buffer.byteLength(body) !== n) n = String(n).length + Buffer.byteLength(body);
    recs.push(`${n}${body}`);
  };
  if (Buffer.byteLength(e.name) > 100) rec('path', e.name);
  if (e.linkname && Buffer.byteLength(e.linkname) > 100) rec('linkpath', e.linkname);
  if (recs.length === 0) return [];
  const data = Buffer.from(recs.join(''), 'utf8');
  const h = header({ name: 'PaxHeader', type: '0', mode: 0o644, uid: 0, gid: 0, size: data.length, mtime: e.mtime });
  h.write('x', 156, 1, 'ascii');
  // The checksum again, for the changed type.
  h.write('        ', 148, 8, 'ascii');
  let sum = 0;
  for (const b of h) sum += b;
  h.write(`${sum.toString(8).padStart(6, '0')}\0 `, 148, 8, 'ascii');
  return [h, data, Buffer.alloc((BLOCK - (data.length % BLOCK)) % BLOCK)];
}

/** Writes with backpressure; false once stdout was closed by the reader. */
function writer(out: NodeJS.WritableStream): { write(b: Buffer): Promise<boolean>; closed(): boolean } {
  let closed = false;
  out.on('error', () => (closed = true));
  return {
    closed: () => closed,
    write: (b) =>
      new Promise((resolve) => {
        if (closed) return resolve(false);
        if (out.write(b)) return resolve(true);
        const done = () => (out.off('drain', done), out.off('error', done), out.off('close', done), resolve(!closed));
        out.once('drain', done);
        out.once('error', done);
        out.once('close', done);
      }),
  };
}

/** Names in one directory in the file system's order (busybox tar's: readdir), at most MAX_DIR_ENTRIES. */
function names(dir: string): string[] {
  const d = fs.opendirSync(dir);
  const out: string[] = [];
  try {
    let e: fs.Dirent | null;
    while (out.length < MAX_DIR_ENTRIES && (e = d.readSync())) out.push(e.name);
  } finally {
    d.closeSync();
  }
  return out;
}

/** The tar of dir/name (entries named from name), PASSED entries as links to PASSED_OVER; the count of entries left out unreadable. */
export async function podTar(dir: string, name: string, passed: ReadonlySet<string>, out: NodeJS.WritableStream, err: (line: string) => void): Promise<number> {
  const w = writer(out);
  let unreadable = 0;
  const stack: string[] = [name];
  while (stack.length > 0 && !w.closed()) {
    const rel = stack.pop()!;
    const full = path.join(dir, rel);
    let st: fs.Stats;
    try {
      st = fs.lstatSync(full);
    } catch (e) {
      unreadable++;
      err(`pod-tar: ${JSON.stringify(rel)}: ${(e as NodeJS.ErrnoException).code ?? (e as Error).message}`);
      continue;
    }
    const base = { mode: st.mode, uid: st.uid, gid: st.gid, mtime: Math.floor(st.mtimeMs / 1000) };
    let e: Entry;
    let file: number | undefined;
    let kids: string[] | undefined;
    if (passed.has(rel)) e = { ...base, name: rel, type: '2', size: 0, linkname: PASSED_OVER, mode: 0o777 };
    else if (st.isDirectory()) {
      try {
        kids = names(full);
      } catch (x) {
        unreadable++;
        err(`pod-tar: ${JSON.stringify(rel)}: ${(x as NodeJS.ErrnoException).code ?? (x as Error).message}`);
        continue;
      }
      e = { ...base, name: `${rel}/`, type: '5', size: 0 };
    } else if (st.isFile()) {
      try {
        file = fs.openSync(full, fs.constants.O_RDONLY | fs.constants.O_NOFOLLOW | fs.constants.O_NONBLOCK);
      } catch (x) {
        unreadable++;
        err(`pod-tar: ${JSON.stringify(rel)}: ${(x as NodeJS.ErrnoException).code ?? (x as Error).message}`);
        continue;
      }
      e = { ...base, name: rel, type: '0', size: st.size };
    } else if (st.isSymbolicLink()) e = { ...base, name: rel, type: '2', size: 0, linkname: fs.readlinkSync(full) };
    else if (st.isSocket()) continue; // busybox tar: "socket ignored"
    else e = { ...base, name: rel, type: st.isFIFO() ? '6' : st.isCharacterDevice() ? '3' : '4', size: 0 };
    for (const b of [...pax(e), header(e)]) if (!(await w.write(b))) break;
    if (file !== undefined) {
      try {
        await copyExactly(file, e.size, w);
      } finally {
        fs.closeSync(file);
      }
    }
    // Pushed in reverse: popped in listing order, each directory's subtree before its next sibling.
    if (kids) for (let i = kids.length - 1; i >= 0; i--) stack.push(`${rel}/${kids[i]}`);
  }
  if (!w.closed()) await w.write(Buffer.alloc(BLOCK * 2));
  return unreadable;
}

/** size bytes of the file (zeros past its end), then the block's padding. */
async function copyExactly(fd: number, size: number, w: ReturnType<typeof writer>): Promise<void> {
  const chunk = Buffer.alloc(64 * 1024);
  let left = size;
  while (left > 0 && !w.closed()) {
    const want = Math.min(left, chunk.length);
    let n = fs.readSync(fd, chunk, 0, want, null);
    if (n === 0) {
      chunk.fill(0, 0, want);
      n = want;
    }
    if (!(await w.write(Buffer.from(chunk.subarray(0, n))))) return;
    left -= n;
  }
  const pad = (BLOCK - (size % BLOCK)) % BLOCK;
  if (pad > 0) await w.write(Buffer.alloc(pad));
}

async function main(argv: string[]): Promise<number> {
  const [dir, name, ...passed] = argv;
  if (!dir || !name) {
    process.stderr.write('usage: pod-tar DIR NAME [PASSED…]\n');
    return 2;
  }
  if (!fs.existsSync(path.join(dir, name)) && !isLink(path.join(dir, name))) return 3;
  const unreadable = await podTar(dir, name, new Set(passed), process.stdout, (line) => process.stderr.write(`${line}\n`));
  return unreadable > 0 ? 1 : 0;
}

function isLink(p: string): boolean {
  try {
    return fs.lstatSync(p).isSymbolicLink();
  } catch {
    return false;
  }
}

// Run as a program (exec'd in the pod), not when imported (tests).
if (process.argv[1]?.endsWith('pod-tar.js')) {
  main(process.argv.slice(2)).then(
    (code) => {
      process.exitCode = code;
    },
    (e: unknown) => {
      process.stderr.write(`pod-tar: ${(e as Error).message}\n`);
      process.exitCode = 1;
    },
  );
}

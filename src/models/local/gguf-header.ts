/**
 * Is this file a GGUF model? Reads its fixed header (GGUF spec: magic `GGUF`, a uint32
 * version, a uint64 tensor count and a uint64 metadata count, little-endian) and checks each
 * against what a real model file can hold. A file that is not one is named with why, before
 * brig registers it or hands it to the runtime.
 */
import fs from 'node:fs';

export interface GgufHeader {
  version: number;
  tensors: number;
  metadata: number;
  bytes: number;
}

/** The header of `file`, or a sentence saying why it is not a GGUF model. */
export function readGgufHeader(file: string): { ok: true; header: GgufHeader } | { ok: false; why: string } {
  let fd: number;
  try {
    fd = fs.openSync(file, 'r');
  } catch (e) {
    return { ok: false, why: `cannot open it (${(e as NodeJS.ErrnoException).code ?? 'error'})` };
  }
  try {
    const st = fs.fstatSync(fd);
    if (!st.isFile()) return { ok: false, why: 'it is not a regular file' };
    const b = Buffer.alloc(24);
    const n = fs.readSync(fd, b, 0, 24, 0);
    if (n < 24) return { ok: false, why: `it is ${n} bytes: shorter than a GGUF header` };
    if (b.toString('latin1', 0, 4) !== 'GGUF') return { ok: false, why: `it does not start with the GGUF magic (it starts with ${JSON.stringify(b.toString('latin1', 0, 4))})` };
    const version = b.readUInt32LE(4);
    if (version < 2 || version > 3) return { ok: false, why: `its GGUF version is ${version}; the runtime reads versions 2 and 3` };
    const tensors = b.readBigUInt64LE(8);
    const metadata = b.readBigUInt64LE(16);
    if (tensors === 0n || tensors > 1_000_000n) return { ok: false, why: `its header claims ${tensors} tensors` };
    if (metadata > 100_000n) return { ok: false, why: `its header claims ${metadata} metadata entries` };
    return { ok: true, header: { version, tensors: Number(tensors), metadata: Number(metadata), bytes: st.size } };
  } finally {
    fs.closeSync(fd);
  }
}

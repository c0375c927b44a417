/**
 * A temporary directory removed when this test process exits: for helpers and files that make
 * a home or a store for many tests with no test context to clean up after (each unit tier run
 * left ~300 `brig-sup-*` homes and ~250 others in /tmp before).
 */
import fs from 'node:fs';
import os from 'node:os';
import path from 'node:path';

const made = new Set<string>();

export function tempDir(prefix: string): string {
  const dir = fs.mkdtempSync(path.join(os.tmpdir(), prefix));
  if (made.size === 0) {
    process.once('exit', () => {
      for (const d of made) fs.rmSync(d, { recursive: true, force: true });
    });
  }
  made.add(dir);
  return dir;
}

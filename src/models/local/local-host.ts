/**
 * The supervisor's side of the local provider: starts the helper process (server-main.ts)
 * on first use, hands its unix socket to an openai-chat client, restarts it if it died, and
 * stops it on close.
 *
 * Guarantees: the model runs outside every jail, in a process of the supervisor's own; its
 * socket lives in a fresh 0700 directory (mkdtemp) and is 0600, so only the supervisor's uid
 * reaches it — no port, no address a jail or another local user could use. The helper is
 * spawned with an empty environment and argv only, and exits when the supervisor does (it
 * watches its stdin). Fails closed: a helper that does not say ready within the start
 * timeout is killed and the call fails `model_unavailable` with the helper's own words.
 */
import { type ChildProcess, spawn } from 'node:child_process';
import fs from 'node:fs';
import os from 'node:os';
import path from 'node:path';
import { fileURLToPath } from 'node:url';
import type { Agent } from 'undici';
import { undici } from '../undici.js';
import { BrigError } from '../../util/errors.js';
import { TRANSPORT_DEFAULTS } from '../transport.js';

/** Where brig's own local-model package folder is (beside src/ and dist/). */
export const DEFAULT_RUNTIME_DIR = fileURLToPath(new URL('../../../local-model', import.meta.url));

/** The helper: the compiled .js next to us, or the .ts source under tsx. */
function helperEntry(): string {
  const js = fileURLToPath(new URL('./server-main.js', import.meta.url));
  return fs.existsSync(js) ? js : fileURLToPath(new URL('./server-main.ts', import.meta.url));
}

/** Node flags the helper needs to load us the way we were loaded (e.g. `--import tsx`), nothing else. */
function loaderArgs(execArgv: readonly string[]): string[] {
  const out: string[] = [];
  for (let i = 0; i < execArgv.length; i++) {
    const a = execArgv[i]!;
    if (['--import', '--require', '--loader', '--experimental-loader'].includes(a) && execArgv[i + 1] !== undefined) out.push(a, execArgv[++i]!);
    else if (/^--(import|require|loader|experimental-loader)=/.test(a)) out.push(a);
  }
  return out;
}

/** The install command for the runtime, said in every hint that needs it. */
export function runtimeInstallHint(runtimeDir: string): string {
  return `Install the local model runtime: \`make model\` from brig's checkout, or \`npm ci --prefix ${runtimeDir} --omit=optional --ignore-scripts\` (node-llama-cpp's CPU build only, ~83 MB).`;
}

/** Why a local model cannot be served from here (runtime or file missing), or undefined. */
export function localModelProblem(gguf: string, runtimeDir: string): BrigError | undefined {
  if (!fs.existsSync(path.join(runtimeDir, 'node_modules', 'node-llama-cpp', 'package.json'))) {
    return new BrigError('model_unavailable', `the local model runtime (node-llama-cpp) is not installed in ${runtimeDir}`, { data: { reason: 'no_runtime' }, hint: runtimeInstallHint(runtimeDir) });
  }
  if (!fs.existsSync(gguf)) {
    return new BrigError('model_unavailable', `the local model file ${gguf} does not exist`, { data: { reason: 'no_file' }, hint: 'Run `brig model pull` (or `make model`), or point the configuration at a GGUF file (docs/models.md).' });
  }
  return undefined;
}

export interface LocalHostOptions {
  gguf: string;
  runtimeDir: string;
  threads: number;
  contextSize: number;
  /** Requests waiting behind the one generating (the helper's default: 4). */
  maxQueue?: number;
  /** Longest wait for the helper's ready line (default 120 s: a cold disk and a busy machine). */
  startTimeoutMs?: number;
  /** The connection pool's idle timeout backstop (the client's own idle timer is the real one). */
  idleTimeoutMs?: number;
}

export interface Started {
  dispatcher: Agent;
  model: string;
  contextSize: number;
  loadMs: number;
}

export class LocalModelHost {
  #proc: ChildProcess | undefined;
  #dir: string | undefined;
  #started: Promise<Started> | undefined;
  #closed = false;
  #stderr = '';

  constructor(private readonly o: LocalHostOptions) {}

  /** The running helper, started (or restarted, if it died) first. */
  start(): Promise<Started> {
    if (this.#closed) return Promise.reject(new BrigError('model_unavailable', 'the local model is closed', { hint: 'The supervisor is shutting down.' }));
    const alive = this.#proc !== undefined && this.#proc.exitCode === null && this.#proc.signalCode === null;
    if (this.#started && alive) return this.#started;
    // A helper that died: its pool goes with it, and a new helper is started.
    void this.#started?.then((s) => s.dispatcher.close()).catch(() => {});
    this.#started = this.launch();
    this.#started.catch(() => {
      this.#started = undefined;
    });
    return this.#started;
  }

  private async launch(): Promise<Started> {
    const problem = localModelProblem(this.o.gguf, this.o.runtimeDir);
    if (problem) throw problem;
    this.#dir ??= fs.mkdtempSync(path.join(os.tmpdir(), 'brig-llm-'));
    const socket = path.join(this.#dir, 'llm.sock');
    const args = [
      ...loaderArgs(process.execArgv),
      helperEntry(),
      '--gguf', this.o.gguf,
      '--socket', socket,
      '--runtime', this.o.runtimeDir,
      '--threads', String(this.o.threads),
      '--context', String(this.o.contextSize),
      ...(this.o.maxQueue !== undefined ? ['--queue', String(this.o.maxQueue)] : []),
    ];
    const proc = spawn(process.execPath, args, { env: {}, stdio: ['pipe', 'pipe', 'pipe'] });
    this.#proc = proc;
    // A helper that ends (crashed, killed) is started again by the next call.
    proc.once('exit', () => {
      if (this.#proc === proc) this.#proc = undefined;
    });
    this.#stderr = '';
    proc.stderr!.on('data', (c: Buffer) => {
      this.#stderr = (this.#stderr + c.toString('utf8')).slice(-4000);
    });
    const ready = await new Promise<{ ready: boolean; model?: string; contextSize?: number; loadMs?: number; error?: string }>((resolve) => {
      let line = '';
      const timer = setTimeout(() => resolve({ ready: false, error: `no ready line within ${this.o.startTimeoutMs ?? 120_000} ms` }), this.o.startTimeoutMs ?? 120_000);
      proc.stdout!.on('data', (c: Buffer) => {
        line += c.toString('utf8');
        const nl = line.indexOf('\n');
        if (nl < 0) return;
        clearTimeout(timer);
        try {
          resolve(JSON.parse(line.slice(0, nl)) as { ready: boolean });
        } catch {
          resolve({ ready: false, error: `unreadable ready line: ${line.slice(0, 200)}` });
        }
      });
      proc.on('exit', (code, signal) => {
        clearTimeout(timer);
        resolve({ ready: false, error: `exited (${signal ?? code}) before it was ready` });
      });
      proc.on('error', (e) => {
        clearTimeout(timer);
        resolve({ ready: false, error: e.message });
      });
    });
    if (!ready.ready) {
      if (proc.exitCode === null && proc.signalCode === null) {
        const gone = new Promise((resolve) => proc.once('exit', resolve));
        proc.kill('SIGKILL');
        await gone;
      }
      const tail = this.#stderr.trim().split('\n').slice(-3).join(' | ');
      throw new BrigError('model_unavailable', `the local model ${path.basename(this.o.gguf)} could not be started: ${ready.error ?? 'unknown'}${tail ? ` (${tail.slice(0, 300)})` : ''}`, {
        data: { reason: 'start' },
        hint: `Check the file is a GGUF this runtime loads (\`brig model pull --gguf FILE\` checks its header). ${runtimeInstallHint(this.o.runtimeDir)}`,
      });
    }
    const idle = this.o.idleTimeoutMs ?? TRANSPORT_DEFAULTS.idleTimeoutMs;
    const dispatcher = new (undici().Agent)({ connect: { socketPath: socket }, keepAliveTimeout: 10_000, headersTimeout: idle + 1000, bodyTimeout: idle + 1000, connections: 8 });
    return { dispatcher, model: ready.model ?? path.basename(this.o.gguf), contextSize: ready.contextSize ?? this.o.contextSize, loadMs: ready.loadMs ?? 0 };
  }

  /** The helper's process id while it runs (tests, bench). */
  get pid(): number | undefined {
    const p = this.#proc;
    return p && p.exitCode === null && p.signalCode === null ? p.pid : undefined;
  }

  async close(): Promise<void> {
    this.#closed = true;
    const started = await this.#started?.catch(() => undefined);
    await started?.dispatcher.close().catch(() => {});
    const proc = this.#proc;
    if (proc && proc.exitCode === null && proc.signalCode === null) {
      const exited = new Promise<void>((resolve) => proc.once('exit', () => resolve()));
      proc.kill('SIGTERM');
      const t = setTimeout(() => proc.kill('SIGKILL'), 3000);
      await exited;
      clearTimeout(t);
    }
    if (this.#dir) fs.rmSync(this.#dir, { recursive: true, force: true });
  }
}

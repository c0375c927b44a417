/**
 * The local provider's helper process: loads one GGUF (llama-engine.ts) and serves it on a
 * unix socket (local-server.ts). Started and owned by the supervisor (local-host.ts), outside
 * every jail; it exits when its parent closes its stdin, on SIGTERM, or when loading fails.
 *
 * argv: --gguf FILE --socket PATH --runtime DIR --threads N --context N [--queue N]
 * stdout: one JSON line — {"ready":true,"model","contextSize","threads","loadMs"} or
 * {"ready":false,"error"} — and nothing else; llama.cpp's own log lines go to stderr.
 */
import fs from 'node:fs';
import { loadLlamaEngine, type LocalEngine } from './llama-engine.js';
import { createLocalServer } from './local-server.js';

function arg(name: string): string {
  const i = process.argv.indexOf(`--${name}`);
  const v = i >= 0 ? process.argv[i + 1] : undefined;
  if (v === undefined) throw new Error(`missing --${name}`);
  return v;
}

function say(o: unknown): void {
  process.stdout.write(`${JSON.stringify(o)}\n`);
}

async function main(): Promise<void> {
  const socket = arg('socket');
  let engine: LocalEngine | undefined;
  try {
    engine = await loadLlamaEngine({
      gguf: arg('gguf'),
      runtimeDir: arg('runtime'),
      threads: Number(arg('threads')),
      contextSize: Number(arg('context')),
      log: (line) => process.stderr.write(`${line.trimEnd()}\n`),
    });
  } catch (e) {
    say({ ready: false, error: ((e as Error)?.message ?? String(e)).slice(0, 500) });
    process.exit(3);
  }
  const loaded = engine;
  const queue = process.argv.includes('--queue') ? Number(arg('queue')) : undefined;
  const { server } = createLocalServer({ engine: loaded, ...(queue !== undefined ? { maxQueue: queue } : {}) });
  fs.rmSync(socket, { force: true });
  server.listen(socket, () => {
    fs.chmodSync(socket, 0o600);
    say({ ready: true, model: loaded.model, contextSize: loaded.contextSize, threads: loaded.threads, loadMs: loaded.loadMs });
  });
  let stopping = false;
  const stop = () => {
    if (stopping) return;
    stopping = true;
    server.close();
    server.closeAllConnections();
    void loaded.close().finally(() => process.exit(0));
    setTimeout(() => process.exit(0), 2000).unref();
  };
  process.on('SIGTERM', stop);
  process.on('SIGINT', stop);
  // The supervisor holds our stdin: when it goes (even SIGKILLed), so do we.
  process.stdin.on('end', stop);
  process.stdin.on('close', stop);
  process.stdin.resume();
}

void main();

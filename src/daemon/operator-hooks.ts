/**
 * Operator hooks from config.yaml's `hooks` section (config/hooks-file.ts), as SupervisorHooks
 * for `brig serve`: a command (argv, no shell, the document on stdin) or a webhook POST (loopback
 * http or a unix socket), each killed / aborted past its timeout.
 *
 * Guarantees: the document is content-free — ids, enums, counts, the lease id, the
 * result path — never a child's output, a task, a key (INV-7). A hook that fails, exits non-zero
 * or times out throws; the supervisor ledgers `run.hook_failed` with why and goes on (ports.ts).
 * Threat: a hook runs as the daemon's user outside every jail (SECURITY.md); a hung hook
 * holding up runs (bounded by its timeout).
 */
import { spawn } from 'node:child_process';
import http from 'node:http';
import type { HookConfig, HooksSection } from '../config/index.js';
import { webhookTarget } from '../config/index.js';
import type { RunEndMeta, RunRecord, SupervisorHooks } from '../runs/index.js';
import type { Logger } from '../util/log.js';

/** What a prepareSpawn hook receives (phase `prepare`, then `rollback` if the spawn fails). */
export function prepareDocument(r: RunRecord, phase: 'prepare' | 'rollback'): Record<string, unknown> {
  return {
    v: 1,
    hook: 'prepareSpawn',
    phase,
    runId: r.id,
    rootRunId: r.rootRunId,
    parentRunId: r.parentRunId,
    depth: r.depth,
    kind: r.kind,
    agent: r.agent,
    leaseId: r.leaseId,
  };
}

/** What an onEnded hook receives: the content-free end (ports.ts RunEndMeta) and its lease. */
export function endedDocument(e: RunEndMeta, r: RunRecord | undefined): Record<string, unknown> {
  return {
    v: 1,
    hook: 'onEnded',
    phase: 'ended',
    runId: e.runId,
    rootRunId: e.rootRunId,
    parentRunId: e.parentRunId,
    depth: e.depth,
    kind: e.kind,
    agent: r?.agent ?? null,
    image: r?.jail?.image ?? null,
    leaseId: r?.leaseId ?? null,
    endReason: e.endReason,
    killedBy: e.killedBy,
    exitCode: e.exitCode,
    errorCode: e.errorCode,
    stepsExecuted: e.stepsExecuted,
    runtimeMs: e.runtimeMs,
    outputFiles: e.outputFiles,
    outputBytes: e.outputBytes,
    tokens: e.tokens,
    costUsd: e.costUsd,
    partial: e.partial,
    condensationLevel: e.condensationLevel ?? null,
    estSavedTokens: e.estSavedTokens ?? null,
    resultPath: e.resultPath,
  };
}

/** Runs an argv with `input` on stdin; rejects on a non-zero exit, a signal, or the timeout (then SIGKILL). */
export function runCommand(argv: readonly string[], input: string, timeoutMs: number): Promise<void> {
  return new Promise((resolve, reject) => {
    const child = spawn(argv[0]!, argv.slice(1), { stdio: ['pipe', 'ignore', 'ignore'], shell: false, detached: true });
    let done = false;
    const finish = (e?: Error) => {
      if (done) return;
      done = true;
      clearTimeout(timer);
      if (e) reject(e);
      else resolve();
    };
    const timer = setTimeout(() => {
      // The whole process group: a shell script's sleep goes with it.
      try {
        process.kill(-child.pid!, 'SIGKILL');
      } catch {
        child.kill('SIGKILL');
      }
      finish(new Error(`timed out after ${timeoutMs} ms (killed)`));
    }, timeoutMs);
    child.on('error', (e: NodeJS.ErrnoException) => finish(new Error(`could not start: ${e.code ?? 'error'}`)));
    child.on('exit', (code, signal) => finish(code === 0 ? undefined : new Error(signal ? `killed by ${signal}` : `exited ${code}`)));
    child.stdin.on('error', () => {}); // a hook that does not read its stdin is not a failure
    child.stdin.end(input);
  });
}

/** POSTs `input` as JSON to a loopback / unix-socket URL; rejects on a non-2xx, an error or the timeout. */
export function postWebhook(url: string, input: string, timeoutMs: number): Promise<void> {
  const target = webhookTarget(url);
  if (!target) return Promise.reject(new Error('webhook is not loopback'));
  return new Promise((resolve, reject) => {
    const where = 'socketPath' in target
      ? { socketPath: target.socketPath, path: target.path }
      : { host: target.url.hostname.replace(/^\[|\]$/g, ''), port: target.url.port || 80, path: `${target.url.pathname}${target.url.search}` };
    const req = http.request({ ...where, method: 'POST', headers: { 'content-type': 'application/json', 'content-length': Buffer.byteLength(input) }, timeout: timeoutMs, signal: AbortSignal.timeout(timeoutMs) }, (res) => {
      res.resume();
      res.on('end', () => ((res.statusCode ?? 0) >= 200 && (res.statusCode ?? 0) < 300 ? resolve() : reject(new Error(`answered ${res.statusCode}`))));
    });
    req.on('timeout', () => req.destroy(new Error(`timed out after ${timeoutMs} ms`)));
    req.on('error', (e: NodeJS.ErrnoException) => reject(new Error(e.name === 'AbortError' ? `timed out after ${timeoutMs} ms` : `could not post: ${e.code ?? e.message}`)));
    req.end(input);
  });
}

function fire(h: HookConfig, doc: Record<string, unknown>, argv?: readonly string[]): Promise<void> {
  const input = `${JSON.stringify(doc)}\n`;
  return h.webhook !== undefined ? postWebhook(h.webhook, input, h.timeoutMs) : runCommand(argv ?? h.command!, input, h.timeoutMs);
}

/**
 * The config's hooks as SupervisorHooks; `record` reads a run's record (its image and lease at the end).
 * A failure is logged at warn here and thrown for the supervisor to ledger.
 */
export function operatorHooks(section: HooksSection, o: { log: Logger; record: (runId: string) => RunRecord | undefined }): SupervisorHooks | undefined {
  const { prepareSpawn: prep, onEnded: ended } = section;
  if (!prep && !ended) return undefined;
  const warned = async (name: string, runId: string, p: Promise<void>) => {
    try {
      await p;
    } catch (e) {
      o.log.warn({ hook: name, runId, why: (e as Error).message }, 'operator hook failed');
      throw e;
    }
  };
  return {
    ...(prep
      ? {
          prepareSpawn: async (run: RunRecord) => {
            await warned('prepareSpawn', run.id, fire(prep, prepareDocument(run, 'prepare')));
            return { rollback: () => warned('prepareSpawn.rollback', run.id, fire(prep, prepareDocument(run, 'rollback'), prep.rollback ?? prep.command)) };
          },
        }
      : {}),
    ...(ended ? { onEnded: (end: RunEndMeta) => warned('onEnded', end.runId, fire(ended, endedDocument(end, o.record(end.runId)))) } : {}),
  };
}

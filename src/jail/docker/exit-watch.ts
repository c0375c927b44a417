/**
 * Learning how a container ended, through an engine that may blink.
 *
 * Guarantees: the exit code returned is the engine's own (the wait's StatusCode, or
 * State.ExitCode when a re-inspect learned it first); a wait lost with its connection (the
 * engine restarted, its socket was cut) is noticed at once — its response closes before a
 * body — and one lost silently (the engine froze, or the answer never came) is caught by a
 * re-inspect every `recheckMs`. Either way the container is inspected: exited, its exit is
 * returned; running, a fresh wait is issued; no answer, it is asked again every `retryMs`
 * until the engine is back — so the end is learned within about `retryMs` of the engine's
 * return, whatever happened to the wait in between.
 * Threat: a wait that neither resolves nor rejects (dockerode's `container.wait()` when the
 * connection drops after the response headers: Node destroys the response without an error
 * listener, so its promise never settles), leaving a finished run `running` until its
 * watchdog, or forever.
 * Trusts: the engine's inspect (State.Running, State.ExitCode, State.OOMKilled).
 * Fails: towards waiting — it never invents an exit. A container the engine no longer knows
 * (404) is `not_running`; `signal` (the driver closing) ends the watch with `shutting_down`.
 */
import type Docker from 'dockerode';
import { BrigError } from '../../util/errors.js';
import { statusOf } from './engine-errors.js';

export interface ExitWatchTiming {
  /** A standing wait is checked against an inspect this often (a wait lost without its connection closing). */
  recheckMs: number;
  /** Longer than this, an inspect is an engine that does not answer. */
  inspectTimeoutMs: number;
  /** While the engine does not answer, it is asked again this often. */
  retryMs: number;
}

export const EXIT_WATCH_TIMING: Readonly<ExitWatchTiming> = Object.freeze({ recheckMs: 5000, inspectTimeoutMs: 5000, retryMs: 1000 });

export interface ExitState {
  exitCode: number;
  /** State.OOMKilled when an inspect told the exit; undefined when the wait did. */
  oomKilled?: boolean;
}

export interface ExitWatchHooks {
  /** The engine answered again after the watch had lost it, and the container still runs. */
  onBack?: () => void;
}

type Waited = { kind: 'exit'; exitCode: number } | { kind: 'lost' } | { kind: 'gone' };
type Inspected = { kind: 'running' } | { kind: 'exited'; exitCode: number; oomKilled: boolean } | { kind: 'unreachable' } | { kind: 'gone' };

interface WaitCall {
  outcome: Promise<Waited>;
  settled: boolean;
  abort(): void;
}

/**
 * POST /containers/ID/wait, read by hand: dockerode's promise cannot tell a closed connection
 * from a child still running. Resolves `lost` on any close before the body, never rejects.
 */
function openWait(container: Docker.Container, signal: AbortSignal): WaitCall {
  const ac = new AbortController();
  const onAbort = () => ac.abort();
  signal.addEventListener('abort', onAbort, { once: true });
  let res: NodeJS.ReadableStream & { destroy(): void } | undefined;
  const call: WaitCall = {
    settled: false,
    abort() {
      ac.abort();
      res?.destroy();
    },
    outcome: new Promise<Waited>((resolve) => {
      const done = (w: Waited) => {
        if (call.settled) return;
        call.settled = true;
        signal.removeEventListener('abort', onAbort);
        resolve(w);
      };
      const statusCodes = { 200: true, 400: 'bad parameter', 404: 'no such container', 500: 'server error' };
      container.modem.dial(
        { path: `/containers/${container.id}/wait?`, method: 'POST', isStream: true, statusCodes, abortSignal: ac.signal, options: {} },
        (err: unknown, stream: NodeJS.ReadableStream & { destroy(): void }) => {
          if (err) return done(statusOf(err) === 404 ? { kind: 'gone' } : { kind: 'lost' });
          res = stream;
          if (ac.signal.aborted) stream.destroy();
          const chunks: Buffer[] = [];
          stream.on('data', (c: Buffer) => chunks.push(Buffer.from(c)));
          stream.on('end', () => {
            const code = (() => {
              try {
                return (JSON.parse(Buffer.concat(chunks).toString('utf8')) as { StatusCode?: unknown }).StatusCode;
              } catch {
                return undefined;
              }
            })();
            done(typeof code === 'number' ? { kind: 'exit', exitCode: code } : { kind: 'lost' });
          });
          // A close or error before 'end' is the connection lost, not an answer.
          stream.on('error', () => done({ kind: 'lost' }));
          stream.on('close', () => done({ kind: 'lost' }));
        },
      );
    }),
  };
  return call;
}

async function inspectState(container: Docker.Container, timeoutMs: number, signal: AbortSignal): Promise<Inspected> {
  try {
    const info = await container.inspect({ abortSignal: AbortSignal.any([signal, AbortSignal.timeout(timeoutMs)]) });
    const st = info.State;
    if (st?.Running === true) return { kind: 'running' };
    return { kind: 'exited', exitCode: st?.ExitCode ?? -1, oomKilled: st?.OOMKilled === true };
  } catch (e) {
    return statusOf(e) === 404 ? { kind: 'gone' } : { kind: 'unreachable' };
  }
}

const TICK = { kind: 'tick' } as const;

/** A pause that the signal ends early; cancel() clears it (a timer left behind would hold the process). */
function delay(ms: number, signal: AbortSignal): { p: Promise<typeof TICK>; cancel: () => void } {
  let cancel = () => {};
  const p = new Promise<typeof TICK>((resolve) => {
    const wake = () => (clearTimeout(timer), resolve(TICK));
    // Held like the wait's own connection: a watch keeps the process up while its child runs.
    const timer = setTimeout(() => (signal.removeEventListener('abort', wake), resolve(TICK)), ms);
    signal.addEventListener('abort', wake, { once: true });
    cancel = () => (clearTimeout(timer), signal.removeEventListener('abort', wake));
  });
  return { p, cancel };
}

const gone = () => new BrigError('not_running', 'the jail is gone: the engine no longer knows its container');

/** Resolves with the container's exit once the engine tells it, however often the wait is lost on the way. */
export async function watchExit(container: Docker.Container, signal: AbortSignal, timing: ExitWatchTiming = EXIT_WATCH_TIMING, hooks: ExitWatchHooks = {}): Promise<ExitState> {
  let wait = openWait(container, signal);
  /** An inspect went unanswered since this wait was issued: it may be dead without its connection closing. */
  let doubt = false;
  try {
    for (;;) {
      // A lost wait is not raced again (it answered already): the engine is asked after retryMs.
      const pause = delay(wait.settled || doubt ? timing.retryMs : timing.recheckMs, signal);
      const woke = wait.settled ? await pause.p : await Promise.race([wait.outcome, pause.p]);
      pause.cancel();
      if (signal.aborted) throw new BrigError('shutting_down', 'the jail driver closed while waiting for the jail');
      if (woke.kind === 'exit') return { exitCode: woke.exitCode };
      if (woke.kind === 'gone') throw gone();
      const st = await inspectState(container, timing.inspectTimeoutMs, signal);
      if (st.kind === 'gone') throw gone();
      if (st.kind === 'unreachable') {
        doubt = true;
        continue;
      }
      if (st.kind === 'exited') return { exitCode: st.exitCode, oomKilled: st.oomKilled };
      if (doubt || wait.settled) {
        // Running, after the engine was lost: whatever the old wait's connection holds, a new one is sure.
        wait.abort();
        wait = openWait(container, signal);
        doubt = false;
        hooks.onBack?.();
      }
    }
  } finally {
    wait.abort();
  }
}

/**
 * The timers and abort links of one model call: the call (the caller's signal and the whole-call
 * deadline) and each attempt under it (its own idle timer, reset on every byte). Timers are
 * unref'd: an open socket keeps the process alive, a forgotten timer does not.
 */

/** The whole call: the caller's signal and the deadline. */
export class CallGuard {
  private readonly ctl = new AbortController();
  reason: 'aborted' | 'timeout' | undefined;
  private readonly timer: NodeJS.Timeout;
  private readonly onAbort = () => this.abort('aborted');

  constructor(timeoutMs: number, private readonly outer?: AbortSignal) {
    this.timer = setTimeout(() => this.abort('timeout'), timeoutMs).unref();
    if (outer?.aborted) this.abort('aborted');
    else outer?.addEventListener('abort', this.onAbort, { once: true });
  }

  get signal(): AbortSignal {
    return this.ctl.signal;
  }

  private abort(reason: 'aborted' | 'timeout'): void {
    if (this.reason) return;
    this.reason = reason;
    this.ctl.abort();
  }

  dispose(): void {
    clearTimeout(this.timer);
    this.outer?.removeEventListener('abort', this.onAbort);
  }
}

/** One attempt: aborted by the call or by its own idle timer (reset on every byte). */
export class AttemptGuard {
  private readonly ctl: AbortController;
  idleFired = false;
  private timer: NodeJS.Timeout | undefined;
  private readonly onAbort = () => this.ctl.abort();

  constructor(private readonly call: AbortSignal, private readonly idleMs: number, ctl?: AbortController) {
    this.ctl = ctl ?? new AbortController();
    if (call.aborted) this.ctl.abort();
    else call.addEventListener('abort', this.onAbort, { once: true });
    this.touch();
  }

  get signal(): AbortSignal {
    return this.ctl.signal;
  }

  touch(): void {
    clearTimeout(this.timer);
    this.timer = setTimeout(() => {
      this.idleFired = true;
      this.ctl.abort();
    }, this.idleMs).unref();
  }

  /** The same request signal under a fresh idle timer and call link. */
  reopen(): AttemptGuard {
    return new AttemptGuard(this.call, this.idleMs, this.ctl);
  }

  dispose(): void {
    clearTimeout(this.timer);
    this.call.removeEventListener('abort', this.onAbort);
  }
}

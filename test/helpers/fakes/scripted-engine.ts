import type { LocalEngine, Segment } from '../../../src/models/index.js';

type GenerateRequest = Parameters<LocalEngine['generate']>[0];

/**
 * The unit tests' twin of the llama engine (not a model): one token per character of the
 * prompt and of the reply, replies taken from a script, each generated a piece per `stepMs`
 * so that a test can overlap, queue and abort them. It records every request it was given.
 */
export class ScriptedEngine implements LocalEngine {
  readonly model = 'scripted-engine';
  readonly threads = 1;
  readonly loadMs = 0;
  readonly requests: GenerateRequest[] = [];
  /** How many generations ran at once, at most. */
  maxConcurrent = 0;
  aborted = 0;
  private running = 0;

  constructor(
    private readonly replies: (req: GenerateRequest) => string,
    readonly contextSize = 4096,
    private readonly stepMs = 0,
  ) {}

  tokenize(segments: readonly Segment[]): number[] {
    return [...segments.map((s) => s.text).join('')].map((c) => c.codePointAt(0)!);
  }

  async generate(r: GenerateRequest): Promise<{ text: string; output: number; reused: number; finish: 'stop' | 'length' | 'aborted' }> {
    this.requests.push(r);
    this.running++;
    this.maxConcurrent = Math.max(this.maxConcurrent, this.running);
    try {
      const reply = [...this.replies(r)];
      let text = '';
      for (const ch of reply) {
        if (this.stepMs > 0) await new Promise((res) => setTimeout(res, this.stepMs));
        if (r.signal.aborted) {
          this.aborted++;
          return { text, output: [...text].length, reused: 0, finish: 'aborted' };
        }
        if ([...text].length >= r.maxTokens) return { text, output: [...text].length, reused: 0, finish: 'length' };
        text += ch;
        r.onText?.(ch);
        if (r.done?.(text)) break;
      }
      return { text, output: [...text].length, reused: 0, finish: 'stop' };
    } finally {
      this.running--;
    }
  }

  async close(): Promise<void> {}
}

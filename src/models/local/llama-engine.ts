/**
 * The one file that loads node-llama-cpp (the local provider's helper process only): a GGUF
 * on the CPU, one context sequence, its evaluated prefix reused across calls.
 *
 * The runtime is not one of brig's npm dependencies (its GPU variants weigh ~650 MB): it is
 * installed on demand into its own package folder (`local-model/`, `make model`), and loaded
 * from there by path. `build: "never"` — a missing prebuilt binary is an error that says how
 * to install it, never a compiler run; `gpu: false` — the CPU binary only.
 *
 * Threads are pinned (default 1): llama.cpp's threads spin while they wait, and on a machine
 * doing other work the default thread count made a one-line answer take 112 s instead of
 * 0.65 s (measured; docs/models.md).
 */
import { createRequire } from 'node:module';
import path from 'node:path';
import { pathToFileURL } from 'node:url';
import type { Segment } from './chatml.js';

/** The slice of node-llama-cpp's API brig uses (its types are not installed with brig). */
interface Llama {
  loadModel(o: { modelPath: string }): Promise<LlamaModel>;
  createGrammar(o: { grammar: string }): Promise<object>;
  dispose(): Promise<void>;
}
interface LlamaModel {
  readonly trainContextSize: number;
  tokenize(text: string, specialTokens?: boolean): number[];
  detokenize(tokens: readonly number[]): string;
  isEogToken(token: number | undefined): boolean;
  createContext(o: { contextSize: number; threads: number; sequences: number; batchSize?: number }): Promise<LlamaContext>;
  dispose(): Promise<void>;
}
interface LlamaContext {
  readonly contextSize: number;
  getSequence(): LlamaSequence;
  dispose(): Promise<void>;
}
interface LlamaSequence {
  readonly nextTokenIndex: number;
  compareContextTokens(tokens: number[]): { firstDifferentIndex: number };
  eraseContextTokenRanges(ranges: { start: number; end: number }[]): Promise<void>;
  evaluate(tokens: number[], o: { temperature: number; grammarEvaluationState?: object }): AsyncGenerator<number, void, void>;
}
interface NodeLlamaCpp {
  getLlama(o: { gpu: false; build: 'never'; maxThreads: number; logLevel: string; logger: (level: string, message: string) => void }): Promise<Llama>;
  LlamaGrammarEvaluationState: new (o: { model: LlamaModel; grammar: object }) => object;
}

export interface GenerateRequest {
  tokens: number[];
  /** GBNF the reply must match (tool-grammar.ts); none: free text. */
  grammar?: string | undefined;
  maxTokens: number;
  temperature: number;
  signal: AbortSignal;
  /** Each new piece of text as it is generated (whole characters only). */
  onText?: (piece: string) => void;
  /** Stop once this says the reply is complete (a grammar-bound call's closing brace). */
  done?: (textSoFar: string) => boolean;
}

export interface Generated {
  text: string;
  /** Tokens generated, the stop token not counted. */
  output: number;
  /** Prompt tokens whose evaluation was reused from the call before. */
  reused: number;
  finish: 'stop' | 'length' | 'aborted';
}

/** What the server needs from a loaded model (a twin serves the unit tests). */
export interface LocalEngine {
  readonly model: string;
  readonly contextSize: number;
  readonly threads: number;
  readonly loadMs: number;
  tokenize(segments: readonly Segment[]): number[];
  /** One generation at a time: the caller (the server's queue) serializes them. */
  generate(r: GenerateRequest): Promise<Generated>;
  close(): Promise<void>;
}

export interface EngineOptions {
  gguf: string;
  /** The package folder node-llama-cpp is installed in. */
  runtimeDir: string;
  threads: number;
  contextSize: number;
  /** llama.cpp's own log lines (warnings and errors). */
  log?: (line: string) => void;
}

/** node-llama-cpp from its package folder, or an Error saying it is not there. */
async function loadRuntime(runtimeDir: string): Promise<NodeLlamaCpp> {
  const req = createRequire(path.join(runtimeDir, 'package.json'));
  const entry = req.resolve('node-llama-cpp');
  return (await import(pathToFileURL(entry).href)) as NodeLlamaCpp;
}

export async function loadLlamaEngine(o: EngineOptions): Promise<LocalEngine> {
  const started = performance.now();
  const lib = await loadRuntime(o.runtimeDir);
  const llama = await lib.getLlama({ gpu: false, build: 'never', maxThreads: o.threads, logLevel: 'warn', logger: (level, message) => o.log?.(`${level}: ${message}`) });
  const model = await llama.loadModel({ modelPath: o.gguf });
  const contextSize = Math.min(o.contextSize, model.trainContextSize);
  const context = await model.createContext({ contextSize, threads: o.threads, sequences: 1 });
  const sequence = context.getSequence();
  const grammars = new Map<string, object>();
  const grammarFor = async (gbnf: string): Promise<object> => {
    const known = grammars.get(gbnf);
    if (known) return known;
    const g = await llama.createGrammar({ grammar: gbnf });
    if (grammars.size >= 16) grammars.delete(grammars.keys().next().value!);
    grammars.set(gbnf, g);
    return g;
  };
  return {
    model: path.basename(o.gguf).replace(/\.gguf$/i, ''),
    contextSize: context.contextSize,
    threads: o.threads,
    loadMs: Math.round(performance.now() - started),
    tokenize: (segments) => segments.flatMap((s) => model.tokenize(s.text, s.special)),
    async generate(r) {
      // Reuse what the sequence already evaluated: only the tokens past the common prefix are
      // evaluated (the last prompt token always is, for the next token's logits).
      const { firstDifferentIndex } = sequence.compareContextTokens(r.tokens);
      const from = Math.min(firstDifferentIndex, r.tokens.length - 1);
      await sequence.eraseContextTokenRanges([{ start: from, end: sequence.nextTokenIndex }]);
      const grammarEvaluationState = r.grammar ? new lib.LlamaGrammarEvaluationState({ model, grammar: await grammarFor(r.grammar) }) : undefined;
      const out: number[] = [];
      let text = '';
      // The runtime ends the stream itself at an end-of-generation token (<|im_end|>).
      let finish: Generated['finish'] = 'stop';
      if (r.signal.aborted) return { text, output: 0, reused: from, finish: 'aborted' };
      for await (const token of sequence.evaluate(r.tokens.slice(from), { temperature: r.temperature, ...(grammarEvaluationState ? { grammarEvaluationState } : {}) })) {
        if (r.signal.aborted) {
          finish = 'aborted';
          break;
        }
        if (model.isEogToken(token)) {
          finish = 'stop';
          break;
        }
        out.push(token);
        // Whole characters only: a token may end inside a multi-byte one.
        const all = model.detokenize(out);
        if (!all.endsWith('\uFFFD') && all.length > text.length && all.startsWith(text)) {
          r.onText?.(all.slice(text.length));
          text = all;
        }
        if (r.done?.(text)) {
          finish = 'stop';
          break;
        }
        if (out.length >= r.maxTokens) {
          finish = 'length';
          break;
        }
      }
      text = model.detokenize(out);
      return { text, output: out.length, reused: from, finish };
    },
    async close() {
      await context.dispose();
      await model.dispose();
      await llama.dispose();
    },
  };
}

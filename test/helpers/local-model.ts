/**
 * The real local model for tests (not a stand-in): SmolLM2-135M-Instruct as `make model`
 * leaves it (BRIG_TEST_GGUF, else the Makefile's default cache), served by node-llama-cpp
 * from brig's own local-model/ package folder. A test that needs it never skips silently:
 * outside CI a missing model or runtime skips with how to get it; in CI it is a failure.
 */
import fs from 'node:fs';
import path from 'node:path';
import type { TestContext } from 'node:test';
import { createRequire } from 'node:module';
import { pathToFileURL } from 'node:url';

const ROOT = path.resolve(import.meta.dirname, '../..');
export const LOCAL_GGUF = process.env.BRIG_TEST_GGUF || path.join(ROOT, '.cache/models/SmolLM2-135M-Instruct.Q4_1.gguf');
export const LOCAL_RUNTIME = path.join(ROOT, 'local-model');

export function requireLocalModel(t: TestContext): boolean {
  const missing = !fs.existsSync(LOCAL_GGUF)
    ? `the local model ${LOCAL_GGUF} is missing`
    : !fs.existsSync(path.join(LOCAL_RUNTIME, 'node_modules/node-llama-cpp/package.json'))
      ? 'the local model runtime (local-model/node_modules) is not installed'
      : undefined;
  if (!missing) return true;
  const why = `${missing} (run \`make model\`)`;
  if (process.env.CI === 'true' || process.env.CI === '1') throw new Error(`${why}; CI requires it`);
  t.skip(why);
  return false;
}

/** The model's own tokenizer, loaded in this process (vocabulary only, no weights evaluated). */
export interface Tokenizer {
  /** Tokens of a text, special tokens (`<|im_start|>`) read as such. */
  count(text: string): number;
  close(): Promise<void>;
}

export async function loadTokenizer(): Promise<Tokenizer> {
  const entry = createRequire(path.join(LOCAL_RUNTIME, 'package.json')).resolve('node-llama-cpp');
  const lib = (await import(pathToFileURL(entry).href)) as {
    getLlama(o: object): Promise<{ loadModel(o: object): Promise<{ tokenize(t: string, special: boolean): number[]; dispose(): Promise<void> }>; dispose(): Promise<void> }>;
  };
  const llama = await lib.getLlama({ gpu: false, build: 'never', logLevel: 'error' });
  const model = await llama.loadModel({ modelPath: LOCAL_GGUF, vocabOnly: true });
  return {
    count: (text) => model.tokenize(text, true).length,
    close: async () => {
      await model.dispose();
      await llama.dispose();
    },
  };
}

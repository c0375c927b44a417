import path from 'node:path';
import { DEFAULT_RUNTIME_DIR, loadConfig, localModelProblem, pullDefaultModel, registerGguf } from '../../index.js';
import { JSON_FLAG, parseArgs, writeJson, type Command } from '../command.js';

const command: Command = {
  name: 'model pull',
  summary: 'Get the default local model (SmolLM2-135M-Instruct, sha256-checked) into $BRIG_HOME/models/ and register it, or register a GGUF you have.',
  usage: 'brig model pull [--gguf FILE | --dir DIR] [--json]',
  flags: [
    { name: 'gguf', value: 'FILE', description: 'register this GGUF file as the local model instead (its header is checked; nothing is fetched)' },
    { name: 'dir', value: 'DIR', description: 'put the default model in DIR and register nothing (a shared cache: `make model`)' },
    { name: 'quiet', description: "don't print progress" },
    JSON_FLAG,
  ],
  examples: ['brig model pull', 'brig model pull --gguf ~/models/qwen2.5-0.5b-instruct-q4_k_m.gguf', 'brig model pull --dir .cache/models --json'],
  async run(args, io) {
    const p = parseArgs(args, command.flags);
    const home = loadConfig(io.env).home;
    const gguf = p.flags.get('gguf')?.at(-1);
    const dir = p.flags.get('dir')?.at(-1);
    const quiet = p.bools.has('quiet') || p.bools.has('json');
    const r = gguf
      ? registerGguf(gguf, home)
      : await pullDefaultModel({
          dir: dir ? path.resolve(dir) : path.join(home, 'models'),
          ...(dir ? {} : { home }),
          env: io.env,
          ...(quiet ? {} : { onProgress: (l: string) => io.stderr.write(`  ${l}\n`) }),
        });
    if (!r.ok) throw r.error;
    const runtime = localModelProblem(r.value.gguf, DEFAULT_RUNTIME_DIR);
    if (p.bools.has('json')) {
      writeJson(io, { ...r.value, runtimeInstalled: runtime === undefined });
      return 0;
    }
    io.stdout.write(`${r.value.fetched ? 'pulled' : gguf ? 'registered' : 'present'} ${r.value.gguf} (${r.value.bytes} bytes${r.value.sha256 ? `, sha256 ${r.value.sha256.slice(0, 16)}…` : ''})\n`);
    if (r.value.registered) io.stdout.write(`registered as the local model of ${r.value.registered}: with no other model configured, agents use it (alias "local")\n`);
    else io.stdout.write(`use it: BRIG_MODEL_GGUF=${r.value.gguf} (docs/models.md)\n`);
    if (runtime) io.stderr.write(`note: ${runtime.message}\n  ${runtime.hint}\n`);
    return 0;
  },
};
export default command;

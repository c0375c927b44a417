/**
 * The model catalog: aliases → ready clients, from config.yaml's `models` section and the
 * BRIG_MODEL_* quick path (alias `default`), both as loadConfig read them.
 *
 * Guarantees: the catalog does not load while config.yaml or a BRIG_MODEL_* value is invalid
 * (an `invalid_input` value naming the file and line); an alias defined by both is refused,
 * not silently shadowed; an alias whose key variable is unset does not resolve
 * (`model_unavailable`, naming the variable, never a value); one connection pool per
 * provider. Keys come only from the config object (Secret values) and go only into clients.
 */
import os from 'node:os';
import path from 'node:path';
import { parseModelsConfig, type BrigConfig, type EnvLocalModel, type EnvModel, type ModelsSection, type PriceConfig, type Secret } from '../config/index.js';
import { BrigError, err, ok, type Result } from '../util/errors.js';
import { nearest } from '../util/nearest.js';
import type { Agent } from 'undici';
import { AnthropicMessagesClient } from './anthropic-messages.js';
import { ClientChatProvider } from './chat-provider.js';
import { endpointAgent, type ClientOptions } from './client-options.js';
import { OpenAIChatClient } from './openai-chat.js';
import { LocalModelClient } from './local/local-client.js';
import { DEFAULT_RUNTIME_DIR, LocalModelHost, localModelProblem } from './local/local-host.js';
import type { ModelApi, ModelCatalog, ModelClient, ModelProvider, Price, ResolvedModel } from './types.js';

/** The env quick path's alias. */
export const ENV_ALIAS = 'default';
/** maxOutputTokens reported for the quick path when BRIG_MODEL_MAX_OUTPUT is unset (not sent to an openai-chat server). */
export const ENV_MAX_OUTPUT_FALLBACK = 4096;
/** The alias of the model `brig model pull` registered, offered when nothing else is configured. */
export const REGISTERED_ALIAS = 'local';
/** maxOutputTokens of a local model when none is configured: a small model's runaway reply stays short. */
export const LOCAL_MAX_OUTPUT_FALLBACK = 1024;
/** A local model costs nothing per token. */
const FREE: Price = Object.freeze({ inputPerToken: 0, outputPerToken: 0 });

/** How a `local` entry is served. */
interface LocalSpec {
  gguf: string;
  threads: number;
  toolChoice: 'required' | 'auto';
  runtimeDir: string;
}

interface Entry {
  alias: string;
  provider: string;
  api: ModelApi;
  options: Omit<ClientOptions, 'dispatcher' | 'apiKey'>;
  /** The key variable's name, when the provider has one. */
  keyEnv: string | undefined;
  /** Kept as a Secret until the client is made, so inspecting the catalog shows no key. */
  apiKey: Secret | undefined;
  contextWindow: number;
  maxOutputTokens: number;
  price: Price | null;
  /** api local: the file and how to serve it. */
  local?: LocalSpec;
}

export function priceFromConfig(p: PriceConfig | undefined): Price | null {
  if (!p) return null;
  return {
    inputPerToken: p.inputPerMTok / 1e6,
    outputPerToken: p.outputPerMTok / 1e6,
    ...(p.cacheReadPerMTok !== undefined ? { cacheReadPerToken: p.cacheReadPerMTok / 1e6 } : {}),
    ...(p.cacheWritePerMTok !== undefined ? { cacheWritePerToken: p.cacheWritePerMTok / 1e6 } : {}),
  };
}

export class ConfiguredModelCatalog implements ModelCatalog {
  readonly defaultAlias: string | null;
  private readonly agents = new Map<string, Agent>();
  private readonly clients = new Map<string, ModelClient>();
  /** One helper process per local provider, started on its first call. */
  private readonly hosts = new Map<string, LocalModelHost>();

  constructor(private readonly entries: ReadonlyMap<string, Entry>, defaultAlias: string | null) {
    this.defaultAlias = defaultAlias;
  }

  aliases(): string[] {
    return [...this.entries.keys()].sort();
  }

  resolve(alias?: string): Result<ResolvedModel> {
    const name = alias ?? this.defaultAlias;
    if (name === null) {
      return err(
        new BrigError('model_unavailable', this.entries.size === 0 ? 'no model is configured' : 'no default model alias is configured', {
          hint:
            this.entries.size === 0
              ? 'Set BRIG_MODEL_BASE_URL (and BRIG_MODEL) for the supervisor, or add models to $BRIG_HOME/config.yaml (docs/models.md).'
              : `Name one of ${this.aliases().join(', ')}, or set models.default in $BRIG_HOME/config.yaml.`,
        }),
      );
    }
    const e = this.entries.get(name);
    if (!e) {
      const near = nearest(name, this.entries.keys());
      return err(
        new BrigError('invalid_input', `unknown model alias "${name.slice(0, 64)}"`, {
          data: { alias: name.slice(0, 64) },
          hint: near ? `Did you mean "${near}"?` : `Aliases: ${this.aliases().join(', ') || 'none (docs/models.md)'}.`,
        }),
      );
    }
    if (e.keyEnv !== undefined && e.apiKey === undefined) {
      return err(
        new BrigError('model_unavailable', `model alias "${name}": provider "${e.provider}" takes its key from ${e.keyEnv}, which is not set for the supervisor`, {
          data: { alias: name, provider: e.provider },
          hint: `Export ${e.keyEnv} in the environment of \`brig serve\` and restart it.`,
        }),
      );
    }
    if (e.local) {
      // A local model without its runtime or its file says how to get them, before any run starts.
      const problem = localModelProblem(e.local.gguf, e.local.runtimeDir);
      if (problem) return err(new BrigError(problem.code, `model alias "${name}": ${problem.message}`, { data: { alias: name, ...(problem.data as object) }, hint: problem.hint }));
    }
    return ok({ alias: name, client: this.clientOf(e), contextWindow: e.contextWindow, maxOutputTokens: e.maxOutputTokens, price: e.price, ...(e.local ? { local: true } : {}) });
  }

  private clientOf(e: Entry): ModelClient {
    const known = this.clients.get(e.alias);
    if (known) return known;
    if (e.local) {
      let host = this.hosts.get(e.provider);
      if (!host) {
        host = new LocalModelHost({ gguf: e.local.gguf, runtimeDir: e.local.runtimeDir, threads: e.local.threads, contextSize: e.contextWindow, ...(e.options.idleTimeoutMs !== undefined ? { idleTimeoutMs: e.options.idleTimeoutMs } : {}) });
        this.hosts.set(e.provider, host);
      }
      const local = new LocalModelClient(host, { ...e.options, toolChoice: e.local.toolChoice });
      this.clients.set(e.alias, local);
      return local;
    }
    let agent = this.agents.get(e.provider);
    if (!agent) {
      agent = endpointAgent(e.options.idleTimeoutMs);
      this.agents.set(e.provider, agent);
    }
    const o: ClientOptions = { ...e.options, dispatcher: agent, ...(e.apiKey !== undefined ? { apiKey: e.apiKey.reveal() } : {}) };
    const client = e.api === 'anthropic-messages' ? new AnthropicMessagesClient(o) : new OpenAIChatClient(o);
    this.clients.set(e.alias, client);
    return client;
  }

  /** Closes every provider's connection pool and stops every local model's helper. */
  async close(): Promise<void> {
    const all = [...this.agents.values()];
    const hosts = [...this.hosts.values()];
    this.agents.clear();
    this.hosts.clear();
    this.clients.clear();
    await Promise.all([...all.map((a) => a.close()), ...hosts.map((h) => h.close())]);
  }
}

/** A configured GGUF path: absolute, `~/…`, or relative to the brig home. */
function ggufPath(file: string, home: string): string {
  if (file === '~' || file.startsWith('~/')) return path.join(os.homedir(), file.slice(1));
  return path.resolve(home, file);
}

function fileEntries(models: ModelsSection, keys: BrigConfig['models']['keys'], home: string, runtimeDir: string): Map<string, Entry> {
  const out = new Map<string, Entry>();
  for (const [alias, a] of Object.entries(models.aliases)) {
    const p = models.providers[a.provider]!;
    out.set(alias, {
      alias,
      provider: a.provider,
      api: p.api,
      ...(p.api === 'local' ? { local: { gguf: ggufPath(p.gguf!, home), threads: p.threads ?? 1, toolChoice: p.toolChoice ?? 'required', runtimeDir } } : {}),
      options: {
        baseUrl: p.baseUrl ?? '',
        model: a.model,
        maxOutputTokens: a.maxOutputTokens,
        ...(p.timeoutMs !== undefined ? { timeoutMs: p.timeoutMs } : {}),
        ...(p.idleTimeoutMs !== undefined ? { idleTimeoutMs: p.idleTimeoutMs } : {}),
        ...(p.maxRetries !== undefined ? { maxRetries: p.maxRetries } : {}),
        ...(p.maxReplyBytes !== undefined ? { maxReplyBytes: p.maxReplyBytes } : {}),
      },
      keyEnv: p.apiKeyEnv,
      apiKey: p.apiKeyEnv !== undefined ? keys[p.apiKeyEnv] : undefined,
      contextWindow: a.contextWindow,
      maxOutputTokens: a.maxOutputTokens,
      price: p.api === 'local' ? FREE : priceFromConfig(a.price),
    });
  }
  return out;
}

/** A local model from BRIG_MODEL_GGUF (alias `default`) or the home's registered one (alias `local`). */
function localEntry(alias: string, m: Pick<EnvLocalModel, 'gguf' | 'model' | 'contextWindow' | 'maxOutputTokens' | 'threads'>, runtimeDir: string): Entry {
  const maxOutputTokens = m.maxOutputTokens ?? Math.min(LOCAL_MAX_OUTPUT_FALLBACK, m.contextWindow);
  return {
    alias,
    provider: `local:${alias}`,
    api: 'local',
    local: { gguf: m.gguf, threads: m.threads, toolChoice: 'required', runtimeDir },
    options: { baseUrl: '', model: m.model, maxOutputTokens },
    keyEnv: undefined,
    apiKey: undefined,
    contextWindow: m.contextWindow,
    maxOutputTokens,
    price: FREE,
  };
}

function envEntry(e: EnvModel): Entry {
  // openai-chat servers get no max_tokens unless the operator set one (vLLM refuses prompt +
  // max_tokens over its window); Anthropic requires one, so it gets the fallback.
  const sendMax = e.maxOutputTokens ?? (e.api === 'anthropic-messages' ? ENV_MAX_OUTPUT_FALLBACK : undefined);
  return {
    alias: ENV_ALIAS,
    provider: 'env',
    api: e.api,
    options: { baseUrl: e.baseUrl, model: e.model, ...(sendMax !== undefined ? { maxOutputTokens: sendMax } : {}) },
    keyEnv: undefined,
    apiKey: e.apiKey,
    contextWindow: e.contextWindow,
    maxOutputTokens: e.maxOutputTokens ?? Math.min(ENV_MAX_OUTPUT_FALLBACK, e.contextWindow),
    price: priceFromConfig(e.price),
  };
}

/**
 * The catalog for a loaded config: config.yaml's aliases plus `default` from BRIG_MODEL_*.
 * Default alias: models.default, else `default` (the quick path), else the only alias, else none.
 */
export function loadModelCatalog(cfg: BrigConfig): Result<ConfiguredModelCatalog> {
  const m = cfg.models;
  if (m.envProblems.length > 0) {
    return err(
      new BrigError('invalid_input', `the BRIG_MODEL_* settings are invalid: ${m.envProblems[0]}`, {
        data: { problems: m.envProblems },
        hint: 'Fix the BRIG_MODEL_* variables of the supervisor (docs/models.md, "The quick path").',
      }),
    );
  }
  if (m.fileError !== undefined) {
    return err(new BrigError('invalid_input', `cannot read ${m.file}: ${m.fileError}`, { data: { file: m.file }, hint: 'Check the file is readable by this user.' }));
  }
  let entries = new Map<string, Entry>();
  let fileDefault: string | undefined;
  const runtimeDir = m.localRuntimeDir ?? DEFAULT_RUNTIME_DIR;
  if (m.fileText !== null) {
    const parsed = parseModelsConfig(m.fileText, m.file);
    if (!parsed.ok) return parsed;
    entries = fileEntries(parsed.value, m.keys, cfg.home, runtimeDir);
    fileDefault = parsed.value.default;
  }
  const quick = m.env ? { name: 'BRIG_MODEL_BASE_URL', entry: envEntry(m.env) } : m.envLocal ? { name: 'BRIG_MODEL_GGUF', entry: localEntry(ENV_ALIAS, m.envLocal, runtimeDir) } : undefined;
  if (quick) {
    if (entries.has(ENV_ALIAS)) {
      return err(
        new BrigError('invalid_input', `model alias "${ENV_ALIAS}" is defined both by ${quick.name} and by ${m.file}`, {
          hint: `Rename the alias in ${m.file}, or unset ${quick.name}.`,
        }),
      );
    }
    entries.set(ENV_ALIAS, quick.entry);
  }
  // The model `brig model pull` registered: the out-of-the-box default, never beside another configuration.
  if (entries.size === 0 && m.registered) {
    const r = m.registered;
    entries.set(REGISTERED_ALIAS, localEntry(REGISTERED_ALIAS, { gguf: r.gguf, model: path.basename(r.gguf).replace(/\.gguf$/i, ''), contextWindow: 8192, maxOutputTokens: undefined, threads: 1 }, runtimeDir));
  }
  const only = entries.size === 1 ? [...entries.keys()][0]! : null;
  const def = fileDefault ?? (entries.has(ENV_ALIAS) ? ENV_ALIAS : only);
  return ok(new ConfiguredModelCatalog(entries, def));
}

/**
 * The Level 2 condensation model for a config (the default alias as a `ModelProvider`), or
 * undefined when no model is configured. A broken config is an error value, not silence.
 */
export function condensationModel(cfg: BrigConfig): Result<ModelProvider | undefined> {
  const cat = loadModelCatalog(cfg);
  if (!cat.ok) return cat;
  if (cat.value.defaultAlias === null) return ok(undefined);
  const r = cat.value.resolve();
  return r.ok ? ok(new ClientChatProvider(r.value.client)) : r;
}

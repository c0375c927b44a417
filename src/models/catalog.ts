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
import { parseModelsConfig, type BrigConfig, type EnvModel, type ModelsSection, type PriceConfig, type Secret } from '../config/index.js';
import { BrigError, err, ok, type Result } from '../util/errors.js';
import { nearest } from '../util/nearest.js';
import type { Agent } from 'undici';
import { AnthropicMessagesClient } from './anthropic-messages.js';
import { ClientChatProvider } from './chat-provider.js';
import { endpointAgent, type ClientOptions } from './client-options.js';
import { OpenAIChatClient } from './openai-chat.js';
import type { ModelApi, ModelCatalog, ModelClient, ModelProvider, Price, ResolvedModel } from './types.js';

/** The env quick path's alias. */
export const ENV_ALIAS = 'default';
/** maxOutputTokens reported for the quick path when BRIG_MODEL_MAX_OUTPUT is unset (not sent to an openai-chat server). */
export const ENV_MAX_OUTPUT_FALLBACK = 4096;

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
    return ok({ alias: name, client: this.clientOf(e), contextWindow: e.contextWindow, maxOutputTokens: e.maxOutputTokens, price: e.price });
  }

  private clientOf(e: Entry): ModelClient {
    const known = this.clients.get(e.alias);
    if (known) return known;
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

  /** Closes every provider's connection pool. */
  async close(): Promise<void> {
    const all = [...this.agents.values()];
    this.agents.clear();
    this.clients.clear();
    await Promise.all(all.map((a) => a.close()));
  }
}

function fileEntries(models: ModelsSection, keys: BrigConfig['models']['keys']): Map<string, Entry> {
  const out = new Map<string, Entry>();
  for (const [alias, a] of Object.entries(models.aliases)) {
    const p = models.providers[a.provider]!;
    out.set(alias, {
      alias,
      provider: a.provider,
      api: p.api,
      options: {
        baseUrl: p.baseUrl,
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
      price: priceFromConfig(a.price),
    });
  }
  return out;
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
  if (m.fileText !== null) {
    const parsed = parseModelsConfig(m.fileText, m.file);
    if (!parsed.ok) return parsed;
    entries = fileEntries(parsed.value, m.keys);
    fileDefault = parsed.value.default;
  }
  if (m.env) {
    if (entries.has(ENV_ALIAS)) {
      return err(
        new BrigError('invalid_input', `model alias "${ENV_ALIAS}" is defined both by BRIG_MODEL_BASE_URL and by ${m.file}`, {
          hint: `Rename the alias in ${m.file}, or unset BRIG_MODEL_BASE_URL.`,
        }),
      );
    }
    entries.set(ENV_ALIAS, envEntry(m.env));
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

/**
 * The `models` section of $BRIG_HOME/config.yaml: providers (where and how to call), aliases
 * (what the broker and the agent specs name), the default alias.
 *
 * Guarantees: strict — an unknown or misspelled key, a bad value, an alias naming an unknown
 * provider or a default naming an unknown alias refuses the whole file, and the error names
 * the file, the line, the key path and the nearest valid key. API keys are never in the file:
 * a provider names the environment variable holding its key (`apiKeyEnv`), and a key pasted
 * into the file is refused without being echoed. Threat: a typo that silently drops a timeout
 * or routes calls to the wrong endpoint; a key committed with the config. Fails closed.
 */
import { z } from 'zod';
import { BrigError, err, ok, type Result } from '../util/errors.js';
import { nearest } from '../util/nearest.js';
import { at, describeIssue, lineOf, parseYaml, type Problem } from './yaml-issues.js';
import { HooksSectionSchema, validHookKeysAt } from './hooks-file.js';

export const MODEL_APIS = ['openai-chat', 'anthropic-messages'] as const;
export const ModelApiSchema = z.enum(MODEL_APIS);
/** `local`: a GGUF file brig serves itself (models/local/), outside every jail. */
export const PROVIDER_APIS = [...MODEL_APIS, 'local'] as const;
/** The local provider's answer to a tools call the caller left on `auto`: `required` forces a call. */
export const LOCAL_TOOL_CHOICES = ['required', 'auto'] as const;

const NameSchema = z.string().regex(/^[A-Za-z0-9][A-Za-z0-9._-]{0,63}$/, 'a name: letters, digits, ., _ and - (at most 64)');
export const EnvNameSchema = z.string().regex(/^[A-Za-z_][A-Za-z0-9_]{0,127}$/, 'the NAME of an environment variable (the key itself never goes in this file)');
const HttpUrlSchema = z
  .string()
  .max(2048)
  .refine((u) => {
    try {
      const p = new URL(u);
      return (p.protocol === 'http:' || p.protocol === 'https:') && p.username === '' && p.password === '';
    } catch {
      return false;
    }
  }, 'an http(s) URL without credentials in it');
const Ms = z.number().int().positive().max(3_600_000);

export const ProviderSchema = z.strictObject({
  api: z.enum(PROVIDER_APIS),
  /** openai-chat and anthropic-messages only (checked after parsing, with its line). */
  baseUrl: HttpUrlSchema.optional(),
  apiKeyEnv: EnvNameSchema.optional(),
  /** api local only: the GGUF file, absolute or relative to $BRIG_HOME. */
  gguf: z.string().min(1).max(4096).optional(),
  /** api local only: the threads generation uses (default 1: measured, docs/models.md). */
  threads: z.number().int().min(1).max(256).optional(),
  /** api local only: what a tools call left on `auto` gets (default `required`). */
  toolChoice: z.enum(LOCAL_TOOL_CHOICES).optional(),
  timeoutMs: Ms.optional(),
  idleTimeoutMs: Ms.optional(),
  maxRetries: z.number().int().min(0).max(10).optional(),
  maxReplyBytes: z.number().int().positive().max(1024 * 1024 * 1024).optional(),
});
export type ProviderConfig = z.infer<typeof ProviderSchema>;

const PerMTok = z.number().nonnegative().max(100_000);
export const PriceConfigSchema = z.strictObject({
  inputPerMTok: PerMTok,
  outputPerMTok: PerMTok,
  cacheReadPerMTok: PerMTok.optional(),
  cacheWritePerMTok: PerMTok.optional(),
});
export type PriceConfig = z.infer<typeof PriceConfigSchema>;

const Tokens = z.number().int().positive().max(100_000_000);
export const AliasSchema = z.strictObject({
  provider: NameSchema,
  model: z.string().min(1).max(256),
  contextWindow: Tokens,
  maxOutputTokens: Tokens,
  price: PriceConfigSchema.optional(),
});
export type AliasConfig = z.infer<typeof AliasSchema>;

export const ModelsSectionSchema = z.strictObject({
  providers: z.record(NameSchema, ProviderSchema).default({}),
  aliases: z.record(NameSchema, AliasSchema).default({}),
  default: NameSchema.optional(),
});
export type ModelsSection = z.infer<typeof ModelsSectionSchema>;

/** config.yaml's egress section: the gate's operator-only settings (BrigConfig.egress; the env wins per key). */
export const EgressConfigSchema = z.strictObject({
  resolvers: z.array(z.string().min(1).max(64)).max(8).optional(),
  testPublicCidrs: z.array(z.string().min(1).max(32)).max(16).optional(),
  searchUrl: z.string().min(1).max(2048).optional(),
  upstreamCaFile: z.string().min(1).max(4096).optional(),
});

/** config.yaml `kubernetes:` (the driver's cluster; BRIG_K8S_* and KUBECONFIG override it). */
export const KubernetesConfigSchema = z.strictObject({
  kubeconfig: z.string().min(1).max(4096).optional(),
  namespace: z.string().regex(/^[a-z0-9]([-a-z0-9]{0,61}[a-z0-9])?$/, 'a namespace name (DNS-1123 label)').optional(),
  image: z.string().min(1).max(512).optional(),
  runtimeClassName: z.string().min(1).max(253).optional(),
  /** The StorageClass whose volumes hold each run's /workspace (its size the lease's disk). */
  workspaceStorageClass: z.string().regex(/^[a-z0-9]([-a-z0-9.]{0,251}[a-z0-9])?$/, 'a StorageClass name').optional(),
  /** Allows an emptyDir workspace instead: past its size the kubelet evicts the pod, its outputs lost. */
  workspaceEmptyDir: z.boolean().optional(),
});

export const ConfigFileSchema = z.strictObject({
  models: ModelsSectionSchema.optional(),
  egress: EgressConfigSchema.optional(),
  /** Where jails run: `docker` (the default) or `kubernetes`. */
  driver: z.enum(['docker', 'kubernetes']).optional(),
  kubernetes: KubernetesConfigSchema.optional(),
  /** Operator hooks (hooks-file.ts); checked in full by parseHooksConfig. */
  hooks: HooksSectionSchema.optional(),
});

/** The valid keys at a path of config.yaml, for "did you mean" hints. */
export function validConfigKeysAt(path: readonly PropertyKey[]): readonly string[] {
  const p = path.map(String);
  if (p.length === 0) return Object.keys(ConfigFileSchema.shape);
  if (p[0] === 'egress') return p.length === 1 ? Object.keys(EgressConfigSchema.shape) : [];
  if (p[0] === 'hooks') return validHookKeysAt(p);
  if (p[0] !== 'models') return [];
  if (p.length === 1) return Object.keys(ModelsSectionSchema.shape);
  if (p[1] === 'providers' && p.length === 3) return Object.keys(ProviderSchema.shape);
  if (p[1] === 'aliases' && p.length === 3) return Object.keys(AliasSchema.shape);
  if (p[1] === 'aliases' && p.length === 4 && p[3] === 'price') return Object.keys(PriceConfigSchema.shape);
  return [];
}

const keyHint = (key: string): string | undefined =>
  /^(api_?key|key|token|secret|password|authorization)$/i.test(key)
    ? 'Keys are never written in config.yaml: put the key in an environment variable of the supervisor and name it with "apiKeyEnv".'
    : undefined;

function configError(source: string, problems: Problem[]): BrigError {
  const first = problems[0]!;
  return new BrigError('invalid_input', first.text, {
    data: { file: source, problems: problems.map((p) => (p.hint ? `${p.text} (${p.hint})` : p.text)) },
    hint: `${first.hint ? `${first.hint} ` : ''}Fix ${source}; docs/models.md describes its models section.`,
  });
}

/** Parses config.yaml's text. An empty file is an empty config. Every refusal is an `invalid_input` value. */
export function parseModelsConfig(text: string, source: string): Result<ModelsSection> {
  const { doc, lc, problems } = parseYaml(text, source);
  if (problems.length > 0) return err(configError(source, problems));
  const parsed = ConfigFileSchema.safeParse(doc.toJS({ maxAliasCount: 50 }) ?? {});
  if (!parsed.success) {
    const issues = [...parsed.error.issues].sort((a, b) => Number(b.code === 'unrecognized_keys') - Number(a.code === 'unrecognized_keys'));
    return err(configError(source, issues.map((i) => describeIssue(i, source, doc, lc, validConfigKeysAt, keyHint))));
  }
  const models = parsed.data.models ?? { providers: {}, aliases: {} };
  const refs: Problem[] = [];
  for (const [name, p] of Object.entries(models.providers)) refs.push(...providerShape(name, p, (key) => at(source, lineOf(doc, lc, ['models', 'providers', name, key]))));
  for (const [name, a] of Object.entries(models.aliases)) {
    if (a.price !== undefined && models.providers[a.provider]?.api === 'local') {
      refs.push({ text: `${at(source, lineOf(doc, lc, ['models', 'aliases', name, 'price']))}: alias "${name}" is a local model, priced 0`, hint: 'Remove its price: brig serves a local model itself.' });
    }
    if (!Object.hasOwn(models.providers, a.provider)) {
      const near = nearest(a.provider, Object.keys(models.providers));
      refs.push({
        text: `${at(source, lineOf(doc, lc, ['models', 'aliases', name, 'provider']))}: alias "${name}" names unknown provider "${a.provider}"`,
        hint: near ? `Did you mean "${near}"?` : `Providers: ${Object.keys(models.providers).join(', ') || 'none (add models.providers)'}.`,
      });
    }
    if (a.maxOutputTokens > a.contextWindow) {
      refs.push({ text: `${at(source, lineOf(doc, lc, ['models', 'aliases', name, 'maxOutputTokens']))}: alias "${name}": maxOutputTokens is over contextWindow` });
    }
  }
  if (models.default !== undefined && !Object.hasOwn(models.aliases, models.default)) {
    const near = nearest(models.default, Object.keys(models.aliases));
    refs.push({
      text: `${at(source, lineOf(doc, lc, ['models', 'default']))}: "models.default" names unknown alias "${models.default}"`,
      hint: near ? `Did you mean "${near}"?` : `Aliases: ${Object.keys(models.aliases).join(', ') || 'none'}.`,
    });
  }
  return refs.length > 0 ? err(configError(source, refs)) : ok(models);
}

const LOCAL_ONLY = ['gguf', 'threads', 'toolChoice'] as const;
const HTTP_ONLY = ['baseUrl', 'apiKeyEnv'] as const;

/** What a provider's api needs and refuses: `local` a gguf and no URL or key; the others a URL and no local settings. */
function providerShape(name: string, p: ProviderConfig, line: (key: string) => string): Problem[] {
  const out: Problem[] = [];
  const local = p.api === 'local';
  const need = local ? 'gguf' : 'baseUrl';
  if (p[need] === undefined) out.push({ text: `${line('api')}: provider "${name}" (api ${p.api}) needs "${need}"`, hint: local ? 'Name the GGUF file (`brig model pull` prints one).' : 'Give the endpoint (docs/models.md).' });
  for (const k of local ? HTTP_ONLY : LOCAL_ONLY) {
    if (p[k] !== undefined) out.push({ text: `${line(k)}: provider "${name}": "${k}" is for ${local ? 'openai-chat and anthropic-messages' : 'api local'} only` });
  }
  return out;
}

/**
 * The env variable names config.yaml's providers give as apiKeyEnv, read leniently (a broken
 * file yields what it can; parseModelsConfig reports the problems): loadConfig reads only these.
 */
export function keyEnvNames(text: string): string[] {
  let js: unknown;
  try {
    js = parseYaml(text, 'config.yaml').doc.toJS({ maxAliasCount: 50 });
  } catch {
    return [];
  }
  const providers = (js as { models?: { providers?: unknown } } | null)?.models?.providers;
  if (!providers || typeof providers !== 'object') return [];
  const names = new Set<string>();
  for (const p of Object.values(providers as Record<string, unknown>)) {
    const n = (p as { apiKeyEnv?: unknown } | null)?.apiKeyEnv;
    if (typeof n === 'string' && EnvNameSchema.safeParse(n).success) names.add(n);
  }
  return [...names];
}

import fs from 'node:fs';
import path from 'node:path';
import { BrigError } from '../util/errors.js';
import { nearest } from '../util/nearest.js';
import YAML from 'yaml';
import { EgressConfigSchema, KubernetesConfigSchema, keyEnvNames, MODEL_APIS } from './models-file.js';
import { homeFrom, runsDirFor, socketPathFor } from './paths.js';
import { homeTag, userBrokersDir } from './runtime-dir.js';

export { homeFrom, runsDirFor, socketPathFor } from './paths.js';
import { Secret } from './secret.js';

export { Secret } from './secret.js';
export { parseModelsConfig, validConfigKeysAt, MODEL_APIS, PROVIDER_APIS, LOCAL_TOOL_CHOICES, ConfigFileSchema, ModelsSectionSchema, ProviderSchema, AliasSchema, PriceConfigSchema } from './models-file.js';
export { parseHooksConfig, webhookTarget, HOOK_TIMEOUT_DEFAULT_MS, HOOK_TIMEOUT_MAX_MS } from './hooks-file.js';
export type { HooksSection, HookConfig } from './hooks-file.js';
export type { ModelsSection, ProviderConfig, AliasConfig, PriceConfig } from './models-file.js';

/** The BRIG_MODEL_* quick path: one endpoint, one model, the alias `default`. */
export interface EnvModel {
  api: (typeof MODEL_APIS)[number];
  baseUrl: string;
  /** BRIG_MODEL_API_KEY; absent for local servers that need none. */
  apiKey: Secret | undefined;
  model: string;
  contextWindow: number;
  /** BRIG_MODEL_MAX_OUTPUT, when set. */
  maxOutputTokens: number | undefined;
  /** USD per million tokens, when BRIG_MODEL_PRICE_IN and _OUT are set. */
  price: { inputPerMTok: number; outputPerMTok: number; cacheReadPerMTok?: number; cacheWritePerMTok?: number } | undefined;
}

/** The BRIG_MODEL_GGUF quick path: a GGUF brig serves itself, the alias `default`. */
export interface EnvLocalModel {
  /** The file, resolved. */
  gguf: string;
  /** BRIG_MODEL, else the file's name without `.gguf`. */
  model: string;
  contextWindow: number;
  maxOutputTokens: number | undefined;
  /** BRIG_MODEL_THREADS, default 1. */
  threads: number;
}

/** `brig model pull`'s record of the home's model ($BRIG_HOME/models/local.json). */
export interface RegisteredModel {
  gguf: string;
  bytes: number;
}

/** What models/ needs to build its catalog; read here because only config/ reads the environment. */
export interface ModelsConfig {
  /** $BRIG_HOME/config.yaml */
  file: string;
  /** That file's text when the config was loaded; null when there is none. */
  fileText: string | null;
  /** Why the file exists but could not be read (an errno code), else undefined. */
  fileError: string | undefined;
  /** The quick path, when BRIG_MODEL_BASE_URL is set and its companions are valid. */
  env: EnvModel | undefined;
  /** The local quick path, when BRIG_MODEL_GGUF is set and its companions are valid. */
  envLocal: EnvLocalModel | undefined;
  /** The model `brig model pull` registered in this home; the default only when nothing else is configured. */
  registered: RegisteredModel | undefined;
  /** Where the local model runtime (node-llama-cpp) is installed: BRIG_LOCAL_RUNTIME, else brig's own `local-model/`. */
  localRuntimeDir: string | undefined;
  /** Problems with the BRIG_MODEL_* values; the catalog refuses to load while there are any. */
  envProblems: string[];
  /** The values of the variables config.yaml names as apiKeyEnv — those only, never the whole environment. */
  keys: Readonly<Record<string, Secret>>;
}

/**
 * Where jails run. `docker` (the default): the engine at DOCKER_HOST. `kubernetes` (issue 33):
 * bare pods in a namespace brig owns, on the cluster the kubeconfig names, in an image its nodes
 * already hold (brig pulls nothing).
 */
export type DriverConfig =
  | { kind: 'docker' }
  | { kind: 'kubernetes'; kubeconfig: string; namespace: string; image: string; runtimeClassName?: string; workspace: { storageClass: string } | { emptyDir: true } };

/**
 * The only reader of process.env in brig. Everything else receives a BrigConfig.
 */
export interface BrigConfig {
  /** Root of all brig state: leases, runs, results, ledger, daemon socket. */
  home: string;
  /** Docker engine address as DOCKER_HOST gives it, or undefined for the default socket. */
  dockerHost: string | undefined;
  /**
   * How /workspace is capped at the lease's diskMb (BRIG_WORKSPACE_QUOTA): `loop`, the default,
   * a per-run ext4 image on a loop device; `none`, the explicit opt-out (no cap, doctor says so).
   */
  workspaceQuota: 'loop' | 'none';
  /** True in CI: a missing engine fails tests instead of skipping them. */
  ci: boolean;
  /** Where jails run (BRIG_DRIVER, config.yaml `driver:`; default docker). */
  driver: DriverConfig;
  /**
   * @deprecated use `loadModelCatalog(cfg)` (models/): this is the quick path only, and only when
   * it speaks openai-chat (apiKey '' for a keyless local server). Absent → Level 3.
   */
  model: { baseUrl: string; apiKey: string; model: string } | undefined;
  /** Model configuration: config.yaml's `models` and the BRIG_MODEL_* quick path. */
  models: ModelsConfig;
  /**
   * The egress gate's operator-only settings: its DNS servers (BRIG_EGRESS_RESOLVERS, `host[:port]`
   * comma-separated; empty: the system's) and, for tests on loopback only, addresses inside
   * 127.0.0.0/8 treated as public (BRIG_EGRESS_TEST_PUBLIC_CIDRS; anything outside is refused);
   * the search endpoint agents' `web_search` calls (BRIG_EGRESS_SEARCH_URL, an http(s) URL with
   * `{query}`; reached from the jail through the gate like any host, so a lease must allow it);
   * extra roots (a PEM file) the gate trusts, beside the system's, when it re-originates an
   * inspected connection (BRIG_EGRESS_UPSTREAM_CA_FILE: a corporate CA, or a test upstream's).
   */
  egress: { resolvers: string[]; testPublicCidrs: string[]; searchUrl?: string; upstreamCaFile?: string };
  /**
   * The values of the variables the home's policy.yaml names as egress credential bindings'
   * secretEnv — those only, never the whole environment; the egress gate alone reveals them.
   */
  egressSecrets?: Readonly<Record<string, Secret>>;
}

/** BRIG_EGRESS_* (see BrigConfig.egress); a test-public range outside 127.0.0.0/8 is refused. */
export function egressConfigFrom(env: NodeJS.ProcessEnv, fileText: string | null = null): BrigConfig['egress'] {
  const list = (v: string | undefined) => (v ?? '').split(',').map((x) => x.trim()).filter((x) => x !== '');
  let file: { resolvers?: string[] | undefined; testPublicCidrs?: string[] | undefined; searchUrl?: string | undefined; upstreamCaFile?: string | undefined } = {};
  if (fileText !== null) {
    // Only the egress section is read here; the models section has its own loader (and errors).
    let doc: unknown;
    try {
      doc = YAML.parse(fileText, { maxAliasCount: 50 });
    } catch {
      doc = undefined;
    }
    const section = doc && typeof doc === 'object' ? (doc as Record<string, unknown>).egress : undefined;
    if (section !== undefined) {
      const parsed = EgressConfigSchema.safeParse(section);
      if (!parsed.success) throw new BrigError('invalid_input', `config.yaml egress: ${parsed.error.issues.map((i) => `${i.path.join('.') || '(section)'}: ${i.message}`).join('; ')}`, { hint: 'egress takes resolvers: [address[:port]], testPublicCidrs: [127.x.y.z/n], searchUrl: https://host/path?q={query} and upstreamCaFile: /abs/path.pem.' });
      file = parsed.data;
    }
  }
  const resolvers = set(env.BRIG_EGRESS_RESOLVERS) ? list(env.BRIG_EGRESS_RESOLVERS) : (file.resolvers ?? []);
  for (const r of resolvers) {
    if (!/^(\d{1,3}(\.\d{1,3}){3}(:\d{1,5})?|\[[0-9a-fA-F:]+\](:\d{1,5})?|[0-9a-fA-F:]+)$/.test(r)) {
      throw new BrigError('invalid_input', `BRIG_EGRESS_RESOLVERS: "${r.slice(0, 60)}" is not an address[:port]`, { hint: 'List DNS servers by address, e.g. 127.0.0.53:5300,10.0.0.2.' });
    }
  }
  const testPublicCidrs = set(env.BRIG_EGRESS_TEST_PUBLIC_CIDRS) ? list(env.BRIG_EGRESS_TEST_PUBLIC_CIDRS) : (file.testPublicCidrs ?? []);
  for (const c of testPublicCidrs) {
    const m = /^127\.(\d{1,3})\.(\d{1,3})\.(\d{1,3})(\/(\d{1,2}))?$/.exec(c);
    if (!m || [m[1], m[2], m[3]].some((x) => Number(x) > 255) || (m[5] !== undefined && (Number(m[5]) < 8 || Number(m[5]) > 32))) {
      throw new BrigError('invalid_input', `BRIG_EGRESS_TEST_PUBLIC_CIDRS: "${c.slice(0, 60)}" is not a range inside 127.0.0.0/8`, { hint: 'This test-only setting treats loopback addresses as public (e.g. 127.0.0.2/31); it never opens anything else.' });
    }
  }
  const searchUrl = set(env.BRIG_EGRESS_SEARCH_URL) ? env.BRIG_EGRESS_SEARCH_URL!.trim() : file.searchUrl;
  if (searchUrl !== undefined && !validSearchUrl(searchUrl)) {
    throw new BrigError('invalid_input', `BRIG_EGRESS_SEARCH_URL: "${searchUrl.slice(0, 80)}" is not an http(s) URL with {query} in it`, { hint: 'e.g. https://search.example/api?q={query}&count={count}: web_search fills {query} (URL-encoded) and {count}.' });
  }
  const upstreamCaFile = set(env.BRIG_EGRESS_UPSTREAM_CA_FILE) ? env.BRIG_EGRESS_UPSTREAM_CA_FILE!.trim() : file.upstreamCaFile;
  if (upstreamCaFile !== undefined && !upstreamCaFile.startsWith('/')) {
    throw new BrigError('invalid_input', `BRIG_EGRESS_UPSTREAM_CA_FILE: "${upstreamCaFile.slice(0, 80)}" is not an absolute path`, { hint: 'Name a PEM file of CA certificates by its absolute path, e.g. /etc/brig/upstream-ca.pem.' });
  }
  return { resolvers, testPublicCidrs, ...(searchUrl !== undefined ? { searchUrl } : {}), ...(upstreamCaFile !== undefined ? { upstreamCaFile } : {}) };
}

/**
 * The secrets the home's policy.yaml binds (egress.credentials.*.secretEnv), read leniently: a
 * broken policy yields what it can (the policy loader reports its problems). Only the named
 * variables are read.
 */
export function egressSecretsFrom(env: NodeJS.ProcessEnv, home: string): Readonly<Record<string, Secret>> {
  let text: string;
  try {
    text = fs.readFileSync(path.join(home, 'policy.yaml'), 'utf8');
  } catch {
    return Object.freeze({});
  }
  if (!text.includes('secretEnv')) return Object.freeze({});
  let doc: unknown;
  try {
    doc = YAML.parse(text, { maxAliasCount: 50 });
  } catch {
    return Object.freeze({});
  }
  const creds = (doc as { egress?: { credentials?: unknown } } | null)?.egress?.credentials;
  const out: Record<string, Secret> = {};
  if (creds && typeof creds === 'object') {
    for (const b of Object.values(creds as Record<string, unknown>)) {
      const name = (b as { secretEnv?: unknown } | null)?.secretEnv;
      if (typeof name !== 'string' || !/^[A-Z_][A-Z0-9_]{0,127}$/.test(name)) continue;
      const v = env[name];
      if (set(v)) out[name] = new Secret(v.trim());
    }
  }
  return Object.freeze(out);
}

/** An absolute http(s) URL with `{query}` after its authority, and no credentials in it (a key goes in a credential binding, never in the jail). */
function validSearchUrl(t: string): boolean {
  if (!t.includes('{query}')) return false;
  try {
    const u = new URL(t.replaceAll('{query}', 'q').replaceAll('{count}', '1'));
    return (u.protocol === 'https:' || u.protocol === 'http:') && u.username === '' && u.password === '' && !u.host.includes('{');
  } catch {
    return false;
  }
}

export function loadConfig(env: NodeJS.ProcessEnv = process.env): BrigConfig {
  const home = homeFrom(env);
  const models = loadModelsConfig(home, env);
  return {
    home,
    dockerHost: env.DOCKER_HOST && env.DOCKER_HOST.length > 0 ? env.DOCKER_HOST : undefined,
    workspaceQuota: workspaceQuotaFrom(env.BRIG_WORKSPACE_QUOTA),
    egress: egressConfigFrom(env, models.fileText),
    egressSecrets: egressSecretsFrom(env, home),
    ci: env.CI === 'true' || env.CI === '1',
    driver: driverConfigFrom(env, models.fileText),
    model: legacyModel(models.env),
    models,
  };
}

/**
 * BRIG_DRIVER (docker | kubernetes), else config.yaml's `driver:`; for kubernetes, the cluster
 * from KUBECONFIG (else config.yaml's `kubernetes.kubeconfig`, else ~/.kube/config), the
 * namespace (BRIG_K8S_NAMESPACE, default `brig`), the image (BRIG_K8S_IMAGE: required), an
 * optional RuntimeClass (BRIG_K8S_RUNTIME_CLASS) and the workspace (required): a StorageClass
 * (BRIG_K8S_WORKSPACE_CLASS, `kubernetes.workspaceStorageClass`) or an emptyDir the operator
 * allows knowing its cost (BRIG_K8S_WORKSPACE_EMPTYDIR=1, `kubernetes.workspaceEmptyDir: true`).
 */
export function driverConfigFrom(env: NodeJS.ProcessEnv, fileText: string | null = null): DriverConfig {
  let file: { driver?: unknown; kubernetes?: unknown } = {};
  if (fileText !== null && /^(driver|kubernetes):/m.test(fileText)) {
    try {
      const doc = YAML.parse(fileText, { maxAliasCount: 50 }) as unknown;
      if (doc && typeof doc === 'object') file = doc as typeof file;
    } catch {
      // the models loader reports a broken file
    }
  }
  const kind = set(env.BRIG_DRIVER) ? env.BRIG_DRIVER.trim() : (file.driver ?? 'docker');
  if (kind === 'docker') return { kind: 'docker' };
  if (kind !== 'kubernetes') {
    throw new BrigError('invalid_input', `BRIG_DRIVER is ${JSON.stringify(String(kind).slice(0, 40))}`, { hint: 'Jails run on `docker` (the default) or `kubernetes` (docs/kubernetes.md).' });
  }
  const parsed = KubernetesConfigSchema.safeParse(file.kubernetes ?? {});
  if (!parsed.success) throw new BrigError('invalid_input', `config.yaml kubernetes: ${parsed.error.issues.map((i) => `${i.path.join('.') || '(section)'}: ${i.message}`).join('; ')}`, { hint: 'kubernetes takes kubeconfig: /abs/path, namespace: brig, image: brig-child:TAG, runtimeClassName: NAME, workspaceStorageClass: NAME and workspaceEmptyDir: true.' });
  const k = parsed.data;
  const kubeconfig = set(env.KUBECONFIG) ? env.KUBECONFIG.split(':')[0]!.trim() : (k.kubeconfig ?? path.join(env.HOME ?? '/root', '.kube', 'config'));
  const namespace = set(env.BRIG_K8S_NAMESPACE) ? env.BRIG_K8S_NAMESPACE.trim() : (k.namespace ?? 'brig');
  if (!/^[a-z0-9]([-a-z0-9]{0,61}[a-z0-9])?$/.test(namespace)) throw new BrigError('invalid_input', `BRIG_K8S_NAMESPACE: "${namespace.slice(0, 70)}" is not a namespace name`, { hint: 'A DNS-1123 label: lowercase letters, digits and dashes, e.g. brig.' });
  const image = set(env.BRIG_K8S_IMAGE) ? env.BRIG_K8S_IMAGE.trim() : k.image;
  if (!image) {
    throw new BrigError('invalid_input', 'the kubernetes driver needs the child image its nodes hold', { hint: "Name it in BRIG_K8S_IMAGE (or config.yaml kubernetes.image): brig pulls nothing, so import `brig image build`'s image into the nodes first (`make k8s-up` does and prints BRIG_K8S_CHILD_IMAGE)." });
  }
  const runtimeClassName = set(env.BRIG_K8S_RUNTIME_CLASS) ? env.BRIG_K8S_RUNTIME_CLASS.trim() : k.runtimeClassName;
  const storageClass = set(env.BRIG_K8S_WORKSPACE_CLASS) ? env.BRIG_K8S_WORKSPACE_CLASS.trim() : k.workspaceStorageClass;
  const emptyDir = set(env.BRIG_K8S_WORKSPACE_EMPTYDIR) ? env.BRIG_K8S_WORKSPACE_EMPTYDIR.trim() : k.workspaceEmptyDir;
  if (emptyDir !== undefined && !['1', 'true', '0', 'false', true, false].includes(emptyDir)) {
    throw new BrigError('invalid_input', `BRIG_K8S_WORKSPACE_EMPTYDIR is ${JSON.stringify(String(emptyDir).slice(0, 20))}`, { hint: 'Set it to 1 to allow an emptyDir workspace, or leave it unset.' });
  }
  if (storageClass !== undefined && !/^[a-z0-9]([-a-z0-9.]{0,251}[a-z0-9])?$/.test(storageClass)) {
    throw new BrigError('invalid_input', `BRIG_K8S_WORKSPACE_CLASS: "${storageClass.slice(0, 70)}" is not a StorageClass name`, { hint: 'A DNS-1123 subdomain: lowercase letters, digits, dashes and dots, e.g. brig-loop.' });
  }
  const workspace = storageClass ? { storageClass } : emptyDir === true || emptyDir === '1' || emptyDir === 'true' ? { emptyDir: true as const } : null;
  if (!workspace) {
    throw new BrigError('invalid_input', "the kubernetes driver needs to know where a run's /workspace lives", {
      hint: 'Name a StorageClass whose volumes are exactly the size asked (BRIG_K8S_WORKSPACE_CLASS, or config.yaml kubernetes.workspaceStorageClass): a write past the lease\'s disk then fails ENOSPC. Or allow an emptyDir (BRIG_K8S_WORKSPACE_EMPTYDIR=1, or kubernetes.workspaceEmptyDir: true), knowing that past its size the kubelet evicts the pod and its outputs are lost. brig\'s test cluster has brig-loop.',
    });
  }
  return { kind: 'kubernetes', kubeconfig: path.resolve(kubeconfig), namespace, image, ...(runtimeClassName ? { runtimeClassName } : {}), workspace };
}

function workspaceQuotaFrom(v: string | undefined): BrigConfig['workspaceQuota'] {
  if (v === undefined || v === '' || v === 'loop') return 'loop';
  if (v === 'none') return 'none';
  throw new BrigError('invalid_input', `BRIG_WORKSPACE_QUOTA is ${JSON.stringify(v.slice(0, 40))}`, {
    hint: 'Use `loop` (the default: each run\'s /workspace is capped at its lease\'s diskMb) or `none` (no disk quota).',
  });
}

/** The deprecated `model` field; its apiKey is not enumerable, so logging the config shows no key. */
function legacyModel(e: EnvModel | undefined): BrigConfig['model'] {
  if (!e || e.api !== 'openai-chat') return undefined;
  const m = { baseUrl: e.baseUrl, model: e.model } as { baseUrl: string; apiKey: string; model: string };
  Object.defineProperty(m, 'apiKey', { value: e.apiKey?.reveal() ?? '', enumerable: false });
  return m;
}

const set = (v: string | undefined): v is string => v !== undefined && v.trim().length > 0;

function loadModelsConfig(home: string, env: NodeJS.ProcessEnv): ModelsConfig {
  const file = path.join(home, 'config.yaml');
  let fileText: string | null = null;
  let fileError: string | undefined;
  try {
    fileText = fs.readFileSync(file, 'utf8');
  } catch (e) {
    const code = (e as NodeJS.ErrnoException).code ?? 'error';
    if (code !== 'ENOENT') fileError = code;
  }
  const keys: Record<string, Secret> = {};
  for (const name of fileText === null ? [] : keyEnvNames(fileText)) {
    const v = env[name];
    if (set(v)) keys[name] = new Secret(v.trim());
  }
  const { value, problems } = envModel(env);
  const local = envLocalModel(env, home);
  return {
    file,
    fileText,
    fileError,
    env: value,
    envLocal: local.value,
    envProblems: [...problems, ...local.problems],
    keys: Object.freeze(keys),
    registered: registeredModel(home),
    localRuntimeDir: set(env.BRIG_LOCAL_RUNTIME) ? path.resolve(env.BRIG_LOCAL_RUNTIME.trim()) : undefined,
  };
}

/** The home's registered model, when its record is readable and names a file; else none. */
function registeredModel(home: string): RegisteredModel | undefined {
  try {
    const r = JSON.parse(fs.readFileSync(path.join(home, 'models', 'local.json'), 'utf8')) as { gguf?: unknown; bytes?: unknown };
    return typeof r.gguf === 'string' && path.isAbsolute(r.gguf) ? { gguf: r.gguf, bytes: typeof r.bytes === 'number' ? r.bytes : 0 } : undefined;
  } catch {
    return undefined;
  }
}

/** Context window of the local quick path when BRIG_MODEL_CONTEXT_WINDOW is unset. */
export const ENV_LOCAL_DEFAULTS = Object.freeze({ contextWindow: 8192, threads: 1 });

function envLocalModel(env: NodeJS.ProcessEnv, home: string): { value: EnvLocalModel | undefined; problems: string[] } {
  const problems: string[] = [];
  const gguf = env.BRIG_MODEL_GGUF;
  if (!set(gguf)) {
    if (set(env.BRIG_MODEL_THREADS)) problems.push('BRIG_MODEL_THREADS set without BRIG_MODEL_GGUF');
    return { value: undefined, problems };
  }
  if (set(env.BRIG_MODEL_BASE_URL)) problems.push('BRIG_MODEL_GGUF and BRIG_MODEL_BASE_URL are both set: one quick-path model at a time');
  const stray = Object.keys(env).filter((k) => /^BRIG_MODEL_(API|API_KEY|PRICE_(IN|OUT|CACHE_READ|CACHE_WRITE))$/.test(k) && set(env[k]));
  if (stray.length > 0) problems.push(`${stray.sort().join(', ')} do not apply to BRIG_MODEL_GGUF (a local model: no endpoint, no key, priced 0)`);
  const int = (name: string, max: number): number | undefined => {
    const v = env[name];
    if (!set(v)) return undefined;
    const n = Number(v);
    if (Number.isInteger(n) && n > 0 && n <= max) return n;
    problems.push(`${name} must be a whole number from 1 to ${max}`);
    return undefined;
  };
  const contextWindow = int('BRIG_MODEL_CONTEXT_WINDOW', 1_048_576) ?? ENV_LOCAL_DEFAULTS.contextWindow;
  const maxOutputTokens = int('BRIG_MODEL_MAX_OUTPUT', 1_048_576);
  if (maxOutputTokens !== undefined && maxOutputTokens > contextWindow) problems.push('BRIG_MODEL_MAX_OUTPUT is over BRIG_MODEL_CONTEXT_WINDOW');
  const threads = int('BRIG_MODEL_THREADS', 256) ?? ENV_LOCAL_DEFAULTS.threads;
  const file = path.resolve(home, gguf.trim());
  const model = set(env.BRIG_MODEL) ? env.BRIG_MODEL.trim() : path.basename(file).replace(/\.gguf$/i, '');
  if (problems.length > 0) return { value: undefined, problems };
  return { value: { gguf: file, model, contextWindow, maxOutputTokens, threads }, problems };
}

export const ENV_MODEL_DEFAULTS = Object.freeze({ api: 'openai-chat' as const, model: 'gpt-4o-mini', contextWindow: 128_000 });

function envModel(env: NodeJS.ProcessEnv): { value: EnvModel | undefined; problems: string[] } {
  const problems: string[] = [];
  const base = env.BRIG_MODEL_BASE_URL;
  if (!set(base)) {
    // With BRIG_MODEL_GGUF, envLocalModel says which of these apply to it.
    const stray = set(env.BRIG_MODEL_GGUF) ? [] : Object.keys(env).filter((k) => /^BRIG_MODEL_(API|MAX_OUTPUT|CONTEXT_WINDOW|PRICE_(IN|OUT|CACHE_READ|CACHE_WRITE))$/.test(k) && set(env[k]));
    if (stray.length > 0) problems.push(`${stray.sort().join(', ')} set without BRIG_MODEL_BASE_URL`);
    return { value: undefined, problems };
  }
  let baseUrl = base.trim();
  try {
    const u = new URL(baseUrl);
    if ((u.protocol !== 'http:' && u.protocol !== 'https:') || u.username || u.password) problems.push('BRIG_MODEL_BASE_URL must be an http(s) URL without credentials in it');
  } catch {
    problems.push('BRIG_MODEL_BASE_URL is not a URL');
    baseUrl = '';
  }
  const apiRaw = set(env.BRIG_MODEL_API) ? env.BRIG_MODEL_API.trim() : ENV_MODEL_DEFAULTS.api;
  const api = (MODEL_APIS as readonly string[]).includes(apiRaw) ? (apiRaw as EnvModel['api']) : undefined;
  if (!api) {
    const near = nearest(apiRaw, MODEL_APIS) ?? (apiRaw.length >= 3 ? MODEL_APIS.find((a) => a.startsWith(apiRaw.toLowerCase())) : undefined);
    problems.push(`BRIG_MODEL_API is "${apiRaw.slice(0, 40)}", not one of ${MODEL_APIS.join(', ')}${near ? ` (did you mean "${near}"?)` : ''}`);
  }
  const model = set(env.BRIG_MODEL) ? env.BRIG_MODEL.trim() : api === 'openai-chat' ? ENV_MODEL_DEFAULTS.model : undefined;
  if (!model) problems.push('BRIG_MODEL (the model id) is required with BRIG_MODEL_API=anthropic-messages');
  const int = (name: string): number | undefined => {
    const v = env[name];
    if (!set(v)) return undefined;
    const n = Number(v);
    if (Number.isInteger(n) && n > 0 && n <= 100_000_000) return n;
    problems.push(`${name} must be a positive whole number of tokens`);
    return undefined;
  };
  const usd = (name: string): number | undefined => {
    const v = env[name];
    if (!set(v)) return undefined;
    const n = Number(v);
    if (Number.isFinite(n) && n >= 0 && n <= 100_000) return n;
    problems.push(`${name} must be USD per million tokens (a number ≥ 0)`);
    return undefined;
  };
  const contextWindow = int('BRIG_MODEL_CONTEXT_WINDOW') ?? ENV_MODEL_DEFAULTS.contextWindow;
  const maxOutputTokens = int('BRIG_MODEL_MAX_OUTPUT');
  if (maxOutputTokens !== undefined && maxOutputTokens > contextWindow) problems.push('BRIG_MODEL_MAX_OUTPUT is over BRIG_MODEL_CONTEXT_WINDOW');
  const pin = usd('BRIG_MODEL_PRICE_IN');
  const pout = usd('BRIG_MODEL_PRICE_OUT');
  const pcr = usd('BRIG_MODEL_PRICE_CACHE_READ');
  const pcw = usd('BRIG_MODEL_PRICE_CACHE_WRITE');
  if ((pin === undefined) !== (pout === undefined) || ((pcr !== undefined || pcw !== undefined) && pin === undefined)) {
    problems.push('a price needs both BRIG_MODEL_PRICE_IN and BRIG_MODEL_PRICE_OUT');
  }
  const price =
    pin !== undefined && pout !== undefined
      ? { inputPerMTok: pin, outputPerMTok: pout, ...(pcr !== undefined ? { cacheReadPerMTok: pcr } : {}), ...(pcw !== undefined ? { cacheWritePerMTok: pcw } : {}) }
      : undefined;
  const key = env.BRIG_MODEL_API_KEY;
  if (problems.length > 0 || !api || !model) return { value: undefined, problems };
  return { value: { api, baseUrl, apiKey: set(key) ? new Secret(key.trim()) : undefined, model, contextWindow, maxOutputTokens, price }, problems };
}

/**
 * Where a home's broker sockets live: a runtime directory, never under the home for root (a
 * bind source under /root is a sensitive host path, CIS Docker §5.5). One directory per home,
 * named from the home's resolved path (as the jails' owner label is), so two homes never
 * share one and a restarted supervisor finds the sockets of the children it reattaches.
 * Root: /var/lib/brig/run/<hash> (not under /run either: a §5.5 checker counts it as sensitive,
 * and every jail would be flagged); another uid: runtime-dir.ts ($XDG_RUNTIME_DIR/brig/<hash> when it is
 * the uid's own 0700 directory, else <home>/run/<hash>, else a recorded random /tmp directory:
 * never a name another local user can take first). Short enough that <dir>/<runId>/broker.sock
 * stays within a unix socket path's 107 bytes.
 */
export function brokersDirFor(home: string, uid: number = process.getuid?.() ?? -1, env: NodeJS.ProcessEnv = process.env): string {
  const h = homeTag(home);
  return uid === 0 ? path.join('/var/lib/brig/run', h) : userBrokersDir(path.resolve(home), h, uid, env);
}

/** Fixed layout under the brig home (the broker sockets under a runtime directory: brokersDirFor). */
export function brigPaths(home: string) {
  let brokers: string | undefined;
  return {
    home,
    leases: path.join(home, 'leases'),
    runs: runsDirFor(home),
    results: path.join(home, 'results'),
    /** Execution graphs' records (graphs/store.ts). */
    graphs: path.join(home, 'graphs'),
    ledger: path.join(home, 'ledger'),
    /** The write-ahead journal of run and result state (util/write-journal.ts): empty after a clean close. */
    journal: path.join(home, 'journal'),
    /** Computed when first asked for: a non-root choice may look at (or make) directories. */
    get brokers(): string {
      return (brokers ??= brokersDirFor(home));
    },
    tmp: path.join(home, 'tmp'),
    socket: socketPathFor(home),
    /** The warm pool's limit shapes, most recently asked first: primed again at the next start. */
    warmShapes: path.join(home, 'warm-shapes.json'),
    /** The child image's plan and file hashes by file identity (jail/docker/image-cache.ts). */
    imageCache: path.join(home, 'image-cache.json'),
    /** The policy file as the last start of this build parsed it (lease/policy-cache.ts). */
    policyCache: path.join(home, 'policy-cache.v8'),
    /** Whether an operator paused admission (runs/admission-pause.ts): kept across restarts. */
    admission: path.join(home, 'admission.json'),
  };
}
export type BrigPaths = ReturnType<typeof brigPaths>;


/**
 * The few Kubernetes API calls the jail driver makes, over undici with the kubeconfig's TLS
 * client certificate: pods in one namespace (create, get, list by label, patch, delete).
 * No client library: `@kubernetes/client-node` 2.x needs Node ≥ 22 (reference
 * kubernetes-here.md), and five verbs over one resource do not need one.
 *
 * Guarantees: every call goes to the kubeconfig's server with its CA (never an unverified TLS
 * connection); an answer that is not 2xx is a BrigError naming the verb, the status and the
 * API server's own message (a Status object's `message`, bounded).
 */
import fs from 'node:fs';
import path from 'node:path';
import { StringDecoder } from 'node:string_decoder';
import { createRequire } from 'node:module';
import type * as Undici from 'undici';
import { parse } from 'yaml';
import { BrigError } from '../../util/errors.js';

const require = createRequire(import.meta.url);

export interface KubeConfig {
  server: string;
  ca?: Buffer;
  cert?: Buffer;
  key?: Buffer;
  token?: string;
  /** The current context's namespace, if it names one. */
  namespace?: string;
}

type Named<T> = { name?: string } & T;

/** The current context of a kubeconfig file: its server, CA, client certificate or token. */
export function readKubeconfig(file: string): KubeConfig {
  let doc: Record<string, unknown>;
  try {
    doc = parse(fs.readFileSync(file, 'utf8')) as Record<string, unknown>;
  } catch (e) {
    throw new BrigError('invalid_input', `the kubeconfig ${file} cannot be read: ${(e as Error).message}`, { hint: 'Point KUBECONFIG at a readable kubeconfig (`make k8s-up` prints one).' });
  }
  const dir = path.dirname(file);
  const list = <T>(k: string) => (Array.isArray(doc[k]) ? (doc[k] as Named<T>[]) : []);
  const current = String(doc['current-context'] ?? '');
  const ctx = list<{ context?: { cluster?: string; user?: string; namespace?: string } }>('contexts').find((c) => c.name === current)?.context ?? {};
  const cluster = (list<{ cluster?: Record<string, string> }>('clusters').find((c) => c.name === ctx.cluster) ?? list<{ cluster?: Record<string, string> }>('clusters')[0])?.cluster ?? {};
  const user = (list<{ user?: Record<string, string> }>('users').find((u) => u.name === ctx.user) ?? list<{ user?: Record<string, string> }>('users')[0])?.user ?? {};
  const bytes = (dataKey: string, fileKey: string, from: Record<string, string>) =>
    from[dataKey] ? Buffer.from(from[dataKey]!, 'base64') : from[fileKey] ? fs.readFileSync(path.resolve(dir, from[fileKey]!)) : undefined;
  if (!cluster.server) throw new BrigError('invalid_input', `the kubeconfig ${file} names no server for context "${current}"`);
  const ca = bytes('certificate-authority-data', 'certificate-authority', cluster);
  const cert = bytes('client-certificate-data', 'client-certificate', user);
  const key = bytes('client-key-data', 'client-key', user);
  return { server: cluster.server.replace(/\/+$/, ''), ...(ca ? { ca } : {}), ...(cert ? { cert } : {}), ...(key ? { key } : {}), ...(user.token ? { token: user.token } : {}), ...(ctx.namespace ? { namespace: ctx.namespace } : {}) };
}

/** The answer, or null where the API server said 404 (not there, or gone already). */
async function orAbsent<T>(p: Promise<T>): Promise<T | null> {
  try {
    return await p;
  } catch (e) {
    if (e instanceof BrigError && (e.data as { status?: number }).status === 404) return null;
    throw e;
  }
}

export class KubeApi {
  readonly #agent: Undici.Agent;
  readonly #undici: typeof Undici;

  constructor(
    readonly config: KubeConfig,
    readonly namespace: string,
  ) {
    this.#undici = require('undici') as typeof Undici;
    this.#agent = new this.#undici.Agent({ connect: { ...(config.ca ? { ca: config.ca } : {}), ...(config.cert ? { cert: config.cert } : {}), ...(config.key ? { key: config.key } : {}) }, connections: 8 });
  }

  #pods(name?: string): string {
    return `/api/v1/namespaces/${encodeURIComponent(this.namespace)}/pods${name ? `/${encodeURIComponent(name)}` : ''}`;
  }

  async #call<T>(verb: string, method: Undici.Dispatcher.HttpMethod, p: string, body?: unknown, contentType = 'application/json'): Promise<T> {
    const res = await this.#undici
      .request(`${this.config.server}${p}`, {
        method,
        dispatcher: this.#agent,
        headers: { accept: 'application/json', ...(body !== undefined ? { 'content-type': contentType } : {}), ...(this.config.token ? { authorization: `Bearer ${this.config.token}` } : {}) },
        ...(body !== undefined ? { body: JSON.stringify(body) } : {}),
        headersTimeout: 30_000,
        bodyTimeout: 30_000,
      })
      .catch((e: unknown) => {
        throw new BrigError('engine_unavailable', `the Kubernetes API at ${this.config.server} did not answer (${verb}): ${(e as Error).message}`, { cause: e });
      });
    const text = await res.body.text();
    if (res.statusCode >= 200 && res.statusCode < 300) return (text ? JSON.parse(text) : {}) as T;
    let message = text.slice(0, 300);
    try {
      message = String((JSON.parse(text) as { message?: unknown }).message ?? message).slice(0, 300);
    } catch {
      // not a Status object: the raw text, bounded
    }
    const code = res.statusCode === 404 ? 'jail_failed' : res.statusCode === 403 || res.statusCode === 422 ? 'jail_unverified' : 'jail_failed';
    throw new BrigError(code, `Kubernetes ${verb}: ${res.statusCode} ${message}`, { data: { status: res.statusCode } });
  }

  /** The https URL of a pod's subresource (`exec`, `attach`) on the kubeconfig's server: what a WebSocket (kube-exec.ts) connects to. */
  podSubresourceUrl(name: string, subresource: 'exec' | 'attach'): string {
    return `${this.config.server}${this.#pods(name)}/${subresource}`;
  }

  /** Creates a pod; `dryRun`: admitted (or refused) by the whole chain, nothing stored. */
  createPod(manifest: unknown, o: { dryRun?: boolean } = {}): Promise<Record<string, unknown>> {
    return this.#call('create pod', 'POST', `${this.#pods()}${o.dryRun ? '?dryRun=All' : ''}`, manifest);
  }

  /** A NetworkPolicy of this namespace, or null when there is none by that name. */
  getNetworkPolicy(name: string): Promise<Record<string, unknown> | null> {
    return orAbsent(this.#call('get networkpolicy', 'GET', `/apis/networking.k8s.io/v1/namespaces/${encodeURIComponent(this.namespace)}/networkpolicies/${encodeURIComponent(name)}`));
  }

  createNetworkPolicy(manifest: unknown): Promise<Record<string, unknown>> {
    return this.#call('create networkpolicy', 'POST', `/apis/networking.k8s.io/v1/namespaces/${encodeURIComponent(this.namespace)}/networkpolicies`, manifest);
  }

  async listNetworkPolicies(): Promise<Record<string, unknown>[]> {
    const r = await this.#call<{ items?: Record<string, unknown>[] }>('list networkpolicies', 'GET', `/apis/networking.k8s.io/v1/namespaces/${encodeURIComponent(this.namespace)}/networkpolicies`);
    return r.items ?? [];
  }

  /** Deletes a NetworkPolicy of this namespace (gone already: fine). */
  async deleteNetworkPolicy(name: string): Promise<void> {
    await orAbsent(this.#call('delete networkpolicy', 'DELETE', `/apis/networking.k8s.io/v1/namespaces/${encodeURIComponent(this.namespace)}/networkpolicies/${encodeURIComponent(name)}`));
  }

  /** Whether this kubeconfig's identity may do it (a SelfSubjectAccessReview: any authenticated user may ask). */
  async canI(a: { verb: string; resource: string; subresource?: string; group?: string; namespace: string }): Promise<boolean> {
    const r = await this.#call<{ status?: { allowed?: boolean } }>('access review', 'POST', '/apis/authorization.k8s.io/v1/selfsubjectaccessreviews', {
      apiVersion: 'authorization.k8s.io/v1',
      kind: 'SelfSubjectAccessReview',
      spec: { resourceAttributes: { verb: a.verb, resource: a.resource, ...(a.group ? { group: a.group } : {}), ...(a.subresource ? { subresource: a.subresource } : {}), ...(a.namespace ? { namespace: a.namespace } : {}) } },
    });
    return r.status?.allowed === true;
  }

  /** A PersistentVolumeClaim of this namespace, or null when there is none (yet). */
  getClaim(name: string): Promise<Record<string, unknown> | null> {
    return orAbsent(this.#call('get persistentvolumeclaim', 'GET', `/api/v1/namespaces/${encodeURIComponent(this.namespace)}/persistentvolumeclaims/${encodeURIComponent(name)}`));
  }

  /** The pod, or null when it is gone. */
  /** How many pod reads this client made (a watch's cache saves them: the tests count). */
  podReads = 0;

  async getPod(name: string): Promise<Record<string, unknown> | null> {
    this.podReads++;
    return orAbsent(this.#call('get pod', 'GET', this.#pods(name)));
  }

  /** Pods by label with the list's resourceVersion: where a watch starts (pod-watch.ts). */
  async listPodsVersioned(labelSelector: string): Promise<{ items: Record<string, unknown>[]; resourceVersion: string }> {
    const r = await this.#call<{ items?: Record<string, unknown>[]; metadata?: { resourceVersion?: string } }>('list pods', 'GET', `${this.#pods()}?labelSelector=${encodeURIComponent(labelSelector)}`);
    return { items: r.items ?? [], resourceVersion: String(r.metadata?.resourceVersion ?? '') };
  }

  /**
   * A watch of pods by label from a resourceVersion: the API server's events, one JSON object a
   * line (`{type, object}`), until the server ends the stream (after `timeoutSeconds`), `signal`
   * aborts it, or the connection fails (thrown). A version too old to watch from comes as an
   * `ERROR` event whose object is a Status with code 410, or as an HTTP 410 (thrown, status 410).
   * A line over 4 MiB is refused, not buffered.
   */
  async *watchPods(labelSelector: string, resourceVersion: string, o: { signal?: AbortSignal; timeoutSeconds?: number } = {}): AsyncGenerator<{ type: string; object: Record<string, unknown> }> {
    const q = `labelSelector=${encodeURIComponent(labelSelector)}&watch=1&allowWatchBookmarks=true&resourceVersion=${encodeURIComponent(resourceVersion)}&timeoutSeconds=${o.timeoutSeconds ?? 300}`;
    const res = await this.#undici
      .request(`${this.config.server}${this.#pods()}?${q}`, {
        dispatcher: this.#agent,
        headers: { accept: 'application/json', ...(this.config.token ? { authorization: `Bearer ${this.config.token}` } : {}) },
        headersTimeout: 30_000,
        bodyTimeout: 0,
        ...(o.signal ? { signal: o.signal } : {}),
      })
      .catch((e: unknown) => {
        throw new BrigError('engine_unavailable', `the Kubernetes API at ${this.config.server} did not answer (watch pods): ${(e as Error).message}`, { cause: e });
      });
    if (res.statusCode !== 200) {
      const text = (await res.body.text()).slice(0, 300);
      throw new BrigError('jail_failed', `Kubernetes watch pods: ${res.statusCode} ${text}`, { data: { status: res.statusCode } });
    }
    // A character split across two chunks is decoded whole (a status message may hold any UTF-8).
    const utf8 = new StringDecoder('utf8');
    let buf = '';
    for await (const chunk of res.body) {
      buf += utf8.write(chunk as Buffer);
      if (buf.length > 4 * 1024 * 1024) throw new BrigError('jail_failed', 'Kubernetes watch pods: an event line over 4 MiB');
      let nl: number;
      while ((nl = buf.indexOf('\n')) >= 0) {
        const line = buf.slice(0, nl).trim();
        buf = buf.slice(nl + 1);
        if (line) yield JSON.parse(line) as { type: string; object: Record<string, unknown> };
      }
    }
  }

  async listPods(labelSelector: string): Promise<Record<string, unknown>[]> {
    const r = await this.#call<{ items?: Record<string, unknown>[] }>('list pods', 'GET', `${this.#pods()}?labelSelector=${encodeURIComponent(labelSelector)}`);
    return r.items ?? [];
  }

  /** The child container's log (bounded by `limitBytes`). */
  async podLog(name: string, container: string, limitBytes = 65536): Promise<string> {
    const res = await this.#undici.request(`${this.config.server}${this.#pods(name)}/log?container=${encodeURIComponent(container)}&limitBytes=${limitBytes}`, {
      dispatcher: this.#agent,
      headers: this.config.token ? { authorization: `Bearer ${this.config.token}` } : {},
    });
    const text = await res.body.text();
    if (res.statusCode !== 200) throw new BrigError('jail_failed', `Kubernetes pod log: ${res.statusCode} ${text.slice(0, 300)}`, { data: { status: res.statusCode } });
    return text;
  }

  /**
   * The last `bytes` of a container's log: the API serves whole lines (`tailLines`), read as a
   * stream and only the tail kept (one long line cannot make it large in memory).
   */
  async podLogTail(name: string, container: string, bytes: number): Promise<{ tail: string; read: number }> {
    const res = await this.#undici.request(`${this.config.server}${this.#pods(name)}/log?container=${encodeURIComponent(container)}&tailLines=${Math.max(100, Math.ceil(bytes / 16))}`, {
      dispatcher: this.#agent,
      headers: this.config.token ? { authorization: `Bearer ${this.config.token}` } : {},
      headersTimeout: 30_000,
      bodyTimeout: 30_000,
    });
    let tail = Buffer.alloc(0);
    let read = 0;
    for await (const chunk of res.body) {
      const b = chunk as Buffer;
      read += b.length;
      tail = Buffer.concat([tail, b]);
      if (tail.length > 2 * bytes) tail = tail.subarray(tail.length - bytes);
    }
    if (res.statusCode !== 200) throw new BrigError('jail_failed', `Kubernetes pod log: ${res.statusCode} ${tail.toString('utf8', 0, 300)}`, { data: { status: res.statusCode } });
    return { tail: tail.subarray(Math.max(0, tail.length - bytes)).toString('utf8'), read };
  }

  /** The API server's version (`/version`): whether it answers, and what it runs. */
  version(): Promise<{ gitVersion: string; platform: string }> {
    return this.#call('version', 'GET', '/version');
  }

  /** A JSON merge patch (`null` removes a field). */
  patchPod(name: string, patch: unknown): Promise<Record<string, unknown>> {
    return this.#call('patch pod', 'PATCH', this.#pods(name), patch, 'application/merge-patch+json');
  }

  /** Deletes the pod (gone already: fine). */
  async deletePod(name: string, graceSeconds = 0): Promise<void> {
    await orAbsent(this.#call('delete pod', 'DELETE', `${this.#pods(name)}?gracePeriodSeconds=${graceSeconds}`));
  }

  async close(): Promise<void> {
    await this.#agent.close();
  }
}

/**
 * The `web` tool group: `web_fetch` (GET or HEAD one URL, readable text for HTML) and
 * `web_search` (the operator's search endpoint). Both are plain HTTP clients inside the jail,
 * through the egress relay (web-client.ts): the supervisor's gate decides every host by the
 * lease's egress rules, so there is no second guard here to keep in sync. Redirects are
 * followed by hand, at most MAX_HOPS, each hop a new request the gate decides again. A body
 * is read up to MAX_BODY_BYTES; what reaches the model is bounded and spilled by the loop like
 * every tool result.
 */
import { htmlToText } from './html-text.js';
import { obj, S, ToolError, type ToolContext, type ToolDef } from './tool.js';
import { webRequest, WebRefusal, type WebResponse } from './web-client.js';

const MAX_HOPS = 5;
const MAX_BODY_BYTES = 4 * 1024 * 1024;
const TIMEOUT_MS = 60_000;
const REDIRECTS = new Set([301, 302, 303, 307, 308]);

function parseUrl(raw: unknown): URL {
  let u: URL;
  try {
    u = new URL(String(raw));
  } catch {
    throw new ToolError(`not an absolute URL: ${String(raw).slice(0, 200)}`);
  }
  if (u.protocol !== 'http:' && u.protocol !== 'https:') throw new ToolError(`only http:// and https:// URLs are fetched, not ${u.protocol}`);
  if (u.username || u.password) throw new ToolError('a URL with credentials in it is not fetched');
  u.hash = '';
  return u;
}

/** GET/HEAD with redirects followed by hand; every hop is its own gated request. */
export async function fetchFollowing(start: URL, method: 'GET' | 'HEAD', ctx: ToolContext, headers: Record<string, string> = {}): Promise<{ res: WebResponse; hops: string[] }> {
  let url = start;
  const hops: string[] = [];
  for (let n = 0; ; n++) {
    let res: WebResponse;
    try {
      res = await webRequest(url, { method, headers, maxBytes: method === 'HEAD' ? 0 : MAX_BODY_BYTES, signal: ctx.signal });
    } catch (e) {
      if (e instanceof WebRefusal) throw new ToolError(`${url.href}: ${e.message}${hops.length ? ` (after redirects: ${[...hops, url.href].join(' → ')})` : ''}`);
      throw e;
    }
    const loc = res.headers.location;
    if (!REDIRECTS.has(res.status) || typeof loc !== 'string') return { res, hops };
    if (n >= MAX_HOPS) throw new ToolError(`more than ${MAX_HOPS} redirects: ${[...hops, url.href].join(' → ')}`);
    hops.push(url.href);
    try {
      url = parseUrl(new URL(loc, url).href);
    } catch (e) {
      throw new ToolError(`${url.href} redirects to ${loc.slice(0, 200)}: ${(e as Error).message}`);
    }
  }
}

function readable(res: WebResponse, raw: boolean): string {
  const type = String(res.headers['content-type'] ?? '').toLowerCase();
  const textual = type === '' || /^text\/|json|xml|javascript|yaml|csv|x-www-form-urlencoded/.test(type);
  if (!textual) return `[${res.body.length} bytes of ${type}: not text, not shown]`;
  const text = res.body.toString('utf8');
  return !raw && /html/.test(type) ? htmlToText(text, res.url) : text;
}

const webFetch: ToolDef = {
  name: 'web_fetch',
  description: "Fetch one http(s) URL (GET or HEAD) through brig's egress gate, which allows only the hosts your lease names; HTML comes back as readable text (raw=true: as is). Redirects are followed and checked per hop.",
  parameters: obj({ url: S.str('the absolute http:// or https:// URL', { minLength: 8, maxLength: 4096 }), method: S.oneOf('GET (default) or HEAD', ['GET', 'HEAD']), raw: S.bool('the body as sent, without turning HTML into text') }, ['url']),
  timeoutMs: () => TIMEOUT_MS,
  async run(a, ctx) {
    const method = a.method === 'HEAD' ? 'HEAD' : 'GET';
    const { res, hops } = await fetchFollowing(parseUrl(a.url), method, ctx);
    const head = [`URL: ${res.url}`, ...(hops.length ? [`Redirected from: ${hops.join(' → ')}`] : []), `Status: ${res.status}`, `Content-Type: ${String(res.headers['content-type'] ?? '(none)')}`];
    if (method === 'HEAD') head.push(`Content-Length: ${String(res.headers['content-length'] ?? '(none)')}`);
    if (res.truncated) head.push(`[the body was cut at ${MAX_BODY_BYTES} bytes]`);
    const body = method === 'HEAD' ? '' : readable(res, a.raw === true);
    return { content: `${head.join('\n')}\n\n${body}`, isError: res.status >= 400 };
  },
};

interface Hit {
  title: string;
  url: string;
  snippet: string;
}

const str = (v: unknown): string => (typeof v === 'string' ? v : '');

/** Results of the common search APIs' JSON shapes (`results`, `web.results`, `items`, `organic_results`, `data`). */
export function searchHits(doc: unknown): Hit[] | null {
  const o = doc && typeof doc === 'object' ? (doc as Record<string, unknown>) : {};
  const web = o.web && typeof o.web === 'object' ? (o.web as Record<string, unknown>) : {};
  const list = [o.results, web.results, o.items, o.organic_results, o.data, doc].find(Array.isArray) as unknown[] | undefined;
  if (!list) return null;
  return list.flatMap((x) => {
    if (!x || typeof x !== 'object') return [];
    const r = x as Record<string, unknown>;
    const url = str(r.url) || str(r.link) || str(r.href);
    return url ? [{ title: str(r.title) || str(r.name), url, snippet: htmlToText(str(r.snippet) || str(r.description) || str(r.content) || str(r.body)) }] : [];
  });
}

function webSearch(template: string | null | undefined): ToolDef {
  return {
    name: 'web_search',
    description: "Search the web through the operator's search endpoint (via brig's egress gate); returns titles, URLs and snippets to read further with web_fetch.",
    parameters: obj({ query: S.str('what to search for', { minLength: 1, maxLength: 500 }), count: S.int('how many results (default 8)', 1, 20) }, ['query']),
    timeoutMs: () => TIMEOUT_MS,
    async run(a, ctx) {
      if (!template) throw new ToolError('no search endpoint is configured (the operator sets egress.searchUrl)');
      const count = typeof a.count === 'number' ? a.count : 8;
      const url = parseUrl(template.replaceAll('{query}', encodeURIComponent(String(a.query))).replaceAll('{count}', String(count)));
      const { res } = await fetchFollowing(url, 'GET', ctx, { accept: 'application/json' });
      if (res.status >= 400) return { content: `the search endpoint answered ${res.status}:\n${readable(res, false).slice(0, 2000)}`, isError: true };
      let hits: Hit[] | null = null;
      try {
        hits = searchHits(JSON.parse(res.body.toString('utf8')));
      } catch {
        hits = null;
      }
      if (!hits) return `[the search endpoint's answer is not a result list; as text:]\n${readable(res, false)}`;
      if (hits.length === 0) return `no results for ${JSON.stringify(String(a.query))}`;
      return hits.slice(0, count).map((h, i) => `${i + 1}. ${h.title || '(no title)'}\n   ${h.url}${h.snippet ? `\n   ${h.snippet.replace(/\s+/g, ' ').slice(0, 500)}` : ''}`).join('\n');
    },
  };
}

/** The web tools (offeredTools leaves web_search out without the packet's search endpoint). */
export function webTools(searchUrl?: string | null): ToolDef[] {
  return [webFetch, webSearch(searchUrl)];
}

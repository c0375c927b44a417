/**
 * ResultRefs as MCP resources: the template brig://runs/{runId}/refs/{refId}, listed for the
 * most recent ended runs (bounded), and read as a bounded head — the first `headBytes` through
 * refs.read, with a line saying how many bytes are left and to use ref_read for them. A
 * resource read can never pull a whole large ref into the client.
 */
import { McpError, type ReadResourceResult, type Resource } from '@modelcontextprotocol/sdk/types.js';
import { ResourceTemplate, type McpServer } from '@modelcontextprotocol/sdk/server/mcp.js';
import type { Brig, ResultRef } from '../index.js';
import { refUri } from './views.js';

/** JSON-RPC error code of the MCP spec for an unknown resource. */
export const RESOURCE_NOT_FOUND = -32002;

export interface ResourceOptions {
  /** How many of the most recent ended runs the list shows the refs of. */
  runs: number;
  /** At most this many resources listed in all. */
  maxListed: number;
  /** A read returns at most this many bytes of the ref. */
  headBytes: number;
}

export const RESOURCE_DEFAULTS: ResourceOptions = Object.freeze({ runs: 20, maxListed: 200, headBytes: 32 * 1024 });

const MIME: Record<ResultRef['kind'], string> = {
  json: 'application/json',
  jsonl: 'application/x-ndjson',
  csv: 'text/csv',
  text: 'text/plain',
  binary: 'application/octet-stream',
};

export function refResource(r: ResultRef): Resource {
  return {
    uri: refUri(r.runId, r.ref),
    name: `${r.runId}/${r.path}`,
    title: `${r.path} of run ${r.runId}`,
    description: `${r.kind}, ${r.bytes} bytes, ${r.lines} lines${r.rows !== undefined ? `, ${r.rows} rows` : ''} (ref ${r.ref}; slice it with ref_read / ref_grep / ref_sql)`,
    mimeType: MIME[r.kind],
    size: r.bytes,
  };
}

/** The refs of the most recent ended runs, newest run first, at most maxListed. */
export async function listRefResources(brig: Brig, o: ResourceOptions): Promise<Resource[]> {
  const ended = (await brig.list({ status: ['ended'] })).sort((a, b) => (b.endedAt ?? b.createdAt).localeCompare(a.endedAt ?? a.createdAt)).slice(0, o.runs);
  const out: Resource[] = [];
  for (const run of ended) {
    const refs = await brig.refs.list(run.id);
    if (!refs.ok) continue;
    for (const r of refs.value) {
      if (out.length >= o.maxListed) return out;
      out.push(refResource(r));
    }
  }
  return out;
}

/** The cut note a read ends with: how much is left and how to get it. */
export const moreNote = (more: number, ref: string, offset: number): string => `\n… ${more.toLocaleString('en-US')} more bytes; use ref_read with ref ${ref} and offset ${offset} for them.`;

export async function readRefResource(brig: Brig, uri: URL, runId: string, refId: string, headBytes: number): Promise<ReadResourceResult> {
  const refs = await brig.refs.list(runId);
  if (!refs.ok) throw new McpError(RESOURCE_NOT_FOUND, refs.error.message, refs.error.toJSON());
  const ref = refs.value.find((r) => r.ref === refId);
  if (!ref) throw new McpError(RESOURCE_NOT_FOUND, `run ${runId} has no ref ${refId}`, { code: 'ref_not_found', hint: 'Call ref_list with the run id to see its refs.' });
  const res = await brig.refs.read(ref.ref, { offset: 0, length: headBytes });
  if (!res.ok) throw new McpError(RESOURCE_NOT_FOUND, res.error.message, res.error.toJSON());
  const s = res.value;
  const meta = { ref: ref.ref, returned: s.returned, more: s.more };
  if (s.encoding === 'base64') return { contents: [{ uri: uri.href, mimeType: MIME[ref.kind], blob: s.text ?? '', _meta: meta }] };
  const text = `${s.text ?? ''}${s.more > 0 ? moreNote(s.more, ref.ref, s.returned) : ''}`;
  return { contents: [{ uri: uri.href, mimeType: MIME[ref.kind], text, _meta: meta }] };
}

export function registerRefResources(server: McpServer, brig: Brig, o: ResourceOptions): void {
  const template = new ResourceTemplate('brig://runs/{runId}/refs/{refId}', { list: async () => ({ resources: await listRefResources(brig, o) }) });
  server.registerResource(
    'result-ref',
    template,
    { title: 'A ResultRef of a run', description: 'The head of one ResultRef (its first bytes); slice the rest with the ref_* tools.' },
    async (uri, vars) => {
      const one = (v: string | string[] | undefined) => decodeURIComponent(Array.isArray(v) ? (v[0] ?? '') : (v ?? ''));
      return readRefResource(brig, uri, one(vars.runId), one(vars.refId), o.headBytes);
    },
  );
}

/**
 * The file tools: read, write, edit, list and grep inside /workspace (read-write) and
 * /artifacts (read-only), every path through `confine`. Plain `fs`; no shell.
 */
import fs from 'node:fs';
import path from 'node:path';
import { confine, type Roots } from '../confine.js';
import { grepInWorker } from './grep-worker.js';
import { obj, S, ToolError, type ToolContext, type ToolDef } from './tool.js';
import { walk } from './walk.js';

const MAX_READ_BYTES = 16 * 1024 * 1024;
const MAX_GREP_FILE_BYTES = 4 * 1024 * 1024;
const MAX_GREP_FILES = 20_000;
const MAX_LIST_ENTRIES = 500;
const FS_TIMEOUT_MS = 30_000;

function resolve(p: unknown, ctx: ToolContext, mode: 'read' | 'write'): string {
  const c = confine(typeof p === 'string' ? p : '', ctx.roots, mode);
  if (!c.ok) throw new ToolError(c.reason);
  return c.path;
}

/** How a path is shown to the model: relative inside the workspace, absolute elsewhere. */
function shown(p: string, roots: Roots): string {
  let ws = roots.workspace;
  try {
    ws = fs.realpathSync(ws);
  } catch {
    // keep as given
  }
  const rel = path.relative(ws, p);
  return rel && !rel.startsWith('..') && !path.isAbsolute(rel) ? rel : rel === '' ? '.' : p;
}

function readText(file: string): string {
  const st = fs.statSync(file);
  if (st.isDirectory()) throw new ToolError('that is a directory: use list_files');
  if (st.size > MAX_READ_BYTES) throw new ToolError(`the file is ${st.size} bytes, over ${MAX_READ_BYTES}: use grep_files, or shell (sed -n, head)`);
  const buf = fs.readFileSync(file);
  if (buf.subarray(0, 8192).includes(0)) throw new ToolError(`binary file (${buf.length} bytes): use shell to inspect it`);
  return buf.toString('utf8');
}

const readFile: ToolDef = {
  name: 'read_file',
  description: 'Read lines of a text file in /workspace or /artifacts (offset is the first line, 1-based).',
  parameters: obj(
    { path: S.str('file path, relative to /workspace or absolute'), offset: S.int('first line to read (default 1)', 1, 1e9), limit: S.int('lines to read (default 2000)', 1, 10_000) },
    ['path'],
  ),
  timeoutMs: () => FS_TIMEOUT_MS,
  async run(a, ctx) {
    const file = resolve(a.path, ctx, 'read');
    const lines = readText(file).split('\n');
    if (lines.length > 1 && lines[lines.length - 1] === '') lines.pop();
    const from = typeof a.offset === 'number' ? a.offset : 1;
    const limit = typeof a.limit === 'number' ? a.limit : 2000;
    if (from > lines.length) return `[${shown(file, ctx.roots)}: ${lines.length} lines; offset ${from} is past the end]`;
    const room = ctx.maxChars - 300;
    const out: string[] = [];
    let used = 0;
    let i = from - 1;
    for (; i < Math.min(lines.length, from - 1 + limit); i++) {
      let line = lines[i]!;
      if (line.length > room) line = `${line.slice(0, room - 100)}… [line cut: ${line.length} chars; grep_files or shell show the rest]`;
      if (used + line.length + 1 > room && out.length > 0) break;
      out.push(line);
      used += line.length + 1;
    }
    const more = i < lines.length ? `\n[more: ${lines.length - i} line${lines.length - i === 1 ? '' : 's'} left; continue with offset=${i + 1}]` : '';
    return `[${shown(file, ctx.roots)}: lines ${from}-${i} of ${lines.length}]\n${out.join('\n')}${more}`;
  },
};

const writeFile: ToolDef = {
  name: 'write_file',
  description: 'Create or overwrite a file under /workspace (parent directories are created).',
  parameters: obj({ path: S.str('file path, relative to /workspace or absolute'), content: S.str('the whole new content') }, ['path', 'content']),
  timeoutMs: () => FS_TIMEOUT_MS,
  async run(a, ctx) {
    const file = resolve(a.path, ctx, 'write');
    if (fs.existsSync(file) && fs.statSync(file).isDirectory()) throw new ToolError('that is a directory');
    fs.mkdirSync(path.dirname(file), { recursive: true });
    const content = String(a.content);
    fs.writeFileSync(file, content);
    return `wrote ${Buffer.byteLength(content)} bytes to ${shown(file, ctx.roots)}`;
  },
};

function count(hay: string, needle: string): number {
  let n = 0;
  for (let i = hay.indexOf(needle); i !== -1; i = hay.indexOf(needle, i + needle.length)) n++;
  return n;
}

const editFile: ToolDef = {
  name: 'edit_file',
  description: 'Replace an exact, unique piece of text in a file under /workspace (replaceAll for every occurrence).',
  parameters: obj(
    {
      path: S.str('file path, relative to /workspace or absolute'),
      old: S.str('the exact text to replace', { minLength: 1 }),
      new: S.str('the replacement text'),
      replaceAll: S.bool('replace every occurrence (default: old must occur exactly once)'),
    },
    ['path', 'old', 'new'],
  ),
  timeoutMs: () => FS_TIMEOUT_MS,
  async run(a, ctx) {
    const file = resolve(a.path, ctx, 'write');
    const text = readText(file);
    const old = String(a.old);
    const n = count(text, old);
    if (n === 0) throw new ToolError('old text not found (it must match exactly, whitespace included): read_file the part first');
    if (n > 1 && a.replaceAll !== true) throw new ToolError(`old text occurs ${n} times: include more context to make it unique, or set replaceAll`);
    fs.writeFileSync(file, text.split(old).join(String(a.new)));
    return `replaced ${n} occurrence${n === 1 ? '' : 's'} in ${shown(file, ctx.roots)}`;
  },
};

/** The runtime's own directory is nobody's business in a listing (spills are named in results). */
const skipPrivate = (start: string, roots: Roots) => (rel: string) => shown(path.join(start, rel), roots) === '.brig';

const listFiles: ToolDef = {
  name: 'list_files',
  description: 'List a directory tree in /workspace or /artifacts (files with sizes; symlinks shown, not followed).',
  parameters: obj({ path: S.str('directory (default /workspace)'), depth: S.int('levels to descend (default 2)', 1, 6) }),
  timeoutMs: () => FS_TIMEOUT_MS,
  async run(a, ctx) {
    const dir = resolve(typeof a.path === 'string' ? a.path : '.', ctx, 'read');
    if (!fs.statSync(dir).isDirectory()) throw new ToolError('not a directory: use read_file');
    const { entries, truncated } = walk(dir, { maxDepth: typeof a.depth === 'number' ? a.depth : 2, maxEntries: MAX_LIST_ENTRIES, skip: skipPrivate(dir, ctx.roots) });
    const lines = entries.map((e) => {
      const pad = '  '.repeat(e.depth - 1);
      const name = e.rel.slice(e.rel.lastIndexOf('/') + 1);
      if (e.type === 'dir') return `${pad}${name}/`;
      if (e.type === 'link') {
        let to = '?';
        try {
          to = fs.readlinkSync(e.path);
        } catch {
          // unreadable link
        }
        return `${pad}${name} -> ${to}`;
      }
      return `${pad}${name} (${e.size} B)`;
    });
    const head = `[${shown(dir, ctx.roots)}: ${entries.length} entries${truncated ? `, cut at ${MAX_LIST_ENTRIES}: list a subdirectory` : ''}]`;
    return [head, ...lines].join('\n');
  },
};

const grepFiles: ToolDef = {
  name: 'grep_files',
  description: 'Search files under a directory in /workspace or /artifacts for a JavaScript regular expression; prints path:line: text.',
  parameters: obj(
    { pattern: S.str('JavaScript regular expression', { minLength: 1, maxLength: 1000 }), path: S.str('file or directory (default /workspace)'), maxMatches: S.int('most matches to return (default 100)', 1, 1000) },
    ['pattern'],
  ),
  timeoutMs: () => FS_TIMEOUT_MS,
  async run(a, ctx) {
    const pattern = String(a.pattern);
    try {
      new RegExp(pattern);
    } catch (e) {
      throw new ToolError(`bad pattern: ${(e as Error).message}`);
    }
    const start = resolve(typeof a.path === 'string' ? a.path : '.', ctx, 'read');
    const files = fs.statSync(start).isDirectory()
      ? walk(start, { maxDepth: 64, maxEntries: MAX_GREP_FILES, skip: skipPrivate(start, ctx.roots) }).entries.filter((e) => e.type === 'file' && e.size <= MAX_GREP_FILE_BYTES).map((e) => e.path)
      : [start];
    const maxMatches = typeof a.maxMatches === 'number' ? a.maxMatches : 100;
    const r = await grepInWorker({ pattern, flags: '', files, maxMatches, maxLineChars: 300 }, ctx.signal);
    const lines = r.hits.map(([f, n, t]) => `${shown(f, ctx.roots)}:${n}: ${t}`);
    const notes = [`${r.hits.length} match${r.hits.length === 1 ? '' : 'es'} in ${files.length} file${files.length === 1 ? '' : 's'}`];
    if (r.truncated) notes.push(`stopped at maxMatches=${maxMatches}`);
    if (r.binary) notes.push(`${r.binary} binary skipped`);
    return [`[${notes.join('; ')}]`, ...lines].join('\n');
  },
};

export const FS_TOOLS: ToolDef[] = [readFile, writeFile, editFile, listFiles, grepFiles];

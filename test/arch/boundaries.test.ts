/**
 * Architecture pins: import quarantine, layer direction, no folder cycles, process.env
 * read only in config/, and every invariant of docs/architecture.md cited by at least one test.
 */
import { test } from 'node:test';
import assert from 'node:assert/strict';
import fs from 'node:fs';
import path from 'node:path';

const ROOT = path.resolve(import.meta.dirname, '../..');
const SRC = path.join(ROOT, 'src');

function walk(dir: string, ext = '.ts'): string[] {
  if (!fs.existsSync(dir)) return [];
  return fs.readdirSync(dir, { withFileTypes: true }).flatMap((e) => {
    const p = path.join(dir, e.name);
    if (e.isDirectory()) return walk(p, ext);
    return e.name.endsWith(ext) ? [p] : [];
  });
}

/** Static and dynamic imports, and `require('…')` (a package loaded on first use: models/undici.ts). */
const IMPORT_RE = /(?:^|\n)\s*(?:import|export)\s[^'"]*?from\s*['"]([^'"]+)['"]|import\(\s*['"]([^'"]+)['"]\s*\)|(?:^|\n)\s*import\s*['"]([^'"]+)['"]|\brequire\(\s*['"]([^'"]+)['"]\s*\)/g;

function importsOf(file: string): string[] {
  const text = fs.readFileSync(file, 'utf8');
  const out: string[] = [];
  for (const m of text.matchAll(IMPORT_RE)) out.push((m[1] ?? m[2] ?? m[3] ?? m[4])!);
  return out;
}

/** The top folder under src/ (`jail`, `runs`, …), or `.` for src/index.ts. */
function part(file: string): string {
  const rel = path.relative(SRC, file).split(path.sep);
  return rel.length > 1 ? rel[0]! : '.';
}

const files = walk(SRC);

test('dangerous imports are quarantined', () => {
  const rules: { pkg: RegExp; allowed: (rel: string) => boolean; why: string }[] = [
    { pkg: /^(dockerode|tar-stream)$/, allowed: (r) => r.startsWith('jail/docker/'), why: 'only jail/docker/ talks to the engine' },
    { pkg: /^@duckdb\//, allowed: (r) => r.startsWith('slice/'), why: 'only the DuckDB helper in slice/ loads DuckDB' },
    { pkg: /^(node-llama-cpp|@node-llama-cpp\/)/, allowed: (r) => r === 'models/local/llama-engine.ts', why: 'only the local model helper loads node-llama-cpp' },
  ];
  const bad: string[] = [];
  for (const f of files) {
    const rel = path.relative(SRC, f);
    for (const imp of importsOf(f)) {
      for (const r of rules) if (r.pkg.test(imp) && !r.allowed(rel)) bad.push(`${rel} imports ${imp}: ${r.why}`);
    }
  }
  assert.deepEqual(bad, []);
  // node-llama-cpp is not one of brig's packages: it is resolved by path from its own folder.
  const loaders = files.filter((f) => /\.resolve\(\s*['"]node-llama-cpp['"]/.test(fs.readFileSync(f, 'utf8'))).map((f) => path.relative(SRC, f));
  assert.deepEqual(loaders, ['models/local/llama-engine.ts']);
});

test('protocol/ (the vocabulary leaf) imports nothing: no package, no built-in, no other part', () => {
  const bad: string[] = [];
  for (const f of walk(path.join(SRC, 'protocol'))) {
    for (const imp of importsOf(f)) {
      if (imp.startsWith('.') && path.resolve(path.dirname(f), imp).startsWith(path.join(SRC, 'protocol'))) continue;
      bad.push(`${path.relative(SRC, f)} imports ${imp}`);
    }
  }
  assert.deepEqual(bad, []);
});

/** `import type … from '…'` / `export type … from '…'` statements: erased at build, nothing is loaded. */
const TYPE_ONLY_RE = /(?:^|\n)\s*(?:import|export)\s+type\s[^'"]*?from\s*['"]([^'"]+)['"]/g;

test('child/ (runs inside the jail) imports Node built-ins, child/, and protocol/ types only', () => {
  // The jail holds /opt/brig/child and nothing else of brig: protocol/'s words come in as
  // types (erased at build), never as a module the runtime would have to load.
  const bad: string[] = [];
  for (const f of walk(path.join(SRC, 'child'))) {
    const text = fs.readFileSync(f, 'utf8');
    const typeOnly = new Set([...text.matchAll(TYPE_ONLY_RE)].map((m) => m[1]!));
    for (const imp of importsOf(f)) {
      if (imp.startsWith('node:')) continue;
      const target = imp.startsWith('.') ? path.resolve(path.dirname(f), imp) : '';
      if (target.startsWith(path.join(SRC, 'child'))) continue;
      if (target.startsWith(path.join(SRC, 'protocol')) && typeOnly.has(imp)) continue;
      bad.push(`${path.relative(SRC, f)} imports ${imp}`);
    }
  }
  assert.deepEqual(bad, []);
});

test('only config/ reads process.env (the CLI entries, cli/main.ts and cli/bin.ts, hand it to the CLI once; the in-jail agent runtime\'s entry hands its own to a pre-started runtime, which replaces it with its run\'s)', () => {
  const bad = files
    // A program written as a String.raw template runs elsewhere (a probe pod, a jail): its env is not this process's.
    .filter((f) => /process\.env\b/.test(fs.readFileSync(f, 'utf8').replace(/String\.raw`[^`]*`/g, '')))
    .map((f) => path.relative(SRC, f))
    .filter((r) => !r.startsWith('config/') && r !== 'cli/main.ts' && r !== 'cli/bin.ts' && r !== 'child/agent-runtime.ts');
  assert.deepEqual(bad, []);
});

/** What each part may import (besides protocol/, util/ and config/, the ground every part stands on). */
const MAY_IMPORT: Record<string, string[]> = {
  protocol: [],
  util: [],
  config: [],
  lease: [],
  ledger: [],
  models: [],
  child: [],
  client: [],
  console: [],
  repo: [],
  // jail/k8s's host relay speaks the pod relay's wire: the one copy in child/ (built-ins only), through child/index.ts.
  jail: ['lease', 'child'],
  egress: ['lease', 'ledger'],
  agents: ['lease'],
  results: ['lease', 'models', 'ledger'],
  slice: ['results'],
  broker: ['lease', 'slice', 'ledger', 'results'],
  refs: ['results', 'slice', 'ledger', 'broker', 'models'],
  runs: ['lease', 'ledger', 'jail', 'results', 'slice', 'broker', 'models', 'agents', 'egress', 'repo'],
  // graphs/ reaches the supervisor only through protocol's Supervisor role (ports), never runs/.
  graphs: [],
  api: ['runs'],
  daemon: ['lease', 'ledger', 'egress', 'jail', 'results', 'slice', 'broker', 'models', 'runs', 'api', 'agents', 'refs', 'client', 'console', 'graphs', 'repo'],
  // The library entries (src/index.ts, light.ts, open-brig.ts): curated exports of the parts.
  '.': ['runs', 'egress', 'daemon', 'api', 'lease', 'ledger', 'results', 'slice', 'jail', 'models', 'broker', 'agents', 'client', 'refs', 'graphs', 'repo'],
  // The faces: the library entries only. `brig mcp` is a CLI command hosting the MCP face.
  cli: ['.', 'mcp'],
  mcp: ['.'],
};

test('parts import only downward (the parts table of docs/architecture.md) and form no cycle', () => {
  const bad: string[] = [];
  const edges = new Map<string, Set<string>>();
  for (const f of files) {
    const from = part(f);
    for (const imp of importsOf(f)) {
      if (!imp.startsWith('.')) continue;
      const target = path.resolve(path.dirname(f), imp);
      if (!target.startsWith(SRC)) continue;
      const to = part(target);
      if (to === from || to === 'util' || to === 'config' || to === 'protocol') continue;
      // `import type` from a lower part's types is still a dependency: keep the rule simple.
      const allowed = MAY_IMPORT[from];
      if (!allowed) bad.push(`src/${from}/ is not in the parts table`);
      else if (!allowed.includes(to)) bad.push(`${path.relative(SRC, f)} → ${to}/ (allowed: ${allowed.join(', ') || 'util, config'})`);
      if (!edges.has(from)) edges.set(from, new Set());
      edges.get(from)!.add(to);
    }
  }
  assert.deepEqual([...new Set(bad)], []);
  // A cycle between parts would show as a path back to the start.
  const seen = new Set<string>();
  const stack = new Set<string>();
  const cycle: string[] = [];
  const visit = (n: string): boolean => {
    if (stack.has(n)) {
      cycle.push(n);
      return true;
    }
    if (seen.has(n)) return false;
    seen.add(n);
    stack.add(n);
    for (const m of edges.get(n) ?? []) if (visit(m)) {
      cycle.push(n);
      return true;
    }
    stack.delete(n);
    return false;
  };
  for (const n of edges.keys()) if (visit(n)) break;
  assert.deepEqual(cycle, [], `cycle between parts: ${cycle.reverse().join(' → ')}`);
});

test('every import into another part goes through its index.ts (util/ and config/ are a toolbox named file by file)', () => {
  const bad: string[] = [];
  for (const f of files) {
    for (const imp of importsOf(f)) {
      if (!imp.startsWith('.')) continue;
      const target = path.resolve(path.dirname(f), imp);
      if (!target.startsWith(SRC)) continue;
      const to = part(target);
      if (to === part(f) || to === 'util' || to === 'config') continue;
      const rel = path.relative(SRC, target);
      // A part's surface is its index.ts; the root's files are the library entries themselves.
      if (to === '.' ? ['index.js', 'light.js', 'open-brig.js'].includes(rel) : rel === `${to}/index.js`) continue;
      bad.push(`${path.relative(SRC, f)} imports ${rel}`);
    }
  }
  assert.deepEqual(bad, []);
});

test('no import cycle between files anywhere under src/ (type imports and lazy imports included)', () => {
  // A type-only cycle is still two modules that cannot be understood apart: the old
  // supervisor ↔ launch/control/child-calls circle was one, and passed the per-part check.
  const resolveFile = (from: string, imp: string): string | undefined => {
    const base = path.resolve(path.dirname(from), imp);
    for (const c of [base.replace(/\.js$/, '.ts'), `${base}.ts`, path.join(base, 'index.ts')]) if (fs.existsSync(c)) return c;
    return undefined;
  };
  // Lazy `import()`s count too: a loop through one is still two modules that cannot be
  // understood apart (the CLI's registry ↔ help/completion loop was one).
  const edges = new Map<string, string[]>();
  for (const f of files) {
    edges.set(f, importsOf(f).filter((i) => i.startsWith('.')).map((i) => resolveFile(f, i)).filter((x): x is string => x !== undefined && x.startsWith(SRC)));
  }
  const state = new Map<string, 'open' | 'done'>();
  const path_: string[] = [];
  let found: string[] = [];
  const visit = (n: string): boolean => {
    if (state.get(n) === 'done') return false;
    if (state.get(n) === 'open') {
      found = [...path_.slice(path_.indexOf(n)), n];
      return true;
    }
    state.set(n, 'open');
    path_.push(n);
    for (const m of edges.get(n) ?? []) if (visit(m)) return true;
    path_.pop();
    state.set(n, 'done');
    return false;
  };
  for (const f of files) if (visit(f)) break;
  assert.deepEqual(found.map((f) => path.relative(SRC, f)), [], 'an import cycle');
});

test('every invariant docs/architecture.md lists is cited by a test', () => {
  const listed = fs.readFileSync(path.join(ROOT, 'docs', 'architecture.md'), 'utf8').match(/^- \*\*INV-\d+ — /gm) ?? [];
  const ids = listed.map((l) => /INV-\d+/.exec(l)![0]);
  assert.deepEqual(ids, Array.from({ length: 9 }, (_, i) => `INV-${i + 1}`), 'docs/architecture.md lists INV-1 … INV-9 in order');
  const testText = walk(path.join(ROOT, 'test'))
    .filter((f) => !f.includes(`${path.sep}arch${path.sep}`))
    .map((f) => fs.readFileSync(f, 'utf8'))
    .join('\n');
  const uncited = ids.filter((id) => !new RegExp(`\\[${id}\\]`).test(testText));
  assert.deepEqual(uncited, [], `invariants with no test citing them as [INV-n]: ${uncited.join(', ')}`);
});

test('the library entry exports named things only (no export *)', () => {
  const text = fs.readFileSync(path.join(SRC, 'index.ts'), 'utf8');
  assert.doesNotMatch(text, /export\s+\*/);
});

test('test twins live under test/helpers/: src/ imports nothing from test/ and declares no twin', () => {
  const outside = files.flatMap((f) => importsOf(f).filter((i) => i.startsWith('.') && !path.resolve(path.dirname(f), i).startsWith(SRC)).map((i) => `${path.relative(SRC, f)} imports ${i}`));
  assert.deepEqual(outside, [], 'src/ imports from outside src/');
  const twins = walk(path.join(ROOT, 'test/helpers/fakes')).flatMap((f) => [...fs.readFileSync(f, 'utf8').matchAll(/^export class (\w+)/gm)].map((m) => m[1]!));
  assert.ok(twins.includes('MemoryLedger') && twins.includes('BrokerTestClient'), `twins found: ${twins.join(', ')}`);
  const declared = files.flatMap((f) => twins.filter((t) => new RegExp(`\\b(class|function|const) ${t}\\b`).test(fs.readFileSync(f, 'utf8'))).map((t) => `${path.relative(SRC, f)}: ${t}`));
  assert.deepEqual(declared, [], 'a test twin declared under src/ (the library would ship it)');
});

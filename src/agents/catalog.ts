/**
 * Where agent specs come from: $BRIG_HOME/agents/*.md first (the operator's), then the
 * package's agents/ (shipped, `general` among them). A name found in the home shadows the
 * shipped one. Every file is validated when the catalog is first asked (not when it is made: a
 * supervisor that runs no agent reads none); a broken spec is reported with its file and line,
 * never half-used.
 */
import fs from 'node:fs';
import path from 'node:path';
import { BrigError, err, ok, type Result } from '../util/errors.js';
import { nearest } from '../util/nearest.js';
import { parseAgentSpec, type AgentSpec } from './spec.js';

export const DEFAULT_AGENT = 'general';

/** The package's agents/ directory, found by walking up from this module to package.json. */
export function shippedAgentsDir(from: string = path.dirname(new URL(import.meta.url).pathname)): string {
  for (let dir = from; ; ) {
    if (fs.existsSync(path.join(dir, 'package.json'))) return path.join(dir, 'agents');
    const up = path.dirname(dir);
    if (up === dir) throw new BrigError('internal', 'cannot find the brig package root (package.json) to locate agents/');
    dir = up;
  }
}

export interface AgentCatalog {
  get(name: string): Result<AgentSpec>;
  list(): AgentSpec[];
  /** Files that did not validate: name → the error (shown by `brig agents list`). */
  broken(): { file: string; error: BrigError }[];
}

export function loadAgentCatalog(dirs: readonly string[]): AgentCatalog {
  // Read at the first question, not at the load: a supervisor that runs no agent (a one-shot
  // `brig spawn -- cmd`) parses no spec (~6 ms of YAML, issue 34).
  let state: ReturnType<typeof scan> | undefined;
  const now = () => (state ??= scan(dirs));
  return {
    get(name) {
      let { specs, broken } = now();
      // A spec added (or fixed) since the load is seen without a restart: a miss reads again.
      if (!specs.has(name)) ({ specs, broken } = state = scan(dirs));
      const s = specs.get(name);
      if (s) return ok(s);
      const bad = broken.find((b) => path.basename(b.file, '.md') === name);
      if (bad) return err(bad.error);
      const known = [...specs.keys()].sort();
      const near = nearest(name, known);
      // Refused before any run exists: the caller learns which name was unknown and which there are.
      return err(new BrigError('invalid_input', `no agent spec "${name.slice(0, 64)}"`, {
        data: { field: 'agent', agent: name.slice(0, 64), known },
        hint: `${near ? `Did you mean "${near}"? ` : ''}Known: ${known.join(', ') || '(none)'} (\`brig agents list\`; a new $BRIG_HOME/agents/NAME.md is read at the next spawn naming it).`,
      }));
    },
    list: () => [...now().specs.values()].sort((a, b) => a.name.localeCompare(b.name)),
    broken: () => [...now().broken],
  };
}

function scan(dirs: readonly string[]): { specs: Map<string, AgentSpec>; broken: { file: string; error: BrigError }[] } {
  const specs = new Map<string, AgentSpec>();
  const broken: { file: string; error: BrigError }[] = [];
  for (const dir of dirs) {
    const files = fs.existsSync(dir) ? fs.readdirSync(dir).filter((f) => f.endsWith('.md')).sort() : [];
    for (const f of files) {
      const file = path.join(dir, f);
      const parsed = parseAgentSpec(fs.readFileSync(file, 'utf8'), file);
      if (!parsed.ok) {
        broken.push({ file, error: parsed.error });
        continue;
      }
      if (parsed.value.name !== path.basename(f, '.md')) {
        broken.push({ file, error: new BrigError('invalid_input', `agent spec ${file}: its name "${parsed.value.name}" is not its file name`, { hint: `Name the file ${parsed.value.name}.md, or change \`name\`.` }) });
        continue;
      }
      if (!specs.has(parsed.value.name)) specs.set(parsed.value.name, parsed.value);
    }
  }
  return { specs, broken };
}

/** The catalog for a brig home: its agents/ then the shipped ones. */
export function agentCatalogFor(home: string): AgentCatalog {
  return loadAgentCatalog([path.join(home, 'agents'), shippedAgentsDir()]);
}

/**
 * Every `// req: <id…>` citation under test/ (the manifest and the arch tests aside), with the
 * test it stands above: what test/arch/requirements.test.ts and threat-model.test.ts check.
 */
import fs from 'node:fs';
import path from 'node:path';

export const ROOT = path.resolve(import.meta.dirname, '../..');

function walk(dir: string): string[] {
  return fs.readdirSync(dir, { withFileTypes: true }).flatMap((e) => {
    const p = path.join(dir, e.name);
    if (e.isDirectory()) return walk(p);
    return e.name.endsWith('.ts') ? [p] : [];
  });
}

export interface Citation {
  where: string;
  ids: string[];
  /** The test line the citation sits on, or undefined when none follows it. */
  test: string | undefined;
}

/** Every `// req:` comment under test/, with the test it stands above. */
export function citations(): Citation[] {
  const out: Citation[] = [];
  for (const file of walk(path.join(ROOT, 'test'))) {
    const rel = path.relative(ROOT, file);
    if (rel === path.join('test', 'requirements.ts') || rel.startsWith(path.join('test', 'arch'))) continue;
    const lines = fs.readFileSync(file, 'utf8').split('\n');
    lines.forEach((line, i) => {
      const m = /^\s*\/\/ req: (.*)$/.exec(line);
      if (!m) return;
      let j = i + 1;
      while (j < lines.length && /^\s*\/\/ req: /.test(lines[j]!)) j++;
      const next = lines[j] ?? '';
      out.push({ where: `${rel}:${i + 1}`, ids: m[1]!.trim().split(/[\s,]+/), test: /^\s*(test|it)\(/.test(next) ? next : undefined });
    });
  }
  return out;
}

/** clause id → the test files citing it. */
export function citingFiles(): Map<string, Set<string>> {
  const out = new Map<string, Set<string>>();
  for (const c of citations()) {
    const file = c.where.replace(/:\d+$/, '');
    for (const id of c.ids) {
      if (!out.has(id)) out.set(id, new Set());
      out.get(id)!.add(file);
    }
  }
  return out;
}

/**
 * Turning a YAML document's problems into `file:line: what` texts, the way the policy loader
 * reports them (src/lease/policy.ts): YAML syntax errors with the line from our own counter
 * (no source excerpts, which could echo a value), zod issues located through the document's
 * node positions, an unknown key with the nearest known one. Values are echoed only for enum
 * fields (never a free string: it could be a pasted key).
 */
import { isMap, isPair, isScalar, LineCounter, parseDocument, type Document } from 'yaml';
import type { z } from 'zod';
import { nearest } from '../util/nearest.js';

export interface Problem {
  text: string;
  hint?: string;
}

export function parseYaml(text: string, source: string): { doc: Document; lc: LineCounter; problems: Problem[] } {
  const lc = new LineCounter();
  const doc = parseDocument(text, { lineCounter: lc, prettyErrors: false, uniqueKeys: true });
  const problems = doc.errors.map((e) => {
    const line = e.linePos?.[0]?.line ?? lc.linePos(e.pos[0]).line;
    return { text: `${source}:${line}: YAML ${e.code}: ${e.message.split('\n')[0]}` };
  });
  return { doc, lc, problems };
}

/** The line of a node (or of one key of a map node), 1-based. */
export function lineOf(doc: Document, lc: LineCounter, at: readonly PropertyKey[], key?: string): number | undefined {
  const node = at.length === 0 ? doc.contents : doc.getIn(at as unknown[], true);
  if (key !== undefined && isMap(node)) {
    const pair = node.items.find((p) => isPair(p) && isScalar(p.key) && String(p.key.value) === key);
    const range = pair && isScalar(pair.key) ? pair.key.range : undefined;
    if (range) return lc.linePos(range[0]).line;
  }
  const range = (node as { range?: [number, number, number] } | null | undefined)?.range;
  return range ? lc.linePos(range[0]).line : undefined;
}

/** The line of the nearest existing ancestor's key (for a key that is missing). */
function ownerLine(doc: Document, lc: LineCounter, path: readonly PropertyKey[]): number | undefined {
  for (let i = path.length - 1; i >= 1; i--) {
    if (doc.getIn(path.slice(0, i) as unknown[], true) !== undefined) return lineOf(doc, lc, path.slice(0, i - 1), String(path[i - 1]));
  }
  return lineOf(doc, lc, []);
}

export const at = (source: string, line: number | undefined) => `${source}${line ? `:${line}` : ''}`;

export function describeIssue(
  issue: z.core.$ZodIssue,
  source: string,
  doc: Document,
  lc: LineCounter,
  validKeysAt: (path: readonly PropertyKey[]) => readonly string[],
  keyHint: (key: string) => string | undefined = () => undefined,
): Problem {
  const where = issue.path.map(String).join('.');
  if (issue.code === 'unrecognized_keys') {
    const key = issue.keys[0]!;
    const valid = validKeysAt(issue.path);
    const near = nearest(key, valid);
    const full = where ? `${where}.${key}` : key;
    const special = keyHint(key);
    const hint = special ?? (near ? `Did you mean "${where ? `${where}.` : ''}${near}"?` : `Valid keys here: ${valid.join(', ') || 'none'}.`);
    return { text: `${at(source, lineOf(doc, lc, issue.path, key))}: unknown key "${full}"`, hint };
  }
  const loc = at(source, lineOf(doc, lc, issue.path));
  const got = doc.getIn(issue.path as unknown[]);
  if (issue.code === 'invalid_value' && 'values' in issue) {
    const near = typeof got === 'string' ? nearest(got, issue.values.map(String)) : undefined;
    return {
      text: `${loc}: "${where}" is ${JSON.stringify(got)}, not one of ${issue.values.map(String).join(', ')}`,
      ...(near ? { hint: `Did you mean "${near}"?` } : {}),
    };
  }
  if (issue.code === 'invalid_type' && got === undefined) return { text: `${at(source, ownerLine(doc, lc, issue.path))}: missing key "${where}"` };
  return { text: `${loc}: "${where || '(top)'}": ${issue.message}` };
}

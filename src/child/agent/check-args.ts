/**
 * Checks a tool call's arguments against the tool's own JSON schema (the subset the tools
 * use), so a malformed call gets an error result that names the field instead of a tool
 * failing half-way. Returns null when the input fits, else one line saying why not.
 */
import type { JsonSchema } from './types.js';

function typeOf(v: unknown): string {
  if (v === null) return 'null';
  if (Array.isArray(v)) return 'array';
  if (typeof v === 'number') return Number.isInteger(v) ? 'integer' : 'number';
  return typeof v;
}

function check(s: JsonSchema, v: unknown, at: string): string | null {
  const t = typeOf(v);
  const fits = t === s.type || (s.type === 'number' && t === 'integer');
  if (!fits) return `${at || 'the arguments'} must be ${s.type === 'array' || s.type === 'object' || s.type === 'integer' ? 'an' : 'a'} ${s.type}, not ${t}`;
  if (typeof v === 'string') {
    if (s.minLength !== undefined && v.length < s.minLength) return `${at} must have at least ${s.minLength} chars`;
    if (s.maxLength !== undefined && v.length > s.maxLength) return `${at} must have at most ${s.maxLength} chars`;
    if (s.enum !== undefined && !s.enum.includes(v)) return `${at} must be one of ${s.enum.join(', ')}`;
  }
  if (typeof v === 'number') {
    if (s.minimum !== undefined && v < s.minimum) return `${at} must be ≥ ${s.minimum}`;
    if (s.maximum !== undefined && v > s.maximum) return `${at} must be ≤ ${s.maximum}`;
  }
  if (Array.isArray(v)) {
    if (s.minItems !== undefined && v.length < s.minItems) return `${at} must have at least ${s.minItems} items`;
    if (s.maxItems !== undefined && v.length > s.maxItems) return `${at} must have at most ${s.maxItems} items`;
    if (s.items) for (let i = 0; i < v.length; i++) {
      const e = check(s.items, v[i], `${at}[${i}]`);
      if (e) return e;
    }
  }
  if (s.type === 'object') {
    const o = v as Record<string, unknown>;
    for (const k of s.required ?? []) if (o[k] === undefined) return `${at === '' ? '' : at + '.'}${k} is required`;
    for (const [k, val] of Object.entries(o)) {
      const ps = s.properties?.[k];
      const name = at === '' ? k : `${at}.${k}`;
      if (!ps) {
        if (s.additionalProperties === false) return `${name} is not a parameter (known: ${Object.keys(s.properties ?? {}).join(', ') || 'none'})`;
        continue;
      }
      if (val === undefined || (val === null && !(s.required ?? []).includes(k))) continue;
      const e = check(ps, val, name);
      if (e) return e;
    }
  }
  return null;
}

export function checkArgs(schema: JsonSchema, input: unknown): string | null {
  return check(schema, input, '');
}

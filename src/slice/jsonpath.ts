/**
 * A strict JSONPath subset compiled to a DuckDB json_extract path — parsed by this grammar,
 * never evaluated:
 *
 *   path    := '$' segment*
 *   segment := '.' name | '[' quoted ']' | '[' index ']' | '[*]' | '.*'
 *   name    := [A-Za-z_][A-Za-z0-9_]*        quoted := '…' or "…" (no quotes, backslashes or NUL inside)
 *   index   := 0 | [1-9][0-9]{0,8}
 *
 * Anything else (filters, recursive descent, slices, scripts) is refused with the position.
 */
import { type Result, err, ok } from '../util/errors.js';

export type JsonPathSegment = { key: string } | { index: number } | { wildcard: 'member' | 'element' };

export interface CompiledJsonPath {
  segments: JsonPathSegment[];
  /** The DuckDB json path string (`$."a"[0][*]`). */
  duckPath: string;
  /** True when a wildcard makes json_extract return a list. */
  multi: boolean;
}

const NAME = /^[A-Za-z_][A-Za-z0-9_]*/;
const INDEX = /^(0|[1-9][0-9]{0,8})\]/;

export function parseJsonPath(expr: string): Result<CompiledJsonPath, string> {
  if (expr.length > 1000) return err('the path is too long (max 1000 characters)');
  if (!expr.startsWith('$')) return err('a path starts with $');
  const segments: JsonPathSegment[] = [];
  let i = 1;
  while (i < expr.length) {
    const rest = expr.slice(i);
    if (rest.startsWith('.*')) {
      segments.push({ wildcard: 'member' });
      i += 2;
    } else if (rest.startsWith('.')) {
      const m = NAME.exec(rest.slice(1));
      if (!m) return err(`expected a name after '.' at position ${i + 1}`);
      segments.push({ key: m[0] });
      i += 1 + m[0].length;
    } else if (rest.startsWith('[*]')) {
      segments.push({ wildcard: 'element' });
      i += 3;
    } else if (rest.startsWith("['") || rest.startsWith('["')) {
      const q = rest[1]!;
      const end = rest.indexOf(q, 2);
      if (end === -1 || rest[end + 1] !== ']') return err(`unterminated quoted name at position ${i}`);
      const key = rest.slice(2, end);
      if (key.length === 0 || /["'\\\0]/.test(key)) return err(`quoted names may not be empty or contain quotes or backslashes (position ${i})`);
      segments.push({ key });
      i += end + 2;
    } else if (rest.startsWith('[')) {
      const m = INDEX.exec(rest.slice(1));
      if (!m) return err(`expected an index, a quoted name or * inside [] at position ${i}`);
      segments.push({ index: Number(m[1]) });
      i += 1 + m[0].length;
    } else {
      return err(`unexpected ${JSON.stringify(rest[0])} at position ${i}: only $, .name, ['name'], [n], [*] are allowed`);
    }
  }
  const duckPath =
    '$' +
    segments
      .map((s) => ('key' in s ? `."${s.key}"` : 'index' in s ? `[${s.index}]` : s.wildcard === 'member' ? '.*' : '[*]'))
      .join('');
  return ok({ segments, duckPath, multi: segments.some((s) => 'wildcard' in s) });
}

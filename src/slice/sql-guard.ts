/**
 * The SQL statement guard: decides, on DuckDB's own parse tree (json_serialize_sql), whether an
 * untrusted query may run against a ResultRef.
 *
 * Guarantees: a query passes only if it is exactly one SELECT whose base tables are the
 * allowed views (or its own CTEs), whose table functions are allowlisted readers reading
 * only a file the caller named, and which calls none of the functions that reach outside
 * (getenv, read_text, glob, current_setting, duckdb_*…). The returned tree is what runs:
 * the helper turns it back into SQL with json_deserialize_sql, so nothing the guard did not
 * see reaches DuckDB (no comment tricks, no second statement).
 * Threat: a child-authored or coordinator-relayed query that tries to read other files, write,
 * load extensions, reach the network or read the environment.
 * Trusts: DuckDB's parser (same build that executes). Fails closed: an unknown shape is refused.
 * The lockdown (allowed_paths, enable_external_access=false, lock_configuration) is the second
 * wall behind this one.
 */

export const READER_ALLOWLIST = new Set([
  'read_json_auto',
  'read_json',
  'read_ndjson',
  'read_ndjson_auto',
  'read_csv',
  'read_csv_auto',
  'read_parquet',
]);

/** Table functions that generate rows from their arguments and touch no file. */
const GENERATORS = new Set(['range', 'generate_series', 'unnest', 'json_each', 'json_tree']);

/** Named reader options that only change how the one allowed file is parsed. */
const READER_OPTIONS = new Set([
  'header', 'delim', 'sep', 'quote', 'escape', 'columns', 'auto_detect', 'sample_size', 'ignore_errors',
  'nullstr', 'types', 'dtypes', 'names', 'column_names', 'dateformat', 'timestampformat', 'skip',
  'all_varchar', 'format', 'records', 'maximum_object_size', 'union_by_name', 'normalize_names',
  'null_padding', 'new_line', 'comment', 'strict_mode', 'max_line_size', 'decimal_separator',
  'maximum_depth', 'convert_strings_to_integers', 'field_appearance_threshold', 'map_inference_threshold',
  'binary_as_string', 'compression', 'allow_quoted_nulls', 'parallel', 'encoding',
]);

/** Functions that reach outside the ref, reveal host details or run SQL of their own. */
const DENIED_FUNCTIONS = new Set([
  'getenv', 'current_setting', 'read_text', 'read_blob', 'glob', 'sniff_csv', 'query', 'query_table',
  'load_extension', 'install_extension', 'which_secret', 'getvariable', 'checkpoint', 'force_checkpoint',
  'sql_auto_complete', 'json_execute_serialized_sql', 'file_search_path', 'current_setting_value',
  'enable_profiling', 'disable_profiling', 'resource', 'from_substrait', 'get_substrait', 'test_all_types',
  'json_serialize_plan',
]);
const DENIED_PREFIXES = ['duckdb_', 'pragma_', 'read_', 'parquet_', 'sqlite_', 'postgres_', 'mysql_', 'iceberg_', 'delta_', 'http', 's3', 'json_execute', 'glob'];

const IDENT = /^[A-Za-z_][A-Za-z0-9_]*$/;

export interface GuardPolicy {
  /** Base tables the query may name (`ref`, or the audit view). Case-insensitive. */
  views: readonly string[];
  /** Names a reader table function may be given → the one file it then reads. */
  fileArgs: Readonly<Record<string, string>>;
}

export type GuardVerdict = { ok: true; ast: unknown } | { ok: false; reason: string };

type Node = Record<string, unknown>;
const isNode = (x: unknown): x is Node => typeof x === 'object' && x !== null && !Array.isArray(x);

/**
 * Checks a json_serialize_sql result. Returns a copy of the tree with reader arguments
 * replaced by the real file paths, ready for json_deserialize_sql.
 */
export function guardSerializedSelect(serialized: unknown, policy: GuardPolicy): GuardVerdict {
  if (!isNode(serialized)) return refuse('the query could not be parsed');
  if (serialized.error === true) {
    const msg = String(serialized.error_message ?? 'parse error');
    if (/only select/i.test(msg)) return refuse('only a single SELECT is allowed (no COPY, ATTACH, INSTALL, LOAD, SET, PRAGMA, DDL or DML)');
    return refuse(`the query does not parse: ${msg}`);
  }
  const statements = serialized.statements;
  if (!Array.isArray(statements) || statements.length !== 1) {
    return refuse(`exactly one statement is allowed, got ${Array.isArray(statements) ? statements.length : 0}`);
  }
  const tree = structuredClone(serialized) as Node;
  const ctes = new Set<string>();
  collectCtes(tree, ctes);
  // A CTE is visible only in its own scope, but this guard allows a CTE's name anywhere: a
  // CTE named like one of DuckDB's catalog views would let a reference outside its scope read
  // the view itself (pg_settings shows allowed_paths). Those names are refused outright.
  const shadow = [...ctes].find(isCatalogName);
  if (shadow) return refuse(`a CTE may not be named ${quoteName(shadow)}: that is a name of DuckDB's catalog; choose another`);
  const views = new Set(policy.views.map((v) => v.toLowerCase()));
  const readerCalls = new Set<unknown>();
  const problem = walk(tree, (n) => checkNode(n, { views, ctes, fileArgs: policy.fileArgs, readerCalls }));
  return problem ? refuse(problem) : { ok: true, ast: tree };
}

interface Ctx {
  views: Set<string>;
  ctes: Set<string>;
  fileArgs: Readonly<Record<string, string>>;
  readerCalls: Set<unknown>;
}

function checkNode(n: Node, ctx: Ctx): string | undefined {
  switch (n.type) {
    case 'BASE_TABLE':
      return checkBaseTable(n, ctx);
    case 'TABLE_FUNCTION':
      return checkReader(n, ctx);
    case 'SHOW_REF':
      // DESCRIBE/SUMMARIZE of a query are fine; SHOW TABLES / DESCRIBE other_table are not.
      if (n.table_name !== '' && n.table_name !== undefined) return `SHOW/DESCRIBE is only allowed over a query on \`ref\``;
      return undefined;
  }
  if (typeof n.function_name === 'string' && !ctx.readerCalls.has(n)) return checkFunction(n);
  return undefined;
}

function checkBaseTable(n: Node, ctx: Ctx): string | undefined {
  const name = String(n.table_name ?? '');
  if ((n.schema_name ?? '') !== '' || (n.catalog_name ?? '') !== '') return `qualified table names are not allowed (${quoteName(name)})`;
  if (n.at_clause !== null && n.at_clause !== undefined) return 'AT clauses are not allowed';
  if (!IDENT.test(name)) return `${quoteName(name)} is not a table here: only ${viewList(ctx)} may be read (no file paths or URLs)`;
  const lower = name.toLowerCase();
  if (!ctx.views.has(lower) && !ctx.ctes.has(lower)) return `unknown table ${quoteName(name)}: only ${viewList(ctx)} may be read`;
  return undefined;
}

function viewList(ctx: Ctx): string {
  return `the view ${[...ctx.views].map((v) => `\`${v}\``).join(', ')}`;
}

function checkReader(n: Node, ctx: Ctx): string | undefined {
  const fn = n.function;
  if (!isNode(fn)) return 'malformed table function';
  ctx.readerCalls.add(fn);
  const name = String(fn.function_name ?? '').toLowerCase();
  if (GENERATORS.has(name)) {
    // Generators read nothing; their arguments are ordinary expressions, checked like any other.
    ctx.readerCalls.delete(fn);
    return (fn.schema ?? '') !== '' || (fn.catalog ?? '') !== '' ? 'qualified table functions are not allowed' : undefined;
  }
  if (!READER_ALLOWLIST.has(name)) return `table function ${name}() is not allowed (allowed: ${[...READER_ALLOWLIST].join(', ')})`;
  if ((fn.schema ?? '') !== '' || (fn.catalog ?? '') !== '') return 'qualified table functions are not allowed';
  const args = Array.isArray(fn.children) ? (fn.children as unknown[]) : [];
  const first = args[0];
  const firstValue = isNode(first) && first.class === 'CONSTANT' && isNode(first.value) ? first.value : undefined;
  const arg = firstValue && typeof firstValue.value === 'string' ? firstValue.value : undefined;
  if (arg === undefined || !Object.hasOwn(ctx.fileArgs, arg)) {
    return `${name}() may only read this ref: pass its id${Object.keys(ctx.fileArgs).length ? ` (${Object.keys(ctx.fileArgs).map((k) => `'${k}'`).join(' or ')})` : ''}`;
  }
  firstValue!.value = globLiteral(ctx.fileArgs[arg]!);
  for (const opt of args.slice(1)) {
    const why = checkReaderOption(opt);
    if (why) return `${name}(): ${why}`;
  }
  return undefined;
}

function checkReaderOption(opt: unknown): string | undefined {
  if (!isNode(opt) || opt.class !== 'COMPARISON' || opt.type !== 'COMPARE_EQUAL') return 'only named options (name=value) may follow the ref';
  const left = opt.left;
  const names = isNode(left) && left.class === 'COLUMN_REF' && Array.isArray(left.column_names) ? left.column_names : [];
  const optName = names.length === 1 ? String(names[0]).toLowerCase() : '';
  if (!READER_OPTIONS.has(optName)) return `option ${quoteName(optName)} is not allowed`;
  // The value must be data: constants, casts, lists and structs of them — no subqueries, no calls.
  return walk(opt.right, (n) => {
    if (n.class === 'SUBQUERY' || n.type === 'SUBQUERY') return 'option values may not be subqueries';
    if (typeof n.function_name === 'string' && !['struct_pack', 'list_value', 'row', 'map'].includes(String(n.function_name).toLowerCase())) {
      return 'option values must be constants';
    }
    return undefined;
  });
}

function checkFunction(n: Node): string | undefined {
  const name = String(n.function_name).toLowerCase();
  if ((n.schema ?? '') !== '' && n.schema !== 'main') return `qualified function ${quoteName(name)} is not allowed`;
  if ((n.catalog ?? '') !== '') return `qualified function ${quoteName(name)} is not allowed`;
  if (DENIED_FUNCTIONS.has(name) || DENIED_PREFIXES.some((p) => name.startsWith(p))) return `function ${name}() is not allowed: it reaches outside the ref`;
  return undefined;
}

/**
 * A file path as DuckDB's readers take it literally: they glob `*`, `?` and `[…]`, so a child's
 * file named `a[1].csv` would read its sibling `a1.csv`; each is put in a class of its own.
 */
export function globLiteral(p: string): string {
  return p.replace(/[*?[]/g, (c) => `[${c}]`);
}

/**
 * Names DuckDB's catalog answers to without a schema (its default views, checked against a
 * real instance by test/integration/slice/sql-kinds.test.ts), and the prefixes of its own.
 */
export const CATALOG_NAMES: ReadonlySet<string> = new Set([
  'character_sets', 'check_constraints', 'columns', 'constraint_column_usage', 'constraint_table_usage',
  'key_column_usage', 'referential_constraints', 'schemata', 'table_constraints', 'tables', 'views',
  'information_schema', 'pg_catalog', 'main', 'system', 'temp', 'memory',
]);
const CATALOG_PREFIXES = ['pg_', 'duckdb_', 'sqlite_', 'pragma_'];

export function isCatalogName(name: string): boolean {
  const n = name.toLowerCase();
  return CATALOG_NAMES.has(n) || CATALOG_PREFIXES.some((p) => n.startsWith(p));
}

function collectCtes(x: unknown, out: Set<string>): void {
  walk(x, (n) => {
    const cm = n.cte_map;
    if (isNode(cm) && Array.isArray(cm.map)) {
      for (const e of cm.map) if (isNode(e) && typeof e.key === 'string') out.add(e.key.toLowerCase());
    }
    return undefined;
  });
}

/** Depth-first over every object in the tree; stops at the first problem. */
function walk(x: unknown, visit: (n: Node) => string | undefined, depth = 0): string | undefined {
  if (depth > 2000) return 'the query is nested too deeply';
  if (Array.isArray(x)) {
    for (const v of x) {
      const p = walk(v, visit, depth + 1);
      if (p) return p;
    }
    return undefined;
  }
  if (!isNode(x)) return undefined;
  const p = visit(x);
  if (p) return p;
  for (const v of Object.values(x)) {
    const q = walk(v, visit, depth + 1);
    if (q) return q;
  }
  return undefined;
}

function quoteName(s: string): string {
  return JSON.stringify(s.length > 80 ? `${s.slice(0, 80)}…` : s);
}

function refuse(reason: string): GuardVerdict {
  return { ok: false, reason };
}

/**
 * json_serialize_sql writes uint64 fields (e.g. query_location = 2^64−1) and big integer
 * constants that a JS number cannot hold. Parse them as tagged strings and put them back
 * verbatim when rendering, so the round trip is exact. (SQL text cannot contain NUL: the tag
 * cannot be forged by a query.)
 */
export function parseBigJson(text: string): unknown {
  let out = '';
  let i = 0;
  let inStr = false;
  while (i < text.length) {
    const c = text[i]!;
    if (inStr) {
      out += c;
      if (c === '\\') {
        out += text[i + 1] ?? '';
        i += 2;
        continue;
      }
      if (c === '"') inStr = false;
      i++;
      continue;
    }
    if (c === '"') {
      inStr = true;
      out += c;
      i++;
      continue;
    }
    if (c === '-' || (c >= '0' && c <= '9')) {
      const num = /-?\d+(?:\.\d+)?(?:[eE][+-]?\d+)?/y;
      num.lastIndex = i;
      const tok = num.exec(text)?.[0] ?? c;
      out += /^-?\d{16,}$/.test(tok) ? JSON.stringify(`\u0000big:${tok}`) : tok;
      i += tok.length;
      continue;
    }
    out += c;
    i++;
  }
  return JSON.parse(out);
}

export function stringifyBigJson(value: unknown): string {
  return JSON.stringify(value).replace(/"\\u0000big:(-?\d+)"/g, '$1');
}

/** A SQL string literal (DuckDB standard strings: no backslash escapes). */
export function sqlString(s: string): string {
  if (s.includes('\0')) throw new Error('NUL in SQL literal');
  return `'${s.replaceAll("'", "''")}'`;
}

/**
 * The DuckDB lockdown as data: every setting the helper gives an instance, its value and one
 * line of why, in one frozen table per kind of instance (the query's, the parser's), and the
 * pure check of what DuckDB reports back once the configuration is locked.
 *
 * Guarantees: duckdb-lockdown.ts issues these tables and nothing else, in table order, and
 * reads every setting back after the lock; a setting reported otherwise than it was given is a
 * drift, and the helper refuses (a query's instance: the query is not run; the parser's: the
 * helper does not start). Threat: a lockdown that is written down but not in force — a DuckDB
 * version that renames, ignores or quietly normalizes a setting. Trusts: DuckDB's own report
 * (`current_setting`). Fails closed: a setting missing from the report, or in a form the check
 * does not know, is a drift.
 */
import { sqlString } from './sql-guard.js';

/** How a setting's reported value is compared with the value given. */
export type SettingKind = 'bool' | 'int' | 'text' | 'paths' | 'bytes';

/** When a setting is given: in the instance's create config, by SET before the views, or last. */
export type SettingAt = 'create' | 'set' | 'lock';

/** What a query's instance is locked to: the request's files, limits and spill directory. */
export interface LockdownInput {
  allowedPaths: readonly string[];
  memoryLimit: string;
  threads: number;
  tempDir: string;
  maxTempSize: string;
}

interface Setting {
  at: SettingAt;
  kind: SettingKind;
  value: string | ((i: LockdownInput) => string | readonly string[]);
  reason: string;
}

/** A setting with its value for one instance. */
export interface LockSetting {
  name: string;
  at: SettingAt;
  kind: SettingKind;
  value: string | readonly string[];
}

const NO_EXTENSIONS = {
  autoinstall_known_extensions: { at: 'create', kind: 'bool', value: 'false', reason: 'a query that names an extension\'s function never downloads the extension' },
  autoload_known_extensions: { at: 'create', kind: 'bool', value: 'false', reason: 'nor loads one already on disk (httpfs would reach the network)' },
  allow_community_extensions: { at: 'create', kind: 'bool', value: 'false', reason: 'no third-party extension code runs, even one installed' },
} as const satisfies Record<string, Setting>;

/** The instance one query runs in (a fresh one per query). */
export const QUERY_LOCKDOWN: Readonly<Record<string, Readonly<Setting>>> = deepFreeze({
  ...NO_EXTENSIONS,
  memory_limit: { at: 'create', kind: 'bytes', value: (i) => i.memoryLimit, reason: 'DuckDB spills or fails before the helper reaches its address-space cap' },
  threads: { at: 'create', kind: 'int', value: (i) => String(i.threads), reason: 'one query cannot take every core from the supervisor and the other runs' },
  allowed_paths: { at: 'set', kind: 'paths', value: (i) => i.allowedPaths, reason: 'the only files a reader may open: the ref\'s own, each also as its reader is given it (globLiteral)' },
  temp_directory: { at: 'set', kind: 'text', value: (i) => i.tempDir, reason: 'a spill goes to this query\'s private directory, removed after it' },
  max_temp_directory_size: { at: 'set', kind: 'bytes', value: (i) => i.maxTempSize, reason: 'a spill cannot fill the host\'s disk' },
  enable_external_access: { at: 'set', kind: 'bool', value: 'false', reason: 'nothing outside allowed_paths (no other file, no network, no ATTACH or COPY); after allowed_paths, which DuckDB takes only while access is on' },
  lock_configuration: { at: 'lock', kind: 'bool', value: 'true', reason: 'the query cannot SET any of this back; last, once the views over the files exist' },
});

/** The helper's one parser instance: it serializes SQL text (json_serialize_sql) and reads nothing. */
export const PARSER_LOCKDOWN: Readonly<Record<string, Readonly<Setting>>> = deepFreeze({
  ...NO_EXTENSIONS,
  enable_external_access: { at: 'create', kind: 'bool', value: 'false', reason: 'the parser opens no file and reaches nothing: it only parses' },
  threads: { at: 'create', kind: 'int', value: '1', reason: 'parsing needs no parallelism' },
  memory_limit: { at: 'create', kind: 'bytes', value: '64MB', reason: 'a hostile query\'s parse tree cannot take the helper\'s memory' },
  lock_configuration: { at: 'create', kind: 'bool', value: 'true', reason: 'a query it parses cannot change any of this' },
});

/** A table's settings with their values for one instance, in table order. */
export function resolveLockdown(table: Readonly<Record<string, Readonly<Setting>>>, input?: LockdownInput): LockSetting[] {
  return Object.entries(table).map(([name, s]) => {
    if (typeof s.value === 'string') return { name, at: s.at, kind: s.kind, value: s.value };
    if (!input) throw new Error(`the lockdown setting ${name} needs the request's values`);
    return { name, at: s.at, kind: s.kind, value: s.value(input) };
  });
}

/** The settings given when the instance is made (DuckDBInstance.create's options). */
export function createConfig(settings: readonly LockSetting[]): Record<string, string> {
  return Object.fromEntries(settings.filter((s) => s.at === 'create').map((s) => [s.name, String(s.value)]));
}

/** `SET name=value` for one setting, the value rendered as DuckDB reads its kind. */
export function setStatement(s: LockSetting): string {
  const v = s.value;
  const rendered = typeof v !== 'string' ? `[${v.map(sqlString).join(', ')}]` : s.kind === 'bool' || s.kind === 'int' ? v : sqlString(v);
  return `SET ${s.name}=${rendered}`;
}

/** One row whose columns are each setting's current value as JSON text, in the settings' order. */
export function readBackSql(settings: readonly LockSetting[]): string {
  return `SELECT ${settings.map((s) => `to_json(current_setting(${sqlString(s.name)}))::VARCHAR`).join(', ')}`;
}

/** What DuckDB reported for one setting (its current_setting, JSON-decoded). */
export interface ReadBack {
  name: string;
  value: unknown;
}

export interface LockdownDrift {
  name: string;
  expected: string | readonly string[];
  actual: unknown;
}

/** The settings DuckDB does not report as given: empty when the lockdown holds. */
export function lockdownDrift(settings: readonly LockSetting[], rows: readonly ReadBack[]): LockdownDrift[] {
  const got = new Map(rows.map((r) => [r.name, r.value]));
  return settings.filter((s) => !got.has(s.name) || !holds(s, got.get(s.name))).map((s) => ({ name: s.name, expected: s.value, actual: got.get(s.name) }));
}

function holds(s: LockSetting, actual: unknown): boolean {
  const v = s.value;
  switch (s.kind) {
    case 'bool':
      return typeof actual === 'boolean' && String(actual) === v;
    case 'int':
      return typeof actual === 'number' && String(actual) === v;
    case 'text':
      return actual === v;
    case 'paths': {
      // A set to DuckDB: reported in its own order, without duplicates.
      if (!Array.isArray(actual) || typeof v === 'string') return false;
      const want = [...new Set(v)].sort();
      const have = [...new Set(actual.map(String))].sort();
      return want.length === have.length && want.every((p, i) => p === have[i]);
    }
    case 'bytes': {
      const want = typeof v === 'string' ? parseByteSize(v) : undefined;
      const range = typeof actual === 'string' ? reportedBytes(actual) : undefined;
      return want !== undefined && range !== undefined && want >= range[0] && want < range[1];
    }
  }
}

const GIVEN_UNITS: Record<string, number> = { KB: 1e3, MB: 1e6, GB: 1e9, TB: 1e12, KiB: 2 ** 10, MiB: 2 ** 20, GiB: 2 ** 30, TiB: 2 ** 40 };

/** A size as brig gives it (`64MB`, `2GB`: DuckDB's units are powers of 1000, `MiB` of 1024). */
export function parseByteSize(s: string): number | undefined {
  const m = /^(\d+)\s*(KB|MB|GB|TB|KiB|MiB|GiB|TiB)$/.exec(s);
  return m ? Number(m[1]) * GIVEN_UNITS[m[2]!]! : undefined;
}

const REPORTED_UNITS: Record<string, number> = { KiB: 2 ** 10, MiB: 2 ** 20, GiB: 2 ** 30, TiB: 2 ** 40, PiB: 2 ** 50 };

/**
 * The byte range a size DuckDB reports stands for: it shows one decimal of the largest binary
 * unit, cut (not rounded), so `953.6 MiB` is any size in [953.6, 953.7) MiB; bytes are exact.
 */
export function reportedBytes(s: string): [number, number] | undefined {
  const bytes = /^(\d+) bytes?$/.exec(s);
  if (bytes) return [Number(bytes[1]), Number(bytes[1]) + 1];
  const m = /^(\d+)\.(\d) (KiB|MiB|GiB|TiB|PiB)$/.exec(s);
  if (!m) return undefined;
  const unit = REPORTED_UNITS[m[3]!]!;
  const tenths = Number(m[1]) * 10 + Number(m[2]);
  return [(tenths * unit) / 10, ((tenths + 1) * unit) / 10];
}

function deepFreeze(t: Record<string, Setting>): Readonly<Record<string, Readonly<Setting>>> {
  for (const v of Object.values(t)) Object.freeze(v);
  return Object.freeze(t);
}

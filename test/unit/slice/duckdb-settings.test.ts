/**
 * [INV-5] The DuckDB lockdown as one frozen table with a reason per setting, and the pure
 * read-back check: what DuckDB reports after the lock must be what was given, or the helper
 * refuses. The rows here are in the forms a real instance reports them (booleans, numbers,
 * path lists as sets in DuckDB's own order, sizes cut to one decimal of a binary unit); the
 * integration test (test/integration/slice/lockdown.test.ts) reads them from a real one.
 */
import { test } from 'node:test';
import assert from 'node:assert/strict';
import {
  PARSER_LOCKDOWN,
  QUERY_LOCKDOWN,
  createConfig,
  lockdownDrift,
  parseByteSize,
  reportedBytes,
  resolveLockdown,
  setStatement,
  type LockSetting,
  type ReadBack,
} from '../../../src/slice/duckdb-settings.js';

const INPUT = { allowedPaths: ['/r/a[1].csv', '/r/a[[]1].csv'], memoryLimit: '1GB', threads: 2, tempDir: '/t/q-1', maxTempSize: '2GB' };

/** What a real instance reports for these settings (the forms seen from DuckDB 1.5). */
const REPORTED: ReadBack[] = [
  { name: 'autoinstall_known_extensions', value: false },
  { name: 'autoload_known_extensions', value: false },
  { name: 'allow_community_extensions', value: false },
  { name: 'memory_limit', value: '953.6 MiB' },
  { name: 'threads', value: 2 },
  { name: 'allowed_paths', value: ['/r/a[[]1].csv', '/r/a[1].csv'] },
  { name: 'temp_directory', value: '/t/q-1' },
  { name: 'max_temp_directory_size', value: '1.8 GiB' },
  { name: 'enable_external_access', value: false },
  { name: 'lock_configuration', value: true },
];

test('[INV-5] the lockdown tables: frozen, every setting with a one-line reason, extensions off and the lock in both', () => {
  for (const table of [QUERY_LOCKDOWN, PARSER_LOCKDOWN]) {
    assert.ok(Object.isFrozen(table));
    for (const [name, s] of Object.entries(table)) {
      assert.ok(Object.isFrozen(s), name);
      assert.ok(s.reason.length > 10 && !s.reason.includes('\n'), `${name} says why in one line`);
    }
    for (const name of ['autoinstall_known_extensions', 'autoload_known_extensions', 'allow_community_extensions', 'enable_external_access']) assert.equal(table[name]?.value, 'false', name);
    assert.equal(table.lock_configuration?.value, 'true');
  }
  // The query's: external access goes off after the files are allowed, the lock comes last.
  const order = resolveLockdown(QUERY_LOCKDOWN, INPUT).map((s) => s.name);
  assert.ok(order.indexOf('allowed_paths') < order.indexOf('enable_external_access'));
  assert.equal(order.at(-1), 'lock_configuration');
  assert.equal(QUERY_LOCKDOWN.lock_configuration?.at, 'lock');
});

test('the table is what is issued: create options and SET statements rendered from it', () => {
  const settings = resolveLockdown(QUERY_LOCKDOWN, INPUT);
  assert.deepEqual(createConfig(settings), { autoinstall_known_extensions: 'false', autoload_known_extensions: 'false', allow_community_extensions: 'false', memory_limit: '1GB', threads: '2' });
  assert.deepEqual(settings.filter((s) => s.at !== 'create').map(setStatement), [
    "SET allowed_paths=['/r/a[1].csv', '/r/a[[]1].csv']",
    "SET temp_directory='/t/q-1'",
    "SET max_temp_directory_size='2GB'",
    'SET enable_external_access=false',
    'SET lock_configuration=true',
  ]);
  assert.deepEqual(createConfig(resolveLockdown(PARSER_LOCKDOWN)), { autoinstall_known_extensions: 'false', autoload_known_extensions: 'false', allow_community_extensions: 'false', enable_external_access: 'false', threads: '1', memory_limit: '64MB', lock_configuration: 'true' });
  assert.throws(() => resolveLockdown(QUERY_LOCKDOWN), /needs the request's values/);
});

test('[INV-5] read-back: the settings as a real instance reports them hold', () => {
  assert.deepEqual(lockdownDrift(resolveLockdown(QUERY_LOCKDOWN, INPUT), REPORTED), []);
});

test('[INV-5] read-back: a table with a value the instance does not hold is a drift, setting by setting', () => {
  const settings = resolveLockdown(QUERY_LOCKDOWN, INPUT);
  const withValue = (name: string, value: LockSetting['value']) => settings.map((s) => (s.name === name ? { ...s, value } : s));
  const cases: [string, LockSetting['value']][] = [
    ['threads', '3'],
    ['memory_limit', '2GB'],
    // 1.0 GB would read 953.6 MiB too; 1001 MB is past the tenth DuckDB shows.
    ['memory_limit', '1001MB'],
    ['allowed_paths', [...INPUT.allowedPaths, '/etc/passwd']],
    ['allowed_paths', ['/r/a[1].csv']],
    ['temp_directory', '/'],
    ['enable_external_access', 'true'],
    ['lock_configuration', 'false'],
    ['max_temp_directory_size', 'lots'],
  ];
  for (const [name, value] of cases) {
    const drift = lockdownDrift(withValue(name, value), REPORTED);
    assert.deepEqual(drift.map((d) => d.name), [name], `${name}=${JSON.stringify(value)}`);
    assert.deepEqual(drift[0]!.expected, value);
  }
});

test('[INV-5] read-back fails closed: a setting missing from the report, or reported in an unknown form, is a drift', () => {
  const settings = resolveLockdown(QUERY_LOCKDOWN, INPUT);
  assert.deepEqual(lockdownDrift(settings, REPORTED.filter((r) => r.name !== 'enable_external_access')).map((d) => d.name), ['enable_external_access']);
  const odd = (name: string, value: unknown) => REPORTED.map((r) => (r.name === name ? { name, value } : r));
  assert.deepEqual(lockdownDrift(settings, odd('enable_external_access', 'false')).map((d) => d.name), ['enable_external_access'], 'a string is not a boolean');
  assert.deepEqual(lockdownDrift(settings, odd('threads', '2')).map((d) => d.name), ['threads'], 'a string is not a number');
  assert.deepEqual(lockdownDrift(settings, odd('memory_limit', '1 GB')).map((d) => d.name), ['memory_limit'], 'a size form the check does not know');
  assert.deepEqual(lockdownDrift(settings, odd('allowed_paths', "['/r/a[1].csv']")).map((d) => d.name), ['allowed_paths'], 'a list as text');
});

test('sizes: as given (powers of 1000, DuckDB\'s units) and as reported (one decimal of a binary unit, cut)', () => {
  assert.equal(parseByteSize('64MB'), 64e6);
  assert.equal(parseByteSize('2GB'), 2e9);
  assert.equal(parseByteSize('1MiB'), 2 ** 20);
  assert.equal(parseByteSize('1.5GB'), undefined);
  assert.deepEqual(reportedBytes('61.0 MiB'), [(610 * 2 ** 20) / 10, (611 * 2 ** 20) / 10]);
  assert.deepEqual(reportedBytes('512 bytes'), [512, 513]);
  assert.equal(reportedBytes('61 MiB'), undefined);
  for (const [given, shown] of [['64MB', '61.0 MiB'], ['1GB', '953.6 MiB'], ['2GB', '1.8 GiB'], ['1000KB', '976.5 KiB']] as const) {
    const [lo, hi] = reportedBytes(shown)!;
    const n = parseByteSize(given)!;
    assert.ok(n >= lo && n < hi, `${given} reads back as ${shown}`);
  }
});

/**
 * [INV-5] The SQL guard refuses a CTE named like anything in DuckDB's catalog (a reference out
 * of the CTE's scope would read the catalog view itself). Its list is checked here against a
 * real DuckDB: every view, table and schema a fresh instance holds is covered, so an upgrade
 * that adds one fails this test instead of opening a way round the guard.
 */
import { test } from 'node:test';
import assert from 'node:assert/strict';
import { DuckDBInstance } from '@duckdb/node-api';
import { isCatalogName } from '../../../src/slice/sql-guard.js';

// req: slice:select-only
test('[INV-5] every name in a fresh DuckDB catalog is one the guard will not let a CTE take', async () => {
  const inst = await DuckDBInstance.create(':memory:');
  const c = await inst.connect();
  const names = new Set<string>();
  for (const q of ['SELECT view_name FROM duckdb_views()', 'SELECT table_name FROM duckdb_tables()', 'SELECT schema_name FROM duckdb_schemas()', 'SELECT database_name FROM duckdb_databases()']) {
    for (const [n] of (await c.runAndReadAll(q)).getRows()) names.add(String(n));
  }
  c.closeSync();
  assert.ok(names.size > 30, `the catalog listed ${names.size} names`);
  assert.deepEqual([...names].filter((n) => !isCatalogName(n)).sort(), [], 'names the guard does not know');
  assert.equal(isCatalogName('ref'), false);
  assert.equal(isCatalogName('totals'), false, 'an ordinary CTE name is free');
});

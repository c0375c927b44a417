/**
 * docs/threat-model.md stays true to the tests: for every clause of the requirement manifest,
 * its row's tests column lists exactly the files whose tests cite that clause (`// req: <id>`),
 * and every row names a clause of the manifest.
 */
import { test } from 'node:test';
import assert from 'node:assert/strict';
import fs from 'node:fs';
import path from 'node:path';
import { REQUIREMENTS } from '../requirements.js';
import { citingFiles, ROOT } from './citations.js';

test("every clause's row in docs/threat-model.md lists exactly the test files that cite it", () => {
  const doc = fs.readFileSync(path.join(ROOT, 'docs', 'threat-model.md'), 'utf8');
  const cites = citingFiles();
  const rows = new Map<string, Set<string>>();
  for (const line of doc.split('\n')) {
    const m = /^\| INV-\d+ \| `([a-z]+:[a-z0-9-]+)`/.exec(line);
    if (!m) continue;
    const cells = line.replace(/ \|$/, '').split(' | ');
    rows.set(m[1]!, new Set([...cells.at(-1)!.matchAll(/`(test\/[^`]+\.ts)`/g)].map((x) => x[1]!)));
  }
  assert.deepEqual([...rows.keys()].sort(), Object.keys(REQUIREMENTS).sort(), 'one row per clause of test/requirements.ts');
  for (const [id, listed] of rows) {
    const want = cites.get(id) ?? new Set<string>();
    assert.deepEqual([...listed].sort(), [...want].sort(), `${id}: the tests column of docs/threat-model.md against the files citing it (// req: ${id})`);
  }
});

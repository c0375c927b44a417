/**
 * The requirement manifest (test/requirements.ts) is fully cited: every clause id is proved by
 * at least one test, every id a test cites is in the manifest, and each citation sits on a
 * test of that clause's invariant (`// req: …` right above a test whose name carries the
 * `[INV-n]`).
 */
import { test } from 'node:test';
import assert from 'node:assert/strict';
import fs from 'node:fs';
import path from 'node:path';
import { REQUIREMENTS } from '../requirements.js';
import { citations, ROOT } from './citations.js';

test('the manifest splits every invariant of docs/architecture.md into clauses, one line each', () => {
  const doc = fs.readFileSync(path.join(ROOT, 'docs', 'architecture.md'), 'utf8');
  const invs = (doc.match(/^- \*\*INV-\d+ — /gm) ?? []).map((l) => /INV-\d+/.exec(l)![0]);
  assert.deepEqual([...new Set(Object.values(REQUIREMENTS).map((r) => r.inv))].sort(), [...invs].sort(), 'each invariant has clauses, and no clause names another');
  for (const [id, r] of Object.entries(REQUIREMENTS)) {
    assert.match(id, /^[a-z]+:[a-z0-9-]+$/, `${id}: area:clause, lowercase`);
    assert.ok(r.text.length > 10 && !r.text.includes('\n'), `${id}: one line of text`);
  }
});

test('every requirement id is cited by a test, and every id a test cites is in the manifest', () => {
  const cs = citations();
  assert.ok(cs.length > 50, `found ${cs.length} citations`);
  const cited = new Set(cs.flatMap((c) => c.ids));
  assert.deepEqual(Object.keys(REQUIREMENTS).filter((id) => !cited.has(id)), [], 'ids no test cites (test/requirements.ts)');
  assert.deepEqual(cs.flatMap((c) => c.ids.filter((id) => !(id in REQUIREMENTS)).map((id) => `${c.where}: ${id}`)), [], 'ids not in test/requirements.ts');
});

test('each citation stands right above a test that carries its invariant', () => {
  const bad: string[] = [];
  for (const c of citations()) {
    if (c.test === undefined) {
      bad.push(`${c.where}: no test( right below it`);
      continue;
    }
    for (const id of c.ids) {
      const inv = REQUIREMENTS[id]?.inv;
      if (inv && !c.test.includes(`[${inv}]`)) bad.push(`${c.where}: ${id} is ${inv}, the test below does not cite [${inv}]`);
    }
  }
  assert.deepEqual(bad, []);
});

import { test } from 'node:test';
import assert from 'node:assert/strict';
import fs from 'node:fs';
import path from 'node:path';
import { API_ROUTES } from '../../../src/protocol/index.js';

const DOC = path.resolve(import.meta.dirname, '../../../docs/api.md');

test("docs/api.md's route table lists every route of the contract (operationId, method, path) — and nothing else", () => {
  const rows = fs
    .readFileSync(DOC, 'utf8')
    .split('\n')
    .map((l) => /^\| `([A-Za-z]+)` \| `(GET|POST) (\/v1\/[^`]*)` \|/.exec(l))
    .filter((m): m is RegExpExecArray => m !== null)
    .map((m) => `${m[1]} ${m[2]} ${m[3]!.replace('/RUN', '/{run}').replace('/REF/', '/{ref}/').replace('/LEASE', '/{lease}').replace('/GRAPH', '/{graph}')}`);
  const contract = Object.entries(API_ROUTES).map(([name, r]) => `${name} ${r.method} ${r.path}`);
  assert.deepEqual([...rows].sort(), [...contract].sort());
});

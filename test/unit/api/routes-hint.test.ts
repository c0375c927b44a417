import { test } from 'node:test';
import assert from 'node:assert/strict';
import { ROUTES } from '../../../src/api/contract.js';
import { ERROR_CODES } from '../../../src/protocol/error-codes.js';

test("route_not_found's hint names every route of the contract (its first segment and each action)", () => {
  const hint = ERROR_CODES.route_not_found.hint;
  for (const r of ROUTES) {
    const parts = r.path.replace(/^\/v1\//, '').split('/').filter((p) => !p.startsWith('{'));
    for (const p of parts) assert.ok(hint.includes(p), `${r.method} ${r.path}: "${p}" is missing from the hint`);
  }
});

import { test } from 'node:test';
import assert from 'node:assert/strict';
import fs from 'node:fs';
import path from 'node:path';
import { ERROR_CODES } from '../../../src/protocol/error-codes.js';
import { BrigError, exitCodeFor, httpStatusOf, publicError, scrubHostPaths } from '../../../src/util/errors.js';

const DOC = path.resolve(import.meta.dirname, '../../../docs/errors.md');

test('docs/errors.md lists every code of the catalog with its kind, HTTP status, exit code and hint — and nothing else', () => {
  const rows = fs
    .readFileSync(DOC, 'utf8')
    .split('\n')
    .filter((l) => l.startsWith('| `'))
    .map((l) => l.slice(1, -1).split(/(?<!\\)\|/).map((c) => c.trim().replace(/\\\|/g, '|')));
  const documented = Object.fromEntries(rows.map(([code, kind, http, exit, hint]) => [code!.replace(/`/g, ''), { kind, http: Number(http), exit: Number(exit), hint }]));
  const catalog = Object.fromEntries(Object.entries(ERROR_CODES).map(([code, v]) => [code, { kind: v.kind, http: httpStatusOf(code as keyof typeof ERROR_CODES), exit: exitCodeFor(v.kind), hint: v.hint }]));
  assert.deepEqual(documented, catalog);
});

test('an unknown error reaches a record with its host paths scrubbed; brig\'s own keep their words', () => {
  const fsErr = Object.assign(new Error("ENOENT: no such file or directory, open '/root/.brig/runs/r-0123456789abcdef/run.json'"), { code: 'ENOENT' });
  const pub = publicError(fsErr);
  assert.equal(pub.code, 'internal');
  assert.doesNotMatch(pub.message, /\/root|\.brig\/runs/);
  assert.match(pub.message, /…\/run\.json/);
  assert.deepEqual(publicError(new BrigError('ref_too_large', 'out/x is over the per-file cap')), { code: 'ref_too_large', message: 'out/x is over the per-file cap' });
  assert.equal(scrubHostPaths('copy /var/lib/docker/volumes/brig-ws/_data failed'), 'copy …/_data failed');
  assert.equal(scrubHostPaths('no path here, just a/b'), 'no path here, just a/b');
});

import { test } from 'node:test';
import assert from 'node:assert/strict';
import { jqRefusal, parseJsonPath } from '../../../src/slice/index.js';
import { scrubPaths } from '../../../src/slice/helper-protocol.js';
import { parseBigJson, sqlString, stringifyBigJson } from '../../../src/slice/sql-guard.js';
import { loaderArgs } from '../../../src/slice/duckdb-pool.js';
import { capRefusal } from '../../../src/slice/helper-process.js';
import { sniffKind, utf8Boundary } from '../../../src/results/index.js';

// req: slice:jsonpath-compiled
test('[INV-5] jsonpath: the strict grammar compiles to a DuckDB path and refuses everything else', () => {
  const good: [string, string][] = [
    ['$', '$'],
    ['$.a.b_2', '$."a"."b_2"'],
    ["$['with space'][0]", '$."with space"[0]'],
    ['$["k"][*].v', '$."k"[*]."v"'],
    ['$.*', '$.*'],
  ];
  for (const [expr, duck] of good) {
    const r = parseJsonPath(expr);
    assert.ok(r.ok, expr);
    assert.equal(r.value.duckPath, duck);
  }
  for (const bad of ['a.b', '$..a', '$[?(@.a>1)]', '$.a[-1]', '$[0:2]', "$['a\\'b']", '$["a"b"]', "$.a'); DROP", '$.a b', '$[01]', `$.${'a'.repeat(1001)}`]) {
    assert.equal(parseJsonPath(bad).ok, false, bad);
  }
});

test('jq directives and module builtins are refused; ordinary filters pass', () => {
  assert.equal(jqRefusal('.a | select(.include == 1)'), undefined);
  assert.equal(jqRefusal('"import" | ascii_upcase'), undefined);
  assert.ok(jqRefusal('import "x" as $x; $x'));
  assert.ok(jqRefusal('  # c\n include "x"; .'));
  assert.ok(jqRefusal('module {}; .'));
  assert.ok(jqRefusal('get_search_list'));
  assert.ok(jqRefusal(''));
});

test('[INV-5] scrubPaths removes known files and any absolute path, keeps URLs readable', () => {
  const msg = 'Cannot open "/home/x/.brig/results/r/a.jsonl" or /etc/passwd near (/tmp/y)';
  const out = scrubPaths(msg, ['/home/x/.brig/results/r/a.jsonl']);
  assert.ok(!out.includes('/home') && !out.includes('/etc') && !out.includes('/tmp'), out);
  assert.match(out, /<ref>/);
  assert.match(scrubPaths('see https://example.com/a'), /https:\/\/example.com\/a/);
});

test('big integers and uint64 fields survive the serialize round trip exactly', () => {
  const text = '{"q":18446744073709551615,"v":{"value":12345678901234567890},"s":"18446744073709551615","n":-5,"f":1.5}';
  const parsed = parseBigJson(text);
  assert.equal(stringifyBigJson(parsed), text);
  assert.equal(sqlString("it's"), "'it''s'");
  assert.throws(() => sqlString('a\0b'));
});

test('helpers keep only loader flags from execArgv', () => {
  assert.deepEqual(loaderArgs(['--import', 'tsx', '--test', '--test-reporter=tap', '--max-old-space-size=100']), ['--import', 'tsx']);
  assert.deepEqual(loaderArgs(['--import=tsx', '--require', 'x.cjs']), ['--import=tsx', '--require', 'x.cjs']);
});

test('kind sniffing: the bytes decide, the name proposes', () => {
  const b = (s: string) => Buffer.from(s);
  assert.equal(sniffKind('x.jsonl', b('{"a":1}\n{"a":2}\n')), 'jsonl');
  assert.equal(sniffKind('x.out', b('{"a":1}\n{"a":2}\n{"a":3}\n')), 'jsonl');
  assert.equal(sniffKind('x.json', b('{"a":\n 1}\n')), 'json');
  assert.equal(sniffKind('result', b('[1,2,3]')), 'json');
  assert.equal(sniffKind('t.csv', b('a,b\n1,2\n')), 'csv');
  assert.equal(sniffKind('notes.md', b('# hello\n')), 'text');
  assert.equal(sniffKind('x.json', Buffer.from([0x7b, 0, 0x7d])), 'binary');
  assert.equal(sniffKind('x.txt', Buffer.from([0xff, 0xfe, 0x41])), 'binary');
  // A head cut inside a multi-byte character is still text.
  assert.equal(sniffKind('x.txt', Buffer.from('aé').subarray(0, 2)), 'text');
  assert.equal(utf8Boundary(Buffer.from('aé€'), 4), 3);
  assert.equal(utf8Boundary(Buffer.from('aé€'), 6), 6);
});

// req: limits:helper-os-caps
test('[INV-9] a helper\'s address-space cap is checked against its peak size, which its size may fall below after it capped itself', () => {
  const MIB = 1024 ** 2;
  const budget = 4096 * MIB;
  // Capped at 1,200 MiB + budget; a mapping freed since leaves it at 1,150 MiB — still sound.
  assert.equal(capRefusal({ peak: 1200 * MIB, soft: 1200 * MIB + budget, hard: 1200 * MIB + budget }, budget), undefined);
  assert.equal(capRefusal({ peak: 1300 * MIB, soft: 1200 * MIB + budget, hard: 1200 * MIB + budget }, budget), undefined);
  // More than the budget over anything it ever was, a soft limit under a looser hard one, none at all.
  assert.match(capRefusal({ peak: 1200 * MIB, soft: 1201 * MIB + budget, hard: 1201 * MIB + budget }, budget) ?? '', /more than its peak size/);
  assert.match(capRefusal({ peak: 1200 * MIB, soft: 1200 * MIB, hard: 1200 * MIB + budget }, budget) ?? '', /soft = hard/);
  assert.match(capRefusal({ peak: 1200 * MIB, soft: Infinity, hard: Infinity }, budget) ?? '', /more than its peak size/);
  assert.match(capRefusal({ peak: NaN, soft: 1200 * MIB, hard: 1200 * MIB }, budget) ?? '', /more than its peak size/);
});

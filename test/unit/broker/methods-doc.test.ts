/**
 * docs/broker.md's method table is the protocol's: every method of METHODS is a row with the
 * capability it needs, and no row names a method that does not exist.
 */
import { test } from 'node:test';
import assert from 'node:assert/strict';
import fs from 'node:fs';
import path from 'node:path';
import { fileURLToPath } from 'node:url';
import { METHODS, METHOD_NAMES } from '../../../src/broker/protocol.js';

const DOC = path.join(path.dirname(fileURLToPath(import.meta.url)), '..', '..', '..', 'docs', 'broker.md');

test('docs/broker.md lists every broker method with its capability — and nothing else', () => {
  const text = fs.readFileSync(DOC, 'utf8');
  const section = text.slice(text.indexOf('## Methods'), text.indexOf('\n## ', text.indexOf('## Methods') + 1));
  const rows = [...section.matchAll(/^\| `([a-z.]+)` \| (?:`([a-z.]+)`|—) \|/gm)].map((m) => [m[1]!, m[2] ?? null] as const);
  assert.deepEqual(rows.map(([m]) => m).sort(), [...METHOD_NAMES].sort(), 'the table names exactly the protocol\'s methods');
  for (const [method, cap] of rows) assert.equal(cap, METHODS[method as keyof typeof METHODS].cap, `${method}'s capability`);
});

test('docs/agents.md lists every agent tool, in the order they are offered', async () => {
  const { AGENT_TOOL_NAMES } = await import('../../../src/agents/tools.js');
  const text = fs.readFileSync(path.join(path.dirname(DOC), 'agents.md'), 'utf8');
  const section = text.slice(text.indexOf('## Tools'), text.indexOf('\n## ', text.indexOf('## Tools') + 1));
  const rows = [...section.matchAll(/^\| `([a-z_]+)` \|/gm)].map((m) => m[1]);
  assert.deepEqual(rows, AGENT_TOOL_NAMES);
});

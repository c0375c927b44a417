import { test } from 'node:test';
import assert from 'node:assert/strict';
import { parseArgs, type FlagSpec } from '../../../src/cli/command.js';

const FLAGS: FlagSpec[] = [
  { name: 'max-rows', value: 'N', description: 'rows' },
  { name: 'cap', value: 'CAP', repeatable: true, description: 'caps' },
  { name: 'json', description: 'json' },
];
const code = (e: unknown) => (e as { code?: string }).code;

test('parseArgs reads the declared flags: --x v, --x=v, repeats, booleans, positionals, and `--` passes the rest through', () => {
  const p = parseArgs(['a', '--max-rows', '5', '--cap=exec', '--cap', 'spawn', '--json', 'b', '--', '--json', '-x'], FLAGS);
  assert.deepEqual(p.positionals, ['a', 'b']);
  assert.deepEqual(p.flags.get('max-rows'), ['5']);
  assert.deepEqual(p.flags.get('cap'), ['exec', 'spawn']);
  assert.deepEqual([...p.bools], ['json']);
  assert.deepEqual(p.rest, ['--json', '-x']);
});

test('parseArgs is strict: an unknown flag names the nearest known one; a missing value and a value on a boolean are errors', () => {
  assert.throws(() => parseArgs(['--max-row', '3'], FLAGS), (e: { code?: string; hint?: string; message?: string }) => code(e) === 'invalid_input' && e.message === 'unknown flag --max-row' && e.hint === 'Did you mean --max-rows?');
  assert.throws(() => parseArgs(['--hlep'], FLAGS), (e: { hint?: string }) => e.hint === 'Did you mean --help?');
  assert.throws(() => parseArgs(['--zzzzzzzz'], FLAGS), (e: { hint?: string }) => /Known flags: --max-rows --cap --json --help/.test(e.hint ?? ''));
  assert.throws(() => parseArgs(['--max-rows'], FLAGS), (e: { message?: string }) => e.message === '--max-rows needs a value');
  assert.throws(() => parseArgs(['--json=yes'], FLAGS), (e: { message?: string }) => e.message === '--json takes no value');
});

test('parseArgs still takes the older { valued, booleans } spec', () => {
  const p = parseArgs(['--drain', '3', '--no-steer-inject'], { valued: ['drain'], booleans: ['no-steer-inject'] });
  assert.deepEqual(p.flags.get('drain'), ['3']);
  assert.ok(p.bools.has('no-steer-inject'));
});

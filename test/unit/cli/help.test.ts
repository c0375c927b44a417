import { test } from 'node:test';
import assert from 'node:assert/strict';
import fs from 'node:fs';
import os from 'node:os';
import path from 'node:path';
import { runCli } from '../../helpers/cli.js';
import { COMMANDS, GROUPS, TABLE, groupMembers } from '../../../src/cli/registry.js';
import { flagLabel } from '../../../src/cli/help.js';
import { readVersion } from '../../../src/cli/commands/version.js';

const ROOT = path.resolve(import.meta.dirname, '../../..');
const home = fs.mkdtempSync(path.join(os.tmpdir(), 'brig-help-'));
process.on('exit', () => fs.rmSync(home, { recursive: true, force: true }));
const brig = (...argv: string[]) => runCli(argv, { home });

test('every command declares its flags (one line each, no duplicates) and at least one example; the table and the module agree', async () => {
  for (const [key, entry] of Object.entries(COMMANDS)) {
    const cmd = await entry.load();
    assert.equal(cmd.name, key, `${key}: name`);
    assert.equal(cmd.summary, entry.summary, `${key}: the registry's summary is the command's`);
    assert.ok(cmd.usage.startsWith(`brig ${key}`), `${key}: usage starts with the command: ${cmd.usage}`);
    assert.ok(cmd.examples.length >= 1, `${key}: an example`);
    for (const e of cmd.examples) assert.match(e, /\bbrig /, `${key}: an example is a brig command line: ${e}`);
    assert.ok(cmd.examples.some((e) => e.includes(`brig ${key}`)), `${key}: an example runs the command itself`);
    const names = cmd.flags.map((f) => f.name);
    assert.equal(new Set(names).size, names.length, `${key}: duplicate flags`);
    for (const f of cmd.flags) {
      assert.match(f.name, /^[a-z][a-z0-9-]*$/, `${key}: flag name ${f.name}`);
      assert.ok(f.description.length > 0 && !f.description.includes('\n'), `${key} --${f.name}: a one-line description`);
      assert.notEqual(f.name, 'help', `${key}: --help is the CLI's, not a command's`);
    }
  }
});

test('`brig COMMAND --help` lists every flag with its description and every example; `brig help COMMAND` prints the same', async () => {
  for (const key of Object.keys(COMMANDS)) {
    const cmd = await COMMANDS[key]!.load();
    const r = await brig(...key.split(' '), '--help');
    assert.equal(r.code, 0, `${key}: ${r.err}`);
    assert.equal(r.err, '');
    assert.ok(r.out.startsWith(`${cmd.summary}\n\nUsage:\n  ${cmd.usage}\n`), `${key}:\n${r.out}`);
    for (const f of cmd.flags) assert.match(r.out, new RegExp(`\\n {6}${flagLabel(f).replace(/[|.]/g, '\\$&')} +${f.description.replace(/[.*+?^${}()|[\]\\]/g, '\\$&')}`), `${key}: --${f.name}`);
    assert.match(r.out, /\n {2}-h, --help +show this help\n/);
    for (const e of cmd.examples) assert.ok(r.out.includes(`\n  ${e}\n`), `${key}: example ${e}`);
    const viaHelp = await brig('help', ...key.split(' '));
    assert.equal(viaHelp.code, 0);
    assert.equal(viaHelp.out, r.out, `brig help ${key}`);
    assert.equal((await brig(...key.split(' '), '-h')).out, r.out, `${key} -h`);
  }
});

test('a group (`brig ref --help`, `brig help lease`) lists its subcommands with their summaries; bare, it is a usage error', async () => {
  for (const g of ['ref', 'lease', 'audit', 'policy', 'image']) {
    assert.ok(Object.hasOwn(GROUPS, g), g);
    const r = await brig(g, '--help');
    assert.equal(r.code, 0, r.err);
    assert.ok(r.out.startsWith(`${GROUPS[g]!.summary}\n`));
    assert.match(r.out, new RegExp(`Usage:\\n  brig ${g} COMMAND`));
    for (const k of groupMembers(TABLE, g)) assert.match(r.out, new RegExp(`\\n  ${k.slice(g.length + 1)} +${COMMANDS[k]!.summary.replace(/[.*+?^${}()|[\]\\]/g, '\\$&')}\\n`), k);
    assert.equal((await brig('help', g)).out, r.out);
    const bare = await brig(g);
    assert.equal(bare.code, 2);
    assert.equal(bare.out, r.out);
  }
  const typo = await brig('lease', 'lsit');
  assert.equal(typo.code, 2);
  assert.match(typo.err, /Did you mean `brig lease list`\?/);
});

test('`brig --help` lists every top-level command and group once, with its summary', async () => {
  const r = await brig('--help');
  assert.equal(r.code, 0);
  const tops = new Set(Object.keys(COMMANDS).map((k) => k.split(' ')[0]!));
  for (const t of tops) {
    const summary = GROUPS[t]?.summary ?? COMMANDS[t]!.summary;
    assert.equal(r.out.split('\n').filter((l) => l.startsWith(`  ${t} `)).length, 1, t);
    assert.ok(r.out.includes(summary), t);
  }
  assert.equal((await brig('help')).out, r.out);
  const bare = await brig();
  assert.equal(bare.code, 2, 'no command is a usage error');
  assert.equal(bare.out, r.out);
});

test('--help after `--` belongs to the child, not to brig', async () => {
  const r = await brig('ref', 'grep', '--', '--help');
  assert.equal(r.code, 2);
  assert.doesNotMatch(r.out, /Usage:/);
  assert.match(r.err, /missing arguments/);
});

test('unknown commands and help topics name the nearest', async () => {
  const r = await brig('spwan');
  assert.equal(r.code, 2);
  assert.match(r.err, /unknown command: spwan \[invalid_input\]\n  → Did you mean `brig spawn`\?/);
  const h = await brig('help', 'lease', 'shwo');
  assert.equal(h.code, 2);
  assert.match(h.err, /Did you mean `brig help lease show`\?/);
});

test('`brig --version` and `brig version` print package.json\'s version, read next to the module (src/ under tsx, dist/ once built)', async () => {
  const pkg = JSON.parse(fs.readFileSync(path.join(ROOT, 'package.json'), 'utf8')) as { version: string };
  for (const argv of [['--version'], ['version']]) {
    const r = await brig(...argv);
    assert.equal(r.code, 0);
    assert.equal(r.out, `brig ${pkg.version}\n`);
  }
  assert.equal(JSON.parse((await brig('version', '--json')).out).version, pkg.version);
  // dist/cli/commands/version.js sits as deep under the root as src/cli/commands/version.ts.
  assert.equal(readVersion(new URL(`file://${path.join(ROOT, 'dist/cli/commands/version.js')}`).href), pkg.version);
});

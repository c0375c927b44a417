/**
 * Completion of ids (issue 27 item 7): the bash, zsh and fish scripts `brig completion` prints,
 * run by the real shells, offer this home's run ids where the usage names a RUN (one operand,
 * or many for `wait RUN...`), after a flag whose value is one (`list --root RUN`), and the
 * agent names for `agents show AGENT` and `spawn --agent`; not where the operand is no id
 * (`steer RUN MESSAGE` second word). They ask a real `brig` on PATH (`brig completion ids`)
 * over records on disk; a home it cannot read gives no ids and no error on the terminal.
 */
import { test } from 'node:test';
import assert from 'node:assert/strict';
import { execFileSync, spawnSync } from 'node:child_process';
import fs from 'node:fs';
import os from 'node:os';
import path from 'node:path';
import { brigPaths } from '../../../src/config/index.js';
import { RunStore } from '../../../src/runs/index.js';
import { recordOf } from '../../helpers/run-record.js';

const ROOT = path.resolve(import.meta.dirname, '../../..');
const MAIN = path.join(ROOT, 'dist/cli/main.js');

const tmp = fs.mkdtempSync(path.join(os.tmpdir(), 'brig-complete-ids-'));
process.on('exit', () => fs.rmSync(tmp, { recursive: true, force: true }));
const home = path.join(tmp, 'home');
const bin = path.join(tmp, 'bin');
fs.mkdirSync(bin);
// The scripts call `brig` by name, as a user's shell would find it.
fs.writeFileSync(path.join(bin, 'brig'), `#!/bin/sh\nexec "${process.execPath}" "${MAIN}" "$@"\n`, { mode: 0o755 });

function env(extra: Record<string, string> = {}): NodeJS.ProcessEnv {
  const e: NodeJS.ProcessEnv = {};
  for (const [k, v] of Object.entries(process.env)) if (!k.startsWith('BRIG_')) e[k] = v;
  return { ...e, PATH: `${bin}:${e.PATH}`, BRIG_HOME: home, ...extra };
}

function script(shell: 'bash' | 'zsh' | 'fish'): string {
  const file = path.join(tmp, `brig.${shell}`);
  fs.writeFileSync(file, execFileSync(process.execPath, [MAIN, 'completion', shell], { env: env(), encoding: 'utf8' }));
  return file;
}

const lines = (s: string) => s.split('\n').filter(Boolean);
const q = (w: string) => `'${w.replace(/'/g, `'\\''`)}'`;

function bash(file: string, words: string[], e = env()): string[] {
  return lines(execFileSync('bash', ['-c', `source "$1"; COMP_WORDS=(${words.map(q).join(' ')}); COMP_CWORD=${words.length - 1}; COMPREPLY=(); _brig; printf '%s\\n' "\${COMPREPLY[@]}"`, '_', file], { env: e, encoding: 'utf8' }));
}

/** zsh outside a widget: compadd and _files stand in, printing what they are given. */
function zsh(file: string, words: string[]): string[] {
  return lines(execFileSync('zsh', ['-c', `compdef() { :; }; _describe() { local a=\${@[-1]}; print -rl -- "\${(@P)a}"; }; _files() { print -- '<files>'; }; compadd() { shift; print -rl -- "$@"; }; source "$1"; shift; words=("$@"); CURRENT=$#words; _brig`, '_', file, ...words], { env: env(), encoding: 'utf8' }));
}

/** fish's own completion engine on a command line (`complete -C`). */
function fish(file: string, line: string): string[] {
  return lines(execFileSync('fish', ['-c', `source $argv[1]; complete -C $argv[2]`, file, line], { env: env(), encoding: 'utf8' })).map((l) => l.split('\t')[0]!);
}

const has = (shell: string) => spawnSync(shell, ['-c', 'true']).status === 0;

const ids = ['r-00000000000000a1', 'r-00000000000000a2', 'r-00000000000000b3'];

test('setup: three runs on record', async () => {
  const store = new RunStore(brigPaths(home).runs);
  for (const id of ids) await store.save(recordOf({ id }));
  const r = spawnSync(process.execPath, [MAIN, 'completion', 'ids', 'run'], { env: env(), encoding: 'utf8' });
  assert.equal(r.status, 0, r.stderr);
  assert.deepEqual(lines(r.stdout).sort(), ids);
});

test('bash completes run ids where the usage names RUN, and agent names, and nothing else', () => {
  const f = script('bash');
  assert.deepEqual(bash(f, ['brig', 'kill', 'r-']).sort(), ids);
  assert.deepEqual(bash(f, ['brig', 'kill', '--confirm', 'r-00000000000000a']).sort(), ids.slice(0, 2), 'a boolean flag before the operand');
  assert.deepEqual(bash(f, ['brig', 'wait', ids[0]!, '--timeout', '2m', 'r-00000000000000b']), [ids[2]], 'wait RUN... takes many; a valued flag and its value skipped');
  assert.deepEqual(bash(f, ['brig', 'ref', 'list', 'r-00000000000000b']), [ids[2]], 'a subcommand\'s operand');
  assert.deepEqual(bash(f, ['brig', 'list', '--root', 'r-']).sort(), ids, 'a flag whose value is a RUN');
  assert.deepEqual(bash(f, ['brig', 'steer', ids[0]!, 'r-']), [], 'MESSAGE is no id');
  assert.deepEqual(bash(f, ['brig', 'list', '--label', 'r-']), [], 'a LABEL is no id');
  assert.ok(bash(f, ['brig', 'agents', 'show', '']).length > 0, 'the shipped agent specs');
  assert.deepEqual(bash(f, ['brig', 'spawn', '--agent', '']).sort(), bash(f, ['brig', 'agents', 'show', '']).sort());
  // A home brig cannot read gives no ids, and the TAB prints nothing on the terminal.
  const broken = path.join(tmp, 'not-a-dir');
  fs.writeFileSync(broken, 'x');
  const r = spawnSync('bash', ['-c', `source "$1"; COMP_WORDS=(brig kill r-); COMP_CWORD=2; _brig; echo "n=\${#COMPREPLY[@]}"`, '_', f], { env: env({ BRIG_HOME: broken }), encoding: 'utf8' });
  assert.equal(r.stdout.trim(), 'n=0');
  assert.equal(r.stderr, '');
});

test('zsh completes run ids and agent names the same way', (t) => {
  if (!has('zsh')) return t.skip('zsh is not installed (apt-get install zsh)');
  const f = script('zsh');
  assert.deepEqual(zsh(f, ['brig', 'kill', 'r-']).sort(), ids);
  assert.deepEqual(zsh(f, ['brig', 'wait', ids[0]!, '']).sort(), ids);
  assert.deepEqual(zsh(f, ['brig', 'list', '--root', '']).sort(), ids);
  assert.deepEqual(zsh(f, ['brig', 'steer', ids[0]!, '']), ['<files>']);
  assert.ok(zsh(f, ['brig', 'agents', 'show', '']).length > 0);
});

test('fish: commands, subcommands, flags, choices and ids from its own completion engine', (t) => {
  if (!has('fish')) return t.skip('fish is not installed (apt-get install fish)');
  const f = script('fish');
  execFileSync('fish', ['-n', f]);
  assert.deepEqual(fish(f, 'brig sp'), ['spawn']);
  assert.deepEqual(fish(f, 'brig lease '), ['list', 'revoke', 'show']);
  assert.deepEqual(fish(f, 'brig help ref js'), ['jsonpath']);
  assert.deepEqual(fish(f, 'brig list --status r'), ['running']);
  assert.deepEqual(fish(f, 'brig kill --').sort(), ['--confirm', '--help', '--json']);
  assert.deepEqual(fish(f, 'brig kill r-').sort(), ids);
  assert.deepEqual(fish(f, 'brig wait r-00000000000000a1 --timeout 2m r-00000000000000b'), [ids[2]]);
  assert.deepEqual(fish(f, 'brig list --root r-').sort(), ids);
  assert.deepEqual(fish(f, 'brig steer r-00000000000000a1 r-'), []);
  assert.ok(fish(f, 'brig agents show ').length > 0);
});

import { test } from 'node:test';
import assert from 'node:assert/strict';
import { execFileSync, spawnSync } from 'node:child_process';
import fs from 'node:fs';
import os from 'node:os';
import path from 'node:path';
import { runCli } from '../../helpers/cli.js';
import { completionModel } from '../../../src/cli/commands/completion.js';
import { COMMANDS, GROUPS, TABLE } from '../../../src/cli/registry.js';

const tmp = fs.mkdtempSync(path.join(os.tmpdir(), 'brig-completion-'));
process.on('exit', () => fs.rmSync(tmp, { recursive: true, force: true }));

async function script(shell: 'bash' | 'zsh'): Promise<string> {
  const r = await runCli(['completion', shell], { home: tmp });
  assert.equal(r.code, 0, r.err);
  const file = path.join(tmp, `brig.${shell}`);
  fs.writeFileSync(file, r.out);
  return file;
}

const has = (shell: string) => spawnSync(shell, ['-c', 'true']).status === 0;

/** What bash's _brig offers for the words typed so far (the last one is being completed). */
function bashComplete(file: string, words: string[]): string[] {
  const arr = words.map((w) => `'${w.replace(/'/g, `'\\''`)}'`).join(' ');
  const out = execFileSync('bash', ['-c', `source "$1"; COMP_WORDS=(${arr}); COMP_CWORD=${words.length - 1}; COMPREPLY=(); _brig; printf '%s\\n' "\${COMPREPLY[@]}"`, '_', file], { encoding: 'utf8' });
  return out.split('\n').filter(Boolean);
}

test('the bash script is valid bash and completes commands, subcommands, every flag of every command, and closed value sets', async () => {
  const file = await script('bash');
  execFileSync('bash', ['-n', file]);
  assert.match(fs.readFileSync(file, 'utf8'), /^complete -o default -F _brig brig$/m);
  assert.deepEqual(bashComplete(file, ['brig', 'sp']), ['spawn']);
  assert.ok(bashComplete(file, ['brig', '']).includes('lease'));
  assert.deepEqual(bashComplete(file, ['brig', 'lease', '']), ['list', 'revoke', 'show']);
  assert.deepEqual(bashComplete(file, ['brig', 'help', 'ref', 'js']), ['jsonpath']);
  assert.deepEqual(bashComplete(file, ['brig', 'list', '--status', 'r']), ['running']);
  assert.deepEqual(bashComplete(file, ['brig', 'spawn', '--', 'sh', '--']), [], 'after `--` the words are the child\'s');
  const model = await completionModel(TABLE);
  // (`brig help` completes topics, not flags.)
  for (const c of model.commands.filter((x) => x.key !== 'help')) {
    const offered = bashComplete(file, ['brig', ...c.key.split(' '), '--']);
    assert.deepEqual(offered.sort(), [...c.flags.map((f) => `--${f.name}`), '--help'].sort(), c.key);
  }
  assert.deepEqual(model.commands.map((c) => c.key).sort(), Object.keys(COMMANDS).sort());
  assert.deepEqual(model.groups.map((g) => g.name).sort(), Object.keys(GROUPS).sort());
});

test('the zsh script is valid zsh and offers commands and flags with their descriptions', async (t) => {
  const file = await script('zsh');
  assert.match(fs.readFileSync(file, 'utf8'), /^#compdef brig\n/);
  if (!has('zsh')) {
    t.skip('zsh is not installed (apt-get install zsh); the script was generated but not run');
    return;
  }
  execFileSync('zsh', ['-n', file]);
  // Outside a completion widget: stand-ins for the completion builtins print what they get.
  const run = (words: string[]) =>
    execFileSync(
      'zsh',
      ['-c', `compdef() { :; }; _describe() { local a=\${@[-1]}; print -rl -- "\${(@P)a}"; }; _files() { print -- '<files>'; }; compadd() { shift; print -rl -- "$@"; }; source "$1"; shift; words=("$@"); CURRENT=$#words; _brig`, '_', file, ...words],
      { encoding: 'utf8' },
    ).split('\n').filter(Boolean);
  assert.ok(run(['brig', 'sp']).includes('spawn:Run a child (a command, a script or an agent) in a fresh hardened jail through the supervisor.'));
  assert.deepEqual(run(['brig', 'lease', '']).map((l) => l.split(':')[0]), ['list', 'revoke', 'show']);
  assert.ok(run(['brig', 'spawn', '--sc']).includes('--script:FILE: run an ES-module script with the brig SDK (instead of `-- ARGV...`)'));
  assert.deepEqual(run(['brig', 'result', 'RUN', '--strategy', '']), ['auto', 'always', 'never']);
  assert.deepEqual(run(['brig', 'spawn', '--', 'sh', '']), ['<files>']);
});

test('brig completion refuses an unknown shell, naming the ones it knows', async () => {
  const r = await runCli(['completion', 'tcsh'], { home: tmp });
  assert.equal(r.code, 2);
  assert.match(r.err, /completion needs one shell: bash, zsh, fish/);
  const k = await runCli(['completion', 'ids', 'graph'], { home: tmp });
  assert.equal(k.code, 2, 'ids of a kind it does not know');
});

/**
 * `brig agents list` / `brig agents show NAME` over a temp BRIG_HOME: the home's own spec
 * beside the shipped ones, a broken spec reported with its error (never half-used), the tools
 * a spec would be offered under the home's policy, and an unknown name answered with the nearest.
 */
import { test } from 'node:test';
import assert from 'node:assert/strict';
import fs from 'node:fs';
import os from 'node:os';
import path from 'node:path';
import { runCli } from '../../helpers/cli.js';

const SPEC = (fm: string, body: string) => `---\n${fm}\n---\n${body}\n`;

function home(t: { after: (fn: () => void) => void }): string {
  const h = fs.mkdtempSync(path.join(os.tmpdir(), 'brig-agents-cli-'));
  t.after(() => fs.rmSync(h, { recursive: true, force: true }));
  fs.mkdirSync(path.join(h, 'agents'));
  fs.writeFileSync(path.join(h, 'agents', 'scout.md'), SPEC('name: scout\ndescription: Looks around and reports what it finds.\ntools: [shell, read_file, spawn]\nmaxSteps: 12', 'Look around /workspace.\nReport briefly.'));
  fs.writeFileSync(path.join(h, 'agents', 'broken.md'), SPEC('name: broken\ndescriptio: a typo in a key', 'Never loaded.'));
  return h;
}

test('brig agents list: a table of the home\'s and the shipped specs with their source; a broken spec is named with its error', async (t) => {
  const h = home(t);
  const r = await runCli(['agents', 'list'], { home: h });
  assert.equal(r.code, 0, r.err);
  const lines = r.out.trimEnd().split('\n');
  assert.match(lines[0]!, /^NAME +ROLE +SOURCE +DESCRIPTION$/);
  const rows = Object.fromEntries(lines.slice(1).map((l) => [l.split(/\s+/)[0]!, l.split(/\s{2,}/)]));
  assert.deepEqual(Object.keys(rows), ['coordinator', 'general', 'researcher', 'scout'], 'sorted by name, the broken one left out');
  assert.deepEqual(rows.scout!.slice(0, 4), ['scout', 'worker', 'home', 'Looks around and reports what it finds.']);
  assert.deepEqual(rows.general!.slice(1, 3), ['worker', 'shipped']);
  assert.deepEqual(rows.coordinator!.slice(1, 3), ['coordinator', 'shipped']);
  assert.match(r.err, /broken agent spec, not loaded: agent spec .*broken\.md:3: unknown key "descriptio"/);
  assert.match(r.err, /→ Did you mean "description"\?/);

  const j = JSON.parse((await runCli(['agents', 'list', '--json'], { home: h })).out) as {
    agents: { name: string; role: string; source: string; file: string; description: string }[];
    broken: { file: string; error: { code: string; message: string; hint: string } }[];
  };
  assert.deepEqual(j.agents.map((a) => [a.name, a.source]), [['coordinator', 'shipped'], ['general', 'shipped'], ['researcher', 'shipped'], ['scout', 'home']]);
  assert.equal(j.agents[3]!.file, path.join(h, 'agents', 'scout.md'));
  assert.equal(j.broken.length, 1);
  assert.equal(j.broken[0]!.file, path.join(h, 'agents', 'broken.md'));
  assert.equal(j.broken[0]!.error.code, 'invalid_input');
  assert.match(j.broken[0]!.error.message, /unknown key "descriptio"/);
});

test('brig agents list: a home spec shadows the shipped one of its name', async (t) => {
  const h = home(t);
  fs.writeFileSync(path.join(h, 'agents', 'general.md'), SPEC('name: general\ndescription: The operator\'s own general.', 'Do it my way.'));
  const j = JSON.parse((await runCli(['agents', 'list', '--json'], { home: h })).out) as { agents: { name: string; source: string; description: string }[] };
  const general = j.agents.filter((a) => a.name === 'general');
  assert.deepEqual(general.map((a) => [a.source, a.description]), [['home', "The operator's own general."]]);
});

test('brig agents show NAME: frontmatter, instructions, and the tools it would be offered under the home\'s policy (root profile)', async (t) => {
  const h = home(t);
  const r = await runCli(['agents', 'show', 'scout'], { home: h });
  assert.equal(r.code, 0, r.err);
  assert.match(r.out, new RegExp(`^agent scout  \\(home: ${path.join(h, 'agents', 'scout.md').replace(/[.*+?^${}()|[\]\\]/g, '\\$&')}\\)\n`));
  assert.match(r.out, /\n {2}description: +Looks around and reports what it finds\.\n/);
  assert.match(r.out, /\n {2}role: +worker\n/);
  assert.match(r.out, /\n {2}tools: +shell, read_file, spawn\n/);
  assert.match(r.out, /\n {2}maxSteps: +12\n/);
  assert.match(r.out, /\noffered under profile root \(.*policies\/default\.yaml\):\n/);
  // The spec narrows to what it lists (and the lease allows); finish is always offered.
  assert.match(r.out, /\n {2}tools: shell, read_file, spawn, finish\n/);
  assert.ok(r.out.endsWith('--- instructions\nLook around /workspace.\nReport briefly.\n'), r.out);

  const j = JSON.parse((await runCli(['agents', 'show', 'scout', '--json'], { home: h })).out) as {
    name: string; source: string; file: string; instructions: string;
    frontmatter: Record<string, unknown>;
    offered: { profile: string; policy: string; caps: string[]; tools: string[] };
  };
  assert.equal(j.source, 'home');
  assert.deepEqual(j.frontmatter, { name: 'scout', description: 'Looks around and reports what it finds.', tools: ['shell', 'read_file', 'spawn'], maxSteps: 12, workspaceAware: false, role: 'worker' });
  assert.equal(j.instructions, 'Look around /workspace.\nReport briefly.');
  assert.equal(j.offered.profile, 'root');
  assert.ok(j.offered.caps.includes('llm') && j.offered.caps.includes('exec'), j.offered.caps.join(','));
  assert.deepEqual(j.offered.tools, ['shell', 'read_file', 'spawn', 'finish']);

  // A coordinator (shipped) keeps delegation and drill-in only; no shell.
  const c = JSON.parse((await runCli(['agents', 'show', 'coordinator', '--json'], { home: h })).out) as { source: string; offered: { tools: string[] } };
  assert.equal(c.source, 'shipped');
  assert.ok(c.offered.tools.includes('spawn') && c.offered.tools.includes('ref_sql'));
  assert.ok(!c.offered.tools.includes('shell'));
});

test('brig agents show: a spec naming a narrower profile is shown under that profile', async (t) => {
  const h = home(t);
  fs.writeFileSync(path.join(h, 'agents', 'solo.md'), SPEC('name: solo\ndescription: Works alone.\nprofile: worker', 'Work alone.'));
  const j = JSON.parse((await runCli(['agents', 'show', 'solo', '--json'], { home: h })).out) as { offered: { profile: string; caps: string[]; tools: string[] } };
  assert.equal(j.offered.profile, 'worker');
  assert.ok(!j.offered.caps.includes('spawn'));
  assert.ok(j.offered.tools.includes('shell'));
  assert.ok(!j.offered.tools.includes('spawn'), 'the worker profile cannot delegate: no spawn tool');
});

test('brig agents show: an unknown name is refused with the nearest one (exit 2); a broken spec with its error; no NAME is a usage error', async (t) => {
  const h = home(t);
  const near = await runCli(['agents', 'show', 'genral'], { home: h });
  assert.equal(near.code, 2);
  assert.match(near.err, /no agent spec "genral" \[invalid_input\]/);
  assert.match(near.err, /Did you mean "general"\?/);
  const nearJson = JSON.parse((await runCli(['agents', 'show', 'scuot', '--json'], { home: h })).out) as { error: { code: string; hint: string } };
  assert.equal(nearJson.error.code, 'invalid_input');
  assert.match(nearJson.error.hint, /Did you mean "scout"\?/);
  const broken = await runCli(['agents', 'show', 'broken'], { home: h });
  assert.equal(broken.code, 2);
  assert.match(broken.err, /broken\.md:3: unknown key "descriptio"/);
  const none = await runCli(['agents', 'show'], { home: h });
  assert.equal(none.code, 2);
  assert.match(none.err, /agents show takes one NAME/);
  const bare = await runCli(['agents'], { home: h });
  assert.equal(bare.code, 2, 'a bare group prints its page and exits 2');
  assert.match(bare.out, /\n {2}list +/);
  assert.match(bare.out, /\n {2}show +/);
});

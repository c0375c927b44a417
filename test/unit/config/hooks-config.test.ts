/**
 * Operator hooks in config.yaml (issue 22 item 4): `hooks.prepareSpawn` / `hooks.onEnded` are a
 * command (argv, no shell) or a webhook to loopback / a unix socket only; strict like the rest
 * of the file, each refusal with its line.
 */
import { test } from 'node:test';
import assert from 'node:assert/strict';
import { parseHooksConfig, parseModelsConfig } from '../../../src/config/index.js';

const problems = (r: ReturnType<typeof parseHooksConfig>): string => (r.ok ? '' : [r.error.message, ...((r.error.data?.problems as string[] | undefined) ?? [])].join('\n'));

test('a command hook and a loopback webhook are accepted, with the default timeout', () => {
  const r = parseHooksConfig(
    `hooks:
  prepareSpawn:
    command: [/usr/local/bin/prep, --json]
    rollback: [/usr/local/bin/unprep]
  onEnded:
    webhook: http://127.0.0.1:8099/ended
    timeoutMs: 2000
`,
    'config.yaml',
  );
  assert.ok(r.ok, problems(r));
  assert.deepEqual(r.value.prepareSpawn, { command: ['/usr/local/bin/prep', '--json'], rollback: ['/usr/local/bin/unprep'], timeoutMs: 10_000 });
  assert.deepEqual(r.value.onEnded, { webhook: 'http://127.0.0.1:8099/ended', timeoutMs: 2000 });
});

test('unix-socket and [::1] / localhost webhooks are accepted', () => {
  for (const url of ['unix:///run/ops/hooks.sock:/ended', 'http://[::1]:9000/x', 'http://localhost:9000/x', 'http://127.3.2.1/x']) {
    const r = parseHooksConfig(`hooks:\n  onEnded:\n    webhook: ${url}\n`, 'config.yaml');
    assert.ok(r.ok, `${url}: ${problems(r)}`);
  }
});

test('a webhook to any other host is refused at load, with its line', () => {
  for (const url of ['http://10.0.0.5/ended', 'https://hooks.example.com/ended', 'http://127.0.0.1.nip.io/x', 'ftp://127.0.0.1/x', 'http://user:pw@127.0.0.1/x']) {
    const r = parseHooksConfig(`# ops\nhooks:\n  onEnded:\n    webhook: ${url}\n`, 'config.yaml');
    assert.equal(r.ok, false, url);
    assert.match(problems(r), /config\.yaml:4: .*loopback/, url);
    assert.doesNotMatch(problems(r), /pw@/, 'a URL with credentials is not echoed');
  }
});

test('a bad timeout, a shell string, both kinds at once, an unknown key are refused with the line', () => {
  const cases: Array<[string, RegExp]> = [
    ['hooks:\n  onEnded:\n    command: [/bin/true]\n    timeoutMs: 0\n', /config\.yaml:4: "hooks\.onEnded\.timeoutMs"/],
    ['hooks:\n  onEnded:\n    command: [/bin/true]\n    timeoutMs: 600000\n', /config\.yaml:4: "hooks\.onEnded\.timeoutMs"/],
    ['hooks:\n  onEnded:\n    command: "/bin/echo hi | sh"\n', /config\.yaml:3: "hooks\.onEnded\.command"/],
    ['hooks:\n  onEnded:\n    command: [/bin/true]\n    webhook: http://127.0.0.1/x\n', /config\.yaml:3: .*either a command or a webhook/],
    ['hooks:\n  onEndd:\n    command: [/bin/true]\n', /config\.yaml:2: unknown key "hooks\.onEndd"[^\n]*\n[\s\S]*onEnded/],
    ['hooks:\n  onEnded:\n    webhook: http://127.0.0.1/x\n    rollback: [/bin/true]\n', /config\.yaml:4: .*rollback.*prepareSpawn/],
  ];
  for (const [text, want] of cases) {
    const r = parseHooksConfig(text, 'config.yaml');
    assert.equal(r.ok, false, text);
    assert.match(problems(r), want, text);
  }
});

test('the models loader accepts a file with a hooks section (one file, one strict schema)', () => {
  const r = parseModelsConfig('hooks:\n  onEnded:\n    command: [/bin/true]\n', 'config.yaml');
  assert.ok(r.ok);
});

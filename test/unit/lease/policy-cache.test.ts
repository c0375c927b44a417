/**
 * The policy parsed once per build (src/lease/policy-cache.ts): a hit is exactly what a parse
 * gives (undefined fields included), any change of text, path or build parses again, a policy
 * that does not parse is never kept, and a cache another user could have written — or a link,
 * or garbage — is parsed around. Real files; the parse it is compared with is parsePolicy's own.
 */
import { test, type TestContext } from 'node:test';
import assert from 'node:assert/strict';
import fs from 'node:fs';
import os from 'node:os';
import path from 'node:path';
import v8 from 'node:v8';
import { loadPolicyCached } from '../../../src/lease/policy-cache.js';
import { loadPolicyFile, policyFilesIn, shippedPoliciesDir } from '../../../src/lease/policy.js';

function home(t: TestContext): { dir: string; policy: string; cache: string } {
  const dir = fs.mkdtempSync(path.join(os.tmpdir(), 'brig-polcache-'));
  t.after(() => fs.rmSync(dir, { recursive: true, force: true }));
  const policy = path.join(dir, 'policy.yaml');
  fs.copyFileSync(policyFilesIn(shippedPoliciesDir())[0]!, policy);
  return { dir, policy, cache: path.join(dir, 'policy-cache.v8') };
}

/** The cache file's entry, decoded, with its key changed by `f` and written back (same owner, same mode). */
function rewrite(cache: string, f: (e: { key: string; policy: Record<string, unknown> }) => void): void {
  const e = v8.deserialize(fs.readFileSync(cache)) as { key: string; policy: Record<string, unknown> };
  f(e);
  fs.writeFileSync(cache, v8.serialize(e));
}

test('a hit is exactly the parse: the same value, its undefined fields too — and each shipped policy round-trips', (t) => {
  for (const file of policyFilesIn(shippedPoliciesDir())) {
    const { cache } = home(t);
    const first = loadPolicyCached(file, cache, 'build-1');
    assert.ok(first.ok && fs.existsSync(cache), `${file}: parsed and kept`);
    const hit = loadPolicyCached(file, cache, 'build-1');
    const fresh = loadPolicyFile(file);
    assert.ok(hit.ok && fresh.ok);
    assert.deepStrictEqual(hit.value, fresh.value, `${file}: the cached policy is the parse`);
    assert.equal(fs.statSync(cache).mode & 0o777, 0o600);
  }
});

test('the cache is used while the key holds: a planted policy under the right key is what it hands back (so the next test means something)', (t) => {
  const { policy, cache } = home(t);
  assert.ok(loadPolicyCached(policy, cache, 'b').ok);
  rewrite(cache, (e) => {
    e.policy.source = 'planted';
  });
  const got = loadPolicyCached(policy, cache, 'b');
  assert.ok(got.ok);
  assert.equal(got.value.source, 'planted', 'the entry was read, not the file parsed');
});

// req: lease:caps-intersect
test('[INV-1] a change of the text, the path or the build parses again — never an older parse', (t) => {
  const { dir, policy, cache } = home(t);
  assert.ok(loadPolicyCached(policy, cache, 'b').ok);
  const plant = () => rewrite(cache, (e) => {
    e.policy.source = 'stale';
  });
  plant();
  // The text: one profile's memory ceiling changed.
  fs.writeFileSync(policy, fs.readFileSync(policy, 'utf8').replace(/memoryMb: (\d+)/, (_m, n: string) => `memoryMb: ${Number(n) - 1}`));
  const edited = loadPolicyCached(policy, cache, 'b');
  assert.ok(edited.ok);
  assert.equal(edited.value.source, policy, 'an edited file is parsed again');
  assert.deepStrictEqual(edited.value, (loadPolicyFile(policy) as { value: unknown }).value);
  plant();
  const rebuilt = loadPolicyCached(policy, cache, 'another build');
  assert.ok(rebuilt.ok);
  assert.equal(rebuilt.value.source, policy, 'another build parses again');
  plant();
  const moved = path.join(dir, 'moved.yaml');
  fs.copyFileSync(policy, moved);
  const other = loadPolicyCached(moved, cache, 'another build');
  assert.ok(other.ok);
  assert.equal(other.value.source, moved, 'another path parses again');
});

test('no build (dist/ or source): the file is parsed and nothing is written', (t) => {
  const { policy, cache } = home(t);
  const r = loadPolicyCached(policy, cache, undefined);
  assert.ok(r.ok);
  assert.equal(fs.existsSync(cache), false);
});

test('a policy that does not parse is not kept: its errors every time, and the last good entry is not handed back', (t) => {
  const { policy, cache } = home(t);
  assert.ok(loadPolicyCached(policy, cache, 'b').ok);
  const kept = fs.readFileSync(cache);
  fs.writeFileSync(policy, 'version: 1\nprofiles:\n  root: { posture: nope }\n');
  for (let i = 0; i < 2; i++) {
    const r = loadPolicyCached(policy, cache, 'b');
    assert.equal(r.ok, false);
    assert.equal(r.ok ? '' : r.error.code, 'invalid_policy');
  }
  assert.deepEqual(fs.readFileSync(cache), kept, 'the cache is untouched by a failed parse');
  fs.rmSync(policy);
  const gone = loadPolicyCached(policy, cache, 'b');
  assert.equal(gone.ok ? '' : gone.error.code, 'invalid_policy', 'a missing file is loadPolicyFile\'s error');
});

test('a cache another user could have written, a link, or garbage is parsed around (and replaced by a good one)', (t) => {
  const { dir, policy, cache } = home(t);
  assert.ok(loadPolicyCached(policy, cache, 'b').ok);
  rewrite(cache, (e) => {
    e.policy.source = 'planted';
  });
  fs.chmodSync(cache, 0o666);
  const open = loadPolicyCached(policy, cache, 'b');
  assert.ok(open.ok);
  assert.equal(open.value.source, policy, 'a group/other-writable cache is not read');
  assert.equal(fs.statSync(cache).mode & 0o777, 0o600, 'and was replaced');
  // A link to a planted entry: not followed.
  rewrite(cache, (e) => {
    e.policy.source = 'planted';
  });
  const target = path.join(dir, 'elsewhere.v8');
  fs.renameSync(cache, target);
  fs.symlinkSync(target, cache);
  const linked = loadPolicyCached(policy, cache, 'b');
  assert.ok(linked.ok);
  assert.equal(linked.value.source, policy, 'a linked cache is not followed');
  fs.rmSync(cache);
  fs.writeFileSync(cache, Buffer.from('not a v8 value'), { mode: 0o600 });
  const garbage = loadPolicyCached(policy, cache, 'b');
  assert.ok(garbage.ok);
  assert.equal(garbage.value.source, policy);
  assert.ok(loadPolicyCached(policy, cache, 'b').ok);
  assert.deepEqual(fs.readdirSync(dir).filter((f) => f.includes('.tmp')), [], 'no temporary file left');
});

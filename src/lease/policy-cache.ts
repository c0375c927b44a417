/**
 * A policy file parsed once per build of brig: the checked Policy that parsePolicy made from a
 * file's text, kept in the home (image-cache.json's neighbour) and used again while the file's
 * text, its path and brig's build are the same. A supervisor's start parses the policy again
 * otherwise — ~15–25 ms of a one-shot `brig spawn` (issue 34), nearly all of it the YAML parser's
 * and the schema's first, cold run; the second parse in the same process takes ~4 ms.
 *
 * Guarantees: what the cache hands back is exactly what parsePolicy returned for that text — the
 * value is kept with V8's serializer (an `undefined` field, a Map or a Date round-trip as they
 * were) under a key of the build, the path and the text's sha256, so a change to any of them
 * parses again; a policy that does not parse is never kept (its errors come from parsePolicy,
 * every time). The build is the full bundle's id (scripts/bundle-full.mjs gives each build its
 * own): code run from dist/ or from source has none and always parses — a rebuilt policy parser
 * never reads a cache its predecessor wrote.
 * Trusts: the cache as it trusts the home's policy.yaml, which overrides the shipped policy —
 * whoever can write one can write the other. So it is read only when it is a regular file of
 * this process's user that no group or other may write, opened without following a link.
 * Fails: never because of the cache — one that cannot be read, decoded or written is parsed
 * around (and written again on the next start).
 */
import crypto from 'node:crypto';
import fs from 'node:fs';
import v8 from 'node:v8';
import { ok, type Result } from '../util/errors.js';
import { loadPolicyFile, parsePolicy, type Policy } from './policy.js';

// Defined by scripts/bundle-full.mjs (esbuild `define`) in the full bundle; undeclared elsewhere.
declare const __BRIG_BUILD_ID__: string | undefined;

/** This build's id, or undefined when brig runs from dist/ or source (no cache then). */
function buildId(): string | undefined {
  return typeof __BRIG_BUILD_ID__ === 'string' ? __BRIG_BUILD_ID__ : undefined;
}

interface Entry {
  key: string;
  policy: Policy;
}

function keyOf(build: string, file: string, text: string): string {
  return crypto.createHash('sha256').update(`${build}\0${file}\0`).update(text).digest('hex');
}

/** The entry when the cache may be trusted (see the header) and decodes. */
function readEntry(cacheFile: string): Entry | undefined {
  let fd: number | undefined;
  try {
    fd = fs.openSync(cacheFile, fs.constants.O_RDONLY | fs.constants.O_NOFOLLOW);
    const st = fs.fstatSync(fd);
    if (!st.isFile() || st.uid !== process.getuid?.() || (st.mode & 0o022) !== 0) return undefined;
    const e = v8.deserialize(fs.readFileSync(fd)) as Partial<Entry> | null;
    return e && typeof e.key === 'string' && typeof e.policy === 'object' && e.policy !== null ? (e as Entry) : undefined;
  } catch {
    return undefined;
  } finally {
    if (fd !== undefined) fs.closeSync(fd);
  }
}

function writeEntry(cacheFile: string, entry: Entry): void {
  const tmp = `${cacheFile}.${process.pid}.tmp`;
  try {
    fs.writeFileSync(tmp, v8.serialize(entry), { mode: 0o600, flag: 'wx' });
    fs.renameSync(tmp, cacheFile);
  } catch {
    fs.rmSync(tmp, { force: true });
  }
}

/**
 * The policy in `file`, as loadPolicyFile gives it, through the cache at `cacheFile` (see the
 * header). `build` is for tests; callers leave it to the bundle's own.
 */
export function loadPolicyCached(file: string, cacheFile: string, build: string | undefined = buildId()): Result<Policy> {
  if (build === undefined) return loadPolicyFile(file);
  let text: string;
  try {
    text = fs.readFileSync(file, 'utf8');
  } catch {
    return loadPolicyFile(file); // its error, as it words it
  }
  const key = keyOf(build, file, text);
  const hit = readEntry(cacheFile);
  if (hit?.key === key) return ok(hit.policy);
  const parsed = parsePolicy(text, file);
  if (parsed.ok) writeEntry(cacheFile, { key, policy: parsed.value });
  return parsed;
}

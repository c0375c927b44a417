/**
 * Policy loading: YAML files in policies/ (or $BRIG_HOME/policy.yaml) become resolved profiles.
 *
 * Guarantees: a policy with an unknown or misspelled key, an unknown capability, a profile
 * wider than `root`, or a profile granting a denylisted capability or tool does not load
 * (the error names the file, the line, the key path and the nearest valid key). Threat: a
 * typo that silently grants or drops authority. Trusts: the file system the operator
 * controls. Fails closed: any doubt is an `invalid_policy` error, never a default grant.
 */
import fs from 'node:fs';
import path from 'node:path';
import { LineCounter, parseDocument, type Document } from 'yaml';
import { lineOf } from '../config/yaml-issues.js';
import type { z } from 'zod';
import { BrigError, err, ok, type Result } from '../util/errors.js';
import { nearest } from '../util/nearest.js';
import { grantWithin } from './attenuate.js';
import { resolveEgressPolicy, profileEgress, type EgressPolicy } from './policy-egress.js';
import { PolicyFileSchema, validKeysAt, type PolicyFile } from './policy-schema.js';
import { DEFAULT_ROOT_DISK_MB, LIMIT_KEYS, type Capability, type Grant } from './types.js';

export interface ResolvedProfile {
  name: string;
  description: string;
  groups: string[];
  /** The profile's ceiling as a grant (limits filled from `root` where the profile is silent). */
  grant: Grant;
  /** Tool names the child-side tool surface may expose. */
  tools: string[];
  /** The images it may run in besides brig's child image (exact, or `REPO:*`); null: any local image. */
  images: string[] | null;
}

export interface Policy {
  source: string;
  profiles: Record<string, ResolvedProfile>;
  denylist: { caps: Capability[]; tools: string[] };
  groups: PolicyFile['groups'];
  /** The operator's egress: rules by id, credential bindings, deny lists, the multi-tenant suffixes, web_search's endpoint. */
  egress: EgressPolicy;
}

function describeIssue(issue: z.core.$ZodIssue, file: string, doc: Document, lc: LineCounter): { text: string; hint?: string } {
  const where = issue.path.map(String).join('.');
  if (issue.code === 'unrecognized_keys') {
    const key = issue.keys[0]!;
    const near = nearest(key, validKeysAt(issue.path));
    const line = lineOf(doc, lc, issue.path, key);
    const full = where ? `${where}.${key}` : key;
    const hint = near ? `Did you mean "${where ? `${where}.` : ''}${near}"?` : `Valid keys here: ${validKeysAt(issue.path).join(', ') || 'none'}.`;
    return { text: `${file}${line ? `:${line}` : ''}: unknown key "${full}"`, hint };
  }
  const line = lineOf(doc, lc, issue.path);
  const loc = `${file}${line ? `:${line}` : ''}`;
  if (issue.code === 'invalid_value' && 'values' in issue) {
    const got = doc.getIn(issue.path as unknown[]);
    const near = typeof got === 'string' ? nearest(got, issue.values.map(String)) : undefined;
    return {
      text: `${loc}: "${where}" is ${JSON.stringify(got)}, not one of ${issue.values.map(String).join(', ')}`,
      ...(near ? { hint: `Did you mean "${near}"?` } : {}),
    };
  }
  if (issue.code === 'invalid_type' && doc.getIn(issue.path as unknown[]) === undefined) {
    return { text: `${loc}: missing key "${where}"` };
  }
  return { text: `${loc}: "${where || '(top)'}": ${issue.message}` };
}

function policyError(file: string, problems: { text: string; hint?: string }[]): BrigError {
  const first = problems[0]!;
  return new BrigError('invalid_policy', first.text, {
    data: { file, problems: problems.map((p) => (p.hint ? `${p.text} (${p.hint})` : p.text)) },
    hint: first.hint ? `${first.hint} \`brig policy check ${file}\` lists every problem.` : `Fix the policy; \`brig policy check ${file}\` lists every problem.`,
  });
}

function resolveProfiles(file: PolicyFile, source: string): Result<Policy, { text: string; hint?: string }[]> {
  const problems: { text: string; hint?: string }[] = [];
  const root = file.profiles.root;
  if (!root) return err([{ text: `${source}: no "profiles.root": the operator's ceiling is required` }]);
  // diskMb came after the other limits: a policy written before it gets this ceiling, not a refusal.
  if (root.limits && root.limits.diskMb === undefined) root.limits.diskMb = DEFAULT_ROOT_DISK_MB;
  if (!root.limits || LIMIT_KEYS.some((k) => root.limits?.[k] === undefined)) {
    problems.push({ text: `${source}: "profiles.root.limits" must set every limit`, hint: `Limits: ${LIMIT_KEYS.join(', ')}.` });
  }
  if (!root.posture?.network || !root.posture.runtime || !root.posture.user) {
    problems.push({ text: `${source}: "profiles.root.posture" must set network, runtime and user` });
  }
  if (problems.length > 0) return err(problems);
  const rootGrantLimits = root.limits as Grant['limits'];
  const rootPosture = root.posture as Grant['posture'];
  const egress = resolveEgressPolicy(file.egress, source, problems);
  const rootEgress = profileEgress('root', root.egress, undefined, egress, source, problems);
  const profiles: Record<string, ResolvedProfile> = {};
  for (const [name, p] of Object.entries(file.profiles)) {
    const caps: Capability[] = [];
    const tools: string[] = [];
    for (const g of p.groups) {
      const group = file.groups[g];
      if (!group) {
        const near = nearest(g, Object.keys(file.groups));
        problems.push({ text: `${source}: profiles.${name}.groups names unknown group "${g}"`, ...(near ? { hint: `Did you mean "${near}"?` } : {}) });
        continue;
      }
      for (const c of group.caps) if (!caps.includes(c)) caps.push(c);
      for (const t of group.tools) if (!tools.includes(t)) tools.push(t);
    }
    for (const c of p.caps) if (!caps.includes(c)) caps.push(c);
    for (const c of caps.filter((c) => file.denylist.caps.includes(c))) problems.push({ text: `${source}: profiles.${name} grants denylisted capability "${c}"` });
    for (const t of tools.filter((t) => file.denylist.tools.includes(t))) problems.push({ text: `${source}: profiles.${name} exposes denylisted tool "${t}"` });
    const grant: Grant = {
      caps,
      limits: { ...rootGrantLimits, ...(p.limits ?? {}) },
      posture: { ...rootPosture, ...(p.posture ?? {}) },
    };
    const eg = name === 'root' ? rootEgress : profileEgress(name, p.egress, rootEgress, egress, source, problems);
    if (eg) {
      if (!caps.includes('net.egress')) problems.push({ text: `${source}: profiles.${name} lists egress rules but does not hold net.egress`, hint: 'Give it a group with net.egress (the shipped `web` group), or drop its egress rules.' });
      if (grant.posture.network !== 'egress') problems.push({ text: `${source}: profiles.${name} lists egress rules but its posture is network: none`, hint: 'Set posture.network: egress (in root, or in this profile), or drop its egress rules.' });
      grant.egress = eg;
    }
    profiles[name] = { name, description: p.description ?? '', groups: p.groups, grant, tools, images: p.images ?? (name === 'root' ? null : (file.profiles.root?.images ?? null)) };
  }
  const rootProfile = profiles.root;
  for (const prof of Object.values(profiles)) {
    if (rootProfile && !grantWithin(prof.grant, rootProfile.grant)) {
      problems.push({ text: `${source}: profiles.${prof.name} is wider than profiles.root (caps, a limit or posture)`, hint: 'Every profile must fit inside root, the operator\'s ceiling.' });
    }
    for (const img of prof.images ?? []) {
      if (rootProfile?.images && !imageAllowed(rootProfile.images, img)) problems.push({ text: `${source}: profiles.${prof.name}.images names "${img}", which profiles.root.images does not allow`, hint: 'Every profile must fit inside root, the operator\'s ceiling: add it to root\'s list, or drop it here.' });
    }
  }
  if (problems.length > 0) return err(problems);
  return ok({ source, profiles, denylist: file.denylist, groups: file.groups, egress });
}

/** Parses and resolves one policy text. Every refusal is an `invalid_policy` error value. */
export function parsePolicy(text: string, source: string): Result<Policy> {
  const lc = new LineCounter();
  const doc = parseDocument(text, { lineCounter: lc, prettyErrors: false, uniqueKeys: true });
  if (doc.errors.length > 0) {
    // prettyErrors is off (no source excerpts in errors), so the line comes from our counter.
    const yamlProblem = (e: (typeof doc.errors)[number]) => {
      const line = e.linePos?.[0]?.line ?? lc.linePos(e.pos[0]).line;
      return { text: `${source}:${line}: YAML ${e.code}: ${e.message.split('\n')[0]}` };
    };
    return err(policyError(source, doc.errors.map(yamlProblem)));
  }
  const parsed = PolicyFileSchema.safeParse(doc.toJS({ maxAliasCount: 50 }));
  if (!parsed.success) {
    // An unknown key usually explains the rest (a misspelled `profiles` is also a missing one).
    const issues = [...parsed.error.issues].sort((a, b) => Number(b.code === 'unrecognized_keys') - Number(a.code === 'unrecognized_keys'));
    return err(policyError(source, issues.map((i) => describeIssue(i, source, doc, lc))));
  }
  const resolved = resolveProfiles(parsed.data, source);
  return resolved.ok ? resolved : err(policyError(source, resolved.error));
}

export function loadPolicyFile(file: string): Result<Policy> {
  let text: string;
  try {
    text = fs.readFileSync(file, 'utf8');
  } catch (e) {
    const code = (e as NodeJS.ErrnoException).code ?? 'error';
    const message = `cannot read policy ${file}: ${code}`;
    return err(
      new BrigError('invalid_policy', message, {
        cause: e,
        data: { file, problems: [message] },
        hint: code === 'ENOENT' ? 'Check the path; `brig policy check` with no file checks the shipped policies and $BRIG_HOME/policy.yaml.' : 'Check the file is readable by this user.',
      }),
    );
  }
  return parsePolicy(text, file);
}

/** A profile by name; an unknown name is refused with the nearest known one. */
export function profileOf(policy: Policy, name: string): Result<ResolvedProfile> {
  const p = Object.hasOwn(policy.profiles, name) ? policy.profiles[name] : undefined;
  if (p) return ok(p);
  const known = Object.keys(policy.profiles).sort();
  const near = nearest(name, known);
  return err(
    new BrigError('invalid_input', `unknown profile "${name.slice(0, 64)}" in ${policy.source}`, {
      data: { field: 'profile', profile: name.slice(0, 64), known },
      hint: `${near ? `Did you mean "${near}"? ` : ''}Profiles: ${known.join(', ')}.`,
    }),
  );
}

/** The package's policies/ directory, found by walking up from this module to package.json. */
export function shippedPoliciesDir(from: string = path.dirname(new URL(import.meta.url).pathname)): string {
  let dir = from;
  for (;;) {
    if (fs.existsSync(path.join(dir, 'package.json'))) return path.join(dir, 'policies');
    const up = path.dirname(dir);
    if (up === dir) throw new BrigError('internal', 'cannot find the brig package root (package.json) to locate policies/');
    dir = up;
  }
}

/** The policy in force for a brig home: $BRIG_HOME/policy.yaml when present, else the shipped default. */
export function policyFileFor(home: string): string {
  const own = path.join(home, 'policy.yaml');
  return fs.existsSync(own) ? own : path.join(shippedPoliciesDir(), 'default.yaml');
}

/** Every .yaml/.yml file in a policies directory, sorted. */
export function policyFilesIn(dir: string): string[] {
  return fs
    .readdirSync(dir)
    .filter((f) => /\.ya?ml$/.test(f))
    .sort()
    .map((f) => path.join(dir, f));
}

/**
 * Whether `image` is in an allow list: an exact name, or `REPO:*` for every tag of REPO (a
 * pattern in the list also covers the same pattern asked for, so a profile's `REPO:*` fits
 * inside root's). brig's child image is never asked about: every profile may run it.
 */
export function imageAllowed(allowed: readonly string[], image: string): boolean {
  return allowed.some((a) => a === image || (a.endsWith(':*') && image.startsWith(a.slice(0, -1)) && !image.slice(a.length - 1).includes('/')));
}

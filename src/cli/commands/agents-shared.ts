import path from 'node:path';
import { loadPolicyFile, policyFileFor, profileFor, profileOf, toolSurface, type AgentSpec, type AgentTool, type Capability } from '../../index.js';
import type { BrigError } from '../../util/errors.js';

/** Where a spec comes from: this home's agents/ (the operator's, shadowing) or the package's. */
export function sourceOf(home: string, spec: AgentSpec): 'home' | 'shipped' {
  return path.dirname(path.resolve(spec.source)) === path.resolve(home, 'agents') ? 'home' : 'shipped';
}

/** What an operator's `brig spawn --agent NAME` would be offered, under this home's policy. */
export interface Offered {
  /** The lease profile: the spec's own, else the operator's default (lease/ decides: `root`). */
  profile: string;
  /** The policy file in force for this home. */
  policy: string;
  caps?: Capability[];
  tools?: AgentTool[];
  /** Why nothing would be offered (an unknown profile), or what would refuse the spawn. */
  error?: BrigError;
}

/**
 * The tool surface the supervisor computes for this spec from a root lease of its profile:
 * the profile's caps, the spec's role and wanted tools, the policy's denylisted tools.
 */
export function offeredTools(home: string, spec: AgentSpec): Offered {
  const file = policyFileFor(home);
  const pol = loadPolicyFile(file);
  if (!pol.ok) throw pol.error;
  const profile = profileFor(spec.profile, undefined);
  const prof = profileOf(pol.value, profile);
  if (!prof.ok) return { profile, policy: file, error: prof.error };
  const caps = prof.value.grant.caps;
  const tools = toolSurface({ caps, role: spec.role, denied: pol.value.denylist.tools, ...(spec.tools ? { wanted: spec.tools } : {}) });
  return { profile, policy: file, caps, tools };
}

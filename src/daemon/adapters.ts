/**
 * The adapters the composition root hands the supervisor: each real part in the supervisor's
 * own words (runs/ports.ts, runs/model-port.ts). compose.ts only wires them.
 */
import path from 'node:path';
import { toolSurface, type AgentCatalog } from '../agents/index.js';
import type { LeaseRecord, LeaseStore, Policy } from '../lease/index.js';
import { imageAllowed, loadPolicyFile, profileFor, profileOf } from '../lease/index.js';
import { costOf, type ModelCatalog } from '../models/index.js';
import { materializeRun, type FsResultStore } from '../results/index.js';
import type { AgentPort, LeasePort, ModelPort, ResultsPort } from '../runs/index.js';
import { BrigError, err, ok } from '../util/errors.js';
import { nearest } from '../util/nearest.js';
import type { EgressBudgets } from '../protocol/index.js';

/** Each ancestor lease with egress, nearest first: a run's connections and bytes count against them too. */
function egressAncestors(store: LeaseStore, r: LeaseRecord): { leaseId: string; budgets: EgressBudgets }[] {
  const out: { leaseId: string; budgets: EgressBudgets }[] = [];
  for (let p = r.parentLeaseId ? store.get(r.parentLeaseId) : undefined; p; p = p.parentLeaseId ? store.get(p.parentLeaseId) : undefined) {
    if (p.egress) out.push({ leaseId: p.id, budgets: p.egress.budgets });
  }
  return out;
}

/**
 * `policyFile`: the file the policy was loaded from. The policy in force is the one loaded at
 * start (the lease store, the egress gate and the broker were built from it); a profile added
 * to the file since is not half-loaded, but a spawn naming it is told to restart the daemon.
 */
export function leasePort(store: LeaseStore, policy: Policy, policyFile?: () => string): LeasePort {
  return {
    checkProfile(name) {
      const p = profileOf(policy, name);
      if (p.ok) return ok(undefined);
      const file = policyFile?.();
      const now = file ? loadPolicyFile(file) : undefined;
      if (now?.ok && Object.hasOwn(now.value.profiles, name)) {
        return err(new BrigError('invalid_input', `profile "${name.slice(0, 64)}" was added to ${file} after this supervisor loaded it`, {
          data: { field: 'profile', profile: name.slice(0, 64), known: Object.keys(policy.profiles).sort() },
          hint: 'Restart `brig serve` to load the policy file again (a policy is loaded whole, never in parts); the profiles in force now: ' + Object.keys(policy.profiles).sort().join(', ') + '.',
        }));
      }
      return err(p.error);
    },
    checkImage(name, image, parentLeaseId) {
      // The profile `issue` will give the lease: a child without one of its own inherits its parent's.
      const p = profileOf(policy, profileFor(name, parentLeaseId ? store.get(parentLeaseId)?.profile : undefined));
      if (!p.ok || p.value.images === null || imageAllowed(p.value.images, image)) return ok(undefined);
      return err(new BrigError('capability_denied', `image "${image.slice(0, 128)}" is not allowed under profile ${p.value.name} (${policy.source})`, {
        data: { what: 'image', image: image.slice(0, 128), profile: p.value.name, allowed: p.value.images },
        hint: `Allowed besides brig's child image: ${p.value.images.join(', ') || 'none'}. An operator widens it with the profile's \`images\` in the policy file (\`brig policy check\` shows it).`,
      }));
    },
    async issue(req) {
      const profile = profileFor(req.profile, req.parentLeaseId ? store.get(req.parentLeaseId)?.profile : undefined);
      const request = req.caps || req.limits || req.egress ? { ...(req.caps ? { caps: req.caps } : {}), ...(req.limits ? { limits: req.limits } : {}), ...(req.egress ? { egress: req.egress } : {}) } : undefined;
      const issued = req.parentLeaseId
        ? store.issueChild({ parentLeaseId: req.parentLeaseId, ...(req.via ? { via: req.via } : {}), request, profile, runId: req.runId, rootRunId: req.rootRunId, timeoutMs: req.timeoutMs, graceMs: req.graceMs ?? 0 })
        : store.issueRoot({ profile, runId: req.runId, rootRunId: req.rootRunId, timeoutMs: req.timeoutMs, graceMs: req.graceMs ?? 0, ...(request ? { request } : {}) });
      if (!issued.ok) return err(issued.error);
      const r = issued.value.record;
      return ok({ leaseId: r.id, token: issued.value.token, caps: r.caps, limits: r.limits, expiresAt: r.expiresAt, ...(r.egress ? { egress: r.egress, egressAncestors: egressAncestors(store, r) } : {}) });
    },
    egressOf(leaseId) {
      const r = store.get(leaseId);
      if (!r?.egress || r.revoked || Date.parse(r.expiresAt) <= Date.now()) return undefined;
      return { egress: r.egress, egressAncestors: egressAncestors(store, r) };
    },
    async revoke(leaseId, by, reason) {
      const l = store.get(leaseId);
      if (!l || l.revoked) return;
      store.revoke(leaseId, by, reason);
    },
    async revokeRun(runId, by, reason) {
      const l = store.byRunId(runId);
      if (!l || l.revoked) return;
      store.revoke(l.id, by, reason);
    },
    onRevoked(cb) {
      return store.onRevoked((revoked: LeaseRecord[], by: string) => {
        for (const r of revoked) cb(r.id, by);
      });
    },
  };
}

/**
 * The supervisor's model port over the catalog: an alias's window, one metered turn. The
 * client (and its key) stays in here; the supervisor sees messages, usage and a cost.
 */
export function modelsPort(catalog: ModelCatalog): ModelPort {
  return {
    resolve(alias) {
      const r = catalog.resolve(alias);
      return r.ok ? ok({ alias: r.value.alias, contextWindow: r.value.contextWindow, maxOutputTokens: r.value.maxOutputTokens }) : r;
    },
    async complete(alias, req) {
      const r = catalog.resolve(alias);
      if (!r.ok) throw r.error;
      const c = await r.value.client.complete(req);
      return { ...c, costUsd: costOf(c.usage, r.value.price), ...(r.value.local ? { local: true } : {}) };
    },
  };
}

/**
 * Agent specs for the supervisor: the home's and the shipped ones; tools from the lease, the
 * policy's denylist and — when a spawn names tool groups — the policy's groups' tool lists.
 */
export function agentsPort(catalog: AgentCatalog, deniedTools: readonly string[], groups: Readonly<Record<string, { tools: readonly string[] }>> = {}, webSearchUrl?: string): AgentPort {
  return {
    spec: (name) => catalog.get(name),
    tools: (spec, caps, names) =>
      toolSurface({
        caps,
        role: spec.role,
        // No search endpoint configured: web_search has nothing to call.
        denied: webSearchUrl ? deniedTools : [...deniedTools, 'web_search'],
        ...(spec.tools ? { wanted: spec.tools } : {}),
        ...(names ? { groupTools: names.flatMap((g) => groups[g]?.tools ?? []) } : {}),
      }),
    ...(webSearchUrl ? { webSearchUrl } : {}),
    checkGroups(names) {
      const known = Object.keys(groups);
      const unknown = names.find((g) => !known.includes(g));
      if (unknown === undefined) return ok(undefined);
      const near = nearest(unknown, known);
      return err(new BrigError('invalid_input', `spawn request: unknown tool group ${unknown.slice(0, 64)}`, {
        data: { field: 'tool_groups' },
        hint: `${near ? `Did you mean "${near}"? ` : ''}The policy's groups: ${known.join(', ') || '(none)'} (\`brig policy check\` lists them).`,
      }));
    },
  };
}

/** The supervisor's view of the result store (exported for its test). */
export function resultsPort(store: FsResultStore): ResultsPort {
  return {
    outDir: (rootRunId, runId) => path.join(store.runDir(rootRunId, runId), 'out'),
    observe: store.observe,
    index: (rootRunId, runId, dir, extras = {}) => materializeRun(store, rootRunId, runId, dir, extras),
    sweepInterrupted: (isLive) => store.sweepInterrupted(isLive),
    async resolveRef(ref) {
      try {
        const r = await store.get(ref);
        return { ref: r, hostPath: store.resolvePath(r) };
      } catch (e) {
        if (e instanceof BrigError && e.code === 'ref_not_found') return null;
        throw e;
      }
    },
    async remove(rootRunId, runId) {
      // The store's own remove: the run's directory AND its ref/run lookup pointers, so a
      // retention-swept run answers run_not_found / ref_not_found, not an empty listing.
      await store.remove(rootRunId, runId);
    },
  };
}


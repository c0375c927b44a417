import { grantAllows } from './attenuate.js';
import { EGRESS_BUDGET_KEYS, LIMIT_KEYS, type EgressRule } from './types.js';
import type { Policy } from './policy.js';

/** A human explanation of a resolved policy: what each profile may do, and what nobody may. */
export function explainPolicy(policy: Policy): string[] {
  const out: string[] = [`policy ${policy.source}: ok`];
  out.push(`  denylist: caps [${policy.denylist.caps.join(', ')}], tools [${policy.denylist.tools.join(', ')}] — never given to any child`);
  for (const p of Object.values(policy.profiles)) {
    out.push(`  profile ${p.name}${p.name === 'root' ? ' (the operator\'s ceiling)' : ''}: ${p.description}`);
    out.push(`    groups: ${p.groups.join(', ') || '(none)'}`);
    out.push(`    images: ${p.images === null ? 'any local image' : ['brig\'s child image', ...p.images].join(', ')}`);
    out.push(`    caps:   ${p.grant.caps.join(', ') || '(none)'}`);
    out.push(`    tools:  ${p.tools.join(', ') || '(none)'}`);
    out.push(`    limits: ${LIMIT_KEYS.map((k) => `${k}=${p.grant.limits[k]}`).join(' ')}`);
    out.push(`    posture: network=${p.grant.posture.network} runtime=${p.grant.posture.runtime} user=${p.grant.posture.user}`);
    if (p.grant.egress) {
      out.push(`    egress: rules ${p.grant.egress.rules.map((r) => r.id).join(', ')} (a child holds only those it asks for)`);
      out.push(`    egress budgets: ${EGRESS_BUDGET_KEYS.map((k) => `${k}=${p.grant.egress!.budgets[k]}`).join(' ')}`);
    } else if (grantAllows(p.grant, 'net.egress')) out.push('    egress: none (net.egress without rules reaches nothing)');
  }
  const e = policy.egress;
  for (const r of Object.values(e.rules)) out.push(`  egress rule ${describeRule(r)}`);
  for (const [name, b] of Object.entries(e.credentials)) {
    const where = `${b.hosts.join(', ')}${b.paths ? ` under ${b.paths.join(', ')}` : ''}`;
    out.push(`  egress credential ${name}: the supervisor's $${b.secretEnv} set as "${b.header}: ${b.format.replaceAll('{}', '<secret>')}" on inspected requests to ${where} (client credential headers removed first); a request carrying it${b.placeholderEnv ? ` or the child's $${b.placeholderEnv} placeholder` : ''} to another host is refused; its echo is masked in responses`);
  }
  if (e.denyHosts.length > 0) out.push(`  egress denyHosts: ${e.denyHosts.join(', ')}`);
  if (e.denyCidrs.length > 0) out.push(`  egress denyCidrs: ${e.denyCidrs.join(', ')}`);
  if (e.allowPrivateCidrs.length > 0) out.push(`  egress allowPrivateCidrs: ${e.allowPrivateCidrs.join(', ')} — the gate may dial these private ranges`);
  return out;
}

/** One rule as brig explains it: what it opens and how the gate checks it (docs/egress.md). */
export function describeRule(r: EgressRule): string {
  const how = r.scheme === 'https'
    ? r.tls === 'tunnel' ? 'TLS tunnel, its ClientHello must name the host (SNI), no ECH' : 'TLS inspected (not built yet: refused)'
    : r.scheme === 'http' ? `plain HTTP, each request decided${r.methods ? ` (methods ${r.methods.join('|')})` : ''}${r.paths ? ` (paths ${r.paths.join(' ')})` : ''}` : 'an opaque TCP stream';
  return `${r.id}: ${r.hosts.join(', ')} on port ${r.ports.join(', ')} — ${how}; names resolved by the gate, private/loopback/link-local/metadata answers refused${r.credential ? `; credential ${r.credential}` : ''}`;
}

import { grantAllows } from './attenuate.js';
import { LIMIT_KEYS } from './types.js';
import type { Policy } from './policy.js';

/** A human explanation of a resolved policy: what each profile may do, and what nobody may. */
export function explainPolicy(policy: Policy): string[] {
  const out: string[] = [`policy ${policy.source}: ok`];
  out.push(`  denylist: caps [${policy.denylist.caps.join(', ')}], tools [${policy.denylist.tools.join(', ')}] — never given to any child`);
  for (const p of Object.values(policy.profiles)) {
    out.push(`  profile ${p.name}${p.name === 'root' ? ' (the operator\'s ceiling)' : ''}: ${p.description}`);
    out.push(`    groups: ${p.groups.join(', ') || '(none)'}`);
    out.push(`    caps:   ${p.grant.caps.join(', ') || '(none)'}`);
    out.push(`    tools:  ${p.tools.join(', ') || '(none)'}`);
    out.push(`    limits: ${LIMIT_KEYS.map((k) => `${k}=${p.grant.limits[k]}`).join(' ')}`);
    out.push(`    posture: network=${p.grant.posture.network} runtime=${p.grant.posture.runtime} user=${p.grant.posture.user}`);
    if (grantAllows(p.grant, 'net.egress')) out.push('    note: net.egress is reserved; the jail never has a network, so it grants nothing today');
  }
  return out;
}

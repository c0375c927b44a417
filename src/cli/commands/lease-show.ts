import { LIMIT_KEYS } from '../../light.js';
import { BrigError } from '../../util/errors.js';
import { JSON_FLAG, parseArgs, writeJson, type Command } from '../command.js';
import { withBrig } from '../connect.js';

const command: Command = {
  name: 'lease show',
  summary: 'Show one lease: caps, limits, requested vs granted vs refused, lineage up to the root.',
  usage: 'brig lease show LEASE_ID [--json]',
  flags: [JSON_FLAG],
  examples: ['brig lease show ls_0123456789abcdef0123'],
  async run(args, io) {
    const p = parseArgs(args, command.flags);
    const id = p.positionals[0];
    if (!id) throw new BrigError('invalid_input', 'give a lease id', { hint: '`brig lease list` shows the ids.' });
    const shown = await withBrig(io, (brig) => brig.operator.leases.show(id));
    if (!shown.ok) throw shown.error;
    const rec = shown.value.lease;
    // The lineage from the lease itself up to the root.
    const lineage = [rec, ...shown.value.lineage];
    if (p.bools.has('json')) {
      writeJson(io, { lease: rec, lineage });
      return 0;
    }
    const w = (s: string) => io.stdout.write(s + '\n');
    w(`lease ${rec.id}  (${rec.state})`);
    w(`  run ${rec.runId}  root run ${rec.rootRunId}  depth ${rec.depth}  profile ${rec.profile}`);
    w(`  issued ${rec.issuedAt}  expires ${rec.expiresAt}`);
    if (rec.revoked) w(`  revoked by ${rec.revoked.by} at ${rec.revoked.at}${rec.revoked.reason ? ` (${rec.revoked.reason})` : ''}`);
    w(`  requested caps: ${rec.requested.caps ? rec.requested.caps.join(', ') || '(none)' : '(all the parent holds)'}`);
    w(`  granted caps:   ${rec.caps.join(', ') || '(none)'}`);
    w(`  refused:        ${rec.refused.length === 0 ? '(nothing)' : ''}`);
    for (const r of rec.refused) w(`    ${r.what}: ${r.code} — ${r.reason}`);
    w('  limits (granted / requested):');
    for (const k of LIMIT_KEYS) {
      const asked = rec.requested.limits?.[k];
      w(`    ${k.padEnd(12)} ${String(rec.limits[k]).padEnd(12)} ${asked === undefined ? '-' : String(asked)}`);
    }
    w(`  posture: network=${rec.posture.network} runtime=${rec.posture.runtime} user=${rec.posture.user}`);
    const askedPosture = Object.entries(rec.requested.posture ?? {});
    if (askedPosture.length > 0) w(`  posture requested: ${askedPosture.map(([k, v]) => `${k}=${v}`).join(' ')}`);
    w('  lineage (self → root):');
    for (const l of lineage) w(`    ${l.id}  run ${l.runId}  depth ${l.depth}  ${l.profile}  [${l.caps.join(',')}]  ${l.state}`);
    return 0;
  },
};
export default command;

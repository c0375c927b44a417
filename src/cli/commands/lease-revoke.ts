import { BrigError } from '../../util/errors.js';
import { JSON_FLAG, parseArgs, flag, writeJson, type Command } from '../command.js';
import { withBrig } from '../connect.js';

const command: Command = {
  name: 'lease revoke',
  summary: 'Revoke a lease and its whole subtree (their broker calls are refused from now on).',
  usage: 'brig lease revoke LEASE_ID --confirm [--reason TEXT] [--json]',
  flags: [
    { name: 'confirm', description: 'required: revoking ends every run of the subtree at once (killed by the operator)' },
    { name: 'reason', value: 'TEXT', description: 'why, kept on the lease record and in the ledger' },
    JSON_FLAG,
  ],
  examples: ["brig lease revoke ls_0123456789abcdef0123 --confirm --reason 'runaway tree'"],
  async run(args, io) {
    const p = parseArgs(args, command.flags);
    const id = p.positionals[0];
    if (!id) throw new BrigError('invalid_input', 'give a lease id', { hint: '`brig lease list` shows the ids.' });
    if (!p.bools.has('confirm')) throw new BrigError('invalid_input', "revoking a lease ends its whole subtree's runs: pass --confirm", { hint: `brig lease revoke ${id} --confirm` });
    // Through the daemon its own store revokes (its runs end at once, killedBy operator);
    // without one this marks the records and the next supervisor ends the runs.
    const { before, r } = await withBrig(io, async (brig) => {
      const shown = await brig.operator.leases.show(id);
      return { before: shown.ok ? (shown.value.lease.revoked ?? null) : null, r: await brig.operator.leases.revoke(id, flag(p, 'reason')) };
    });
    if (!r.ok) throw r.error;
    if (p.bools.has('json')) writeJson(io, { revoked: r.value.map((x) => ({ leaseId: x.id, runId: x.runId })), alreadyRevoked: before });
    else {
      // Revoking again is not an error (the subtree is still swept), but say what happened.
      if (before) io.stdout.write(`lease ${id} was already revoked by ${before.by} at ${before.at}\n`);
      io.stdout.write(`revoked ${r.value.length} lease(s)\n`);
      for (const x of r.value) io.stdout.write(`  ${x.id}  run ${x.runId}\n`);
    }
    return 0;
  },
};
export default command;

import { openOperator } from '../../index.js';
import { BrigError } from '../../util/errors.js';
import { JSON_FLAG, parseArgs, writeJson, type Command } from '../command.js';

const command: Command = {
  name: 'policy check',
  summary: 'Validate policy files and explain what each profile may do (default: every file in policies/).',
  usage: 'brig policy check [FILE|DIR ...] [--json]',
  flags: [JSON_FLAG],
  examples: ['brig policy check', 'brig policy check policies/strict.yaml --json'],
  async run(args, io) {
    const p = parseArgs(args, command.flags);
    const op = openOperator({ env: io.env });
    const targets = p.positionals.length > 0 ? p.positionals : op.defaultPolicyTargets();
    const results = op.checkPolicies(targets).map(({ file, result }) => ({ file, r: result }));
    if (results.length === 0) throw new BrigError('invalid_input', `no .yaml policy files in ${targets.join(', ')}`);
    const bad = results.filter((x) => !x.r.ok);
    if (p.bools.has('json')) {
      writeJson(io, {
        ok: bad.length === 0,
        files: results.map(({ file, r }) =>
          r.ok
            ? { file, ok: true, profiles: Object.fromEntries(Object.values(r.value.profiles).map((x) => [x.name, { ...x.grant, tools: x.tools }])) }
            : { file, ok: false, error: r.error.toJSON() },
        ),
      });
    } else {
      for (const { r } of results) {
        if (r.ok) io.stdout.write(op.explainPolicy(r.value).join('\n') + '\n');
        else {
          const problems = (r.error.data.problems as string[] | undefined) ?? [r.error.message];
          io.stderr.write(`policy ${r.error.data.file ?? ''}: INVALID\n${problems.map((x) => `  ${x}`).join('\n')}\n  → ${r.error.hint}\n`);
        }
      }
    }
    return bad.length === 0 ? 0 : 2;
  },
};
export default command;

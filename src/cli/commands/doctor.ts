import { JSON_FLAG, parseArgs, writeJson, type Command } from '../command.js';
import { withBrig } from '../connect.js';

const command: Command = {
  name: 'doctor',
  summary: 'Check that this host can give the hardened jail: engine, limits, child image, and a probe from inside a real jail.',
  usage: 'brig doctor [--build] [--json]',
  flags: [{ name: 'build', description: 'build the child image when it is missing' }, JSON_FLAG],
  examples: ['brig doctor', 'brig doctor --build --json'],
  async run(args, io) {
    const p = parseArgs(args, command.flags);
    const checks = await withBrig(io, (brig) => brig.operator.doctor({ build: p.bools.has('build') }));
    const ok = checks.every((c) => c.ok);
    if (p.bools.has('json')) writeJson(io, { ok, checks });
    else {
      for (const c of checks) io.stdout.write(`${c.ok ? 'ok  ' : 'FAIL'}  ${c.name}: ${c.detail}${c.hint ? `\n        → ${c.hint}` : ''}\n`);
      io.stdout.write(ok ? 'brig can run hardened jails on this host.\n' : 'brig will refuse to run children here until the failures above are fixed.\n');
    }
    return ok ? 0 : 1;
  },
};
export default command;

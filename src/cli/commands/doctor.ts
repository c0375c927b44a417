import { JSON_FLAG, flag, parseArgs, writeJson, type CliIO, type Command } from '../command.js';
import { withBrig } from '../connect.js';

/**
 * The doctor starts a real jail and a DuckDB helper: seconds of work in one call. On a
 * terminal (stderr) a line says what it is doing and for how long, redrawn, then erased; into
 * a pipe or a file nothing is drawn (no escape codes), and the checks print as before.
 */
function progress(io: CliIO): () => void {
  if ((io.stderr as { isTTY?: boolean }).isTTY !== true) return () => {};
  const t0 = Date.now();
  const draw = () => io.stderr.write(`\r\x1b[Kchecking the engine, its limits, the child image, a probe jail and the DuckDB helper… ${Math.round((Date.now() - t0) / 1000)} s`);
  draw();
  const tick = setInterval(draw, 500);
  return () => {
    clearInterval(tick);
    io.stderr.write('\r\x1b[K');
  };
}

const command: Command = {
  name: 'doctor',
  summary: 'Check that this host can give the hardened jail: engine, limits, child image, and a probe from inside a real jail.',
  usage: 'brig doctor [--build] [--driver docker|kubernetes] [--json]',
  flags: [
    { name: 'build', description: 'build the child image when it is missing' },
    { name: 'driver', value: 'docker|kubernetes', choices: ['docker', 'kubernetes'], description: "judge this driver's jails (default: the configured one, BRIG_DRIVER or config.yaml `driver:`; a running daemon answers for its own); kubernetes takes its cluster from KUBECONFIG, BRIG_K8S_IMAGE and BRIG_K8S_WORKSPACE_CLASS" },
    JSON_FLAG,
  ],
  examples: ['brig doctor', 'brig doctor --build --json', 'brig doctor --driver kubernetes'],
  async run(args, io) {
    const p = parseArgs(args, command.flags);
    const stop = progress(io);
    const checks = await withBrig(io, (brig) => brig.operator.doctor({ build: p.bools.has('build') }), { driver: flag(p, 'driver') }).finally(stop);
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

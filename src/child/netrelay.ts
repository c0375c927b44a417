/**
 * The in-jail egress relay: listens on the jail's own loopback (127.0.0.1:3128, and [::1]:3128
 * when the jail has IPv6 loopback) and pipes each connection, byte for byte, to the egress
 * gate's socket at /run/brig/egress.sock. It checks nothing (it is inside the jail and
 * untrusted): the gate on the supervisor's side decides everything.
 *
 * As the jail's entry (`node netrelay.js -- ARGV…`, set by the supervisor for a lease with
 * egress, every kind): starts the relay, then runs ARGV with the same stdio, passes SIGTERM and
 * SIGINT on, and exits with its status. A relay that cannot listen exits 70 before ARGV runs.
 */
import { spawn } from 'node:child_process';
import net from 'node:net';
import { EGRESS_PATHS } from './paths.js';

export async function startRelay(socketPath: string = EGRESS_PATHS.socket, port: number = EGRESS_PATHS.port): Promise<net.Server[]> {
  const serve = (host: string): Promise<net.Server | null> =>
    new Promise((resolve) => {
      const server = net.createServer((c) => {
        const up = net.connect(socketPath);
        c.pipe(up);
        up.pipe(c);
        const done = () => {
          c.destroy();
          up.destroy();
        };
        c.on('error', done);
        up.on('error', done);
        c.on('close', done);
        up.on('close', done);
      });
      server.once('error', () => resolve(null));
      server.listen(port, host, () => resolve(server));
    });
  const v4 = await serve(EGRESS_PATHS.host);
  if (!v4) throw new Error(`the egress relay cannot listen on ${EGRESS_PATHS.host}:${port}`);
  const v6 = await serve('::1');
  return v6 ? [v4, v6] : [v4];
}

async function main(): Promise<void> {
  const at = process.argv.indexOf('--');
  const argv = at >= 0 ? process.argv.slice(at + 1) : [];
  if (argv.length === 0) {
    process.stderr.write('netrelay: no command after --\n');
    process.exit(64);
  }
  let servers: net.Server[];
  try {
    servers = await startRelay();
  } catch (e) {
    process.stderr.write(`netrelay: ${(e as Error).message}\n`);
    process.exit(70);
  }
  const child = spawn(argv[0]!, argv.slice(1), { stdio: 'inherit' });
  for (const sig of ['SIGTERM', 'SIGINT', 'SIGHUP'] as const) process.on(sig, () => child.kill(sig));
  child.on('error', (e) => {
    process.stderr.write(`netrelay: ${argv[0]}: ${e.message}\n`);
    process.exit(127);
  });
  child.on('exit', (code, signal) => {
    for (const s of servers) s.close();
    process.exit(code ?? (signal ? 128 + (({ SIGKILL: 9, SIGTERM: 15, SIGINT: 2, SIGHUP: 1 } as Record<string, number>)[signal] ?? 1) : 1));
  });
}

if (process.argv[1]?.endsWith('netrelay.js')) void main();

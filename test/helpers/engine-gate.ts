/**
 * A gate in front of the real engine for one daemon: a unix-socket proxy its DOCKER_HOST
 * points at, which passes every request through to /var/run/docker.sock except those whose
 * request line matches what the test holds — those wait (their connection's bytes queued)
 * until the test releases them. So a test can catch a daemon at an exact engine call (the
 * start-up sweep's first remove, a run's container create) on the real engine, no timing.
 * Only the connection of a held request stops; every other one goes on.
 */
import fs from 'node:fs';
import net from 'node:net';
import os from 'node:os';
import path from 'node:path';

/** A request's first bytes: its method and path (a create's path carries its whole body as a query: no line end is looked for). */
const REQUEST_LINE = /^(GET|HEAD|POST|PUT|DELETE) (\/[^ \r\n]{0,200})/;

export interface EngineGate {
  /** DOCKER_HOST for the daemon: `unix://…`. */
  host: string;
  /** Holds every request from now on whose `METHOD PATH` matches (until release). */
  hold(re: RegExp): void;
  /** Lets every held request (and whatever its connection queued since) through; holds nothing more. */
  release(): void;
  /** `METHOD PATH` of the requests held so far (released ones included). */
  held(): string[];
  close(): Promise<void>;
}

export async function engineGate(t: { after: (fn: () => Promise<void>) => void }, target = '/var/run/docker.sock'): Promise<EngineGate> {
  const dir = await fs.promises.mkdtemp(path.join(os.tmpdir(), 'brig-gate-'));
  const sock = path.join(dir, 'engine.sock');
  let pattern: RegExp | null = null;
  const heldLines: string[] = [];
  const waiting = new Set<() => void>();
  const conns = new Set<net.Socket>();
  const server = net.createServer((c) => {
    const up = net.connect(target);
    conns.add(c).add(up);
    const end = () => {
      c.destroy();
      up.destroy();
      conns.delete(c);
      conns.delete(up);
    };
    c.on('error', end).on('close', end);
    up.on('error', end).on('close', end);
    up.pipe(c);
    let queued: Buffer[] | null = null;
    c.on('data', (chunk: Buffer) => {
      if (queued) return void queued.push(chunk);
      const m = REQUEST_LINE.exec(chunk.subarray(0, 256).toString('latin1'));
      const line = m ? `${m[1]} ${m[2]}` : null;
      if (line && pattern?.test(line)) {
        heldLines.push(line);
        queued = [chunk];
        waiting.add(() => {
          const q = queued ?? [];
          queued = null;
          for (const b of q) up.write(b);
        });
        return;
      }
      up.write(chunk);
    });
  });
  await new Promise<void>((resolve) => server.listen(sock, resolve));
  const gate: EngineGate = {
    host: `unix://${sock}`,
    hold(re) {
      pattern = re;
    },
    release() {
      pattern = null;
      for (const go of waiting) go();
      waiting.clear();
    },
    held: () => [...heldLines],
    async close() {
      gate.release();
      for (const s of conns) s.destroy();
      await new Promise<void>((resolve) => server.close(() => resolve()));
      await fs.promises.rm(dir, { recursive: true, force: true });
    },
  };
  t.after(() => gate.close());
  return gate;
}

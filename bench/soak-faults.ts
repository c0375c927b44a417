/**
 * The soak's fault makers and meters (bench/soak.ts): a home on a small loop-mounted ext4 that
 * it fills and empties, the flaky scripted model its agents talk to, and the samplers of the
 * daemon's RSS and of GET /v1/health latency. The engine blip uses test/helpers/engine-proxy.ts.
 */
import { execFileSync } from 'node:child_process';
import fs from 'node:fs';
import http from 'node:http';
import os from 'node:os';
import path from 'node:path';
import { startModelServer, statusTurn, textTurn, toolCallTurn, type ModelServer, type Turn } from '../test/helpers/model-server.js';
import { WRITER_JS, type Planned } from './soak-lib.js';

// ── a home that can be filled ───────────────────────────────────────────────────────────

export interface LoopHome {
  /** The mount point: $BRIG_HOME. */
  home: string;
  /** Beside the mount (not on it): the daemons' output, the soak's own files. */
  logs: string;
  base: string;
  free(): number;
  /** Takes every free block (fallocate, then writes to the last byte); returns bytes still free. */
  fill(): number;
  unfill(): void;
  /** Unmounts (lazily) and removes the image; keepLogs leaves base/logs. */
  close(keepLogs: boolean): void;
}

/** An ext4 of `mb` MB (sparse image, no root reserve) mounted as a fresh home; a string says why not. */
export function loopHome(mb: number): LoopHome | string {
  if (process.getuid?.() !== 0) return 'a loop-mounted home needs root';
  for (const tool of ['mkfs.ext4', 'mount', 'umount', 'fallocate']) {
    try {
      execFileSync('sh', ['-c', `command -v ${tool}`], { stdio: 'ignore' });
    } catch {
      return `${tool} is not installed`;
    }
  }
  const base = fs.mkdtempSync(path.join(os.tmpdir(), 'bsk-'));
  const image = path.join(base, 'img');
  const home = path.join(base, 'h');
  const logs = path.join(base, 'logs');
  fs.mkdirSync(home, { mode: 0o700 });
  fs.mkdirSync(logs);
  fs.writeFileSync(image, '');
  fs.truncateSync(image, mb * 1024 * 1024);
  execFileSync('mkfs.ext4', ['-q', '-F', '-m', '0', image], { stdio: 'ignore' });
  execFileSync('mount', ['-o', 'loop', image, home], { stdio: 'ignore' });
  fs.chmodSync(home, 0o700);
  const fillers: string[] = [];
  const free = () => {
    const s = fs.statfsSync(home);
    return s.bavail * s.bsize;
  };
  return {
    home,
    logs,
    base,
    free,
    fill() {
      const big = path.join(home, `.soak-filler-${fillers.length}`);
      fillers.push(big);
      const room = free() - 512 * 1024;
      if (room > 0) execFileSync('fallocate', ['-l', String(room), big]);
      for (const chunk of [65_536, 4096, 1]) {
        const f = path.join(home, `.soak-filler-${fillers.length}`);
        fillers.push(f);
        const fd = fs.openSync(f, 'w');
        const buf = Buffer.alloc(chunk);
        try {
          for (;;) fs.writeSync(fd, buf);
        } catch (e) {
          if ((e as NodeJS.ErrnoException).code !== 'ENOSPC') throw e;
        } finally {
          fs.closeSync(fd);
        }
      }
      return free();
    },
    unfill() {
      for (const f of fillers.splice(0)) fs.rmSync(f, { force: true });
    },
    close(keepLogs) {
      try {
        execFileSync('umount', ['-l', home], { stdio: 'ignore' });
      } catch {
        // already gone
      }
      fs.rmSync(image, { force: true });
      fs.rmSync(home, { recursive: true, force: true });
      if (!keepLogs) fs.rmSync(base, { recursive: true, force: true });
    },
  };
}

// ── the flaky model ─────────────────────────────────────────────────────────────────────

export interface FlakyModel {
  server: ModelServer;
  /** The daemon's BRIG_MODEL_* environment. */
  env: NodeJS.ProcessEnv;
  /** Requests answered 500, 429 (retry-after 1 s), slowly (200 ms between stream frames), well. */
  stats: Map<string, number>;
}

type Msg = { role: string; content: unknown };
/** Steps a steered agent takes waiting (max_steps is at most 50). */
const STEER_CAP = 40;

/**
 * The scripted stand-in the soak's agents talk to. Per agent (its label, from the task in the
 * system prompt): write /workspace/gen.js, run it into out/a.bin, then `finish` — or, when the
 * plan steers it, step (`shell sleep 0.3`) until a `[Steer from parent] finish <label> now`
 * is in the conversation, then finish naming it. About a third of calls fail first (500 or
 * 429) — never twice in a row for one agent, so the provider's retries always get through —
 * or are slow.
 */
export async function flakyModel(plan: Planned[], rnd: () => number): Promise<FlakyModel> {
  const byLabel = new Map(plan.filter((p) => p.kind === 'agent').map((p) => [p.label, p]));
  const faulted = new Set<string>();
  const stats = new Map<string, number>();
  const count = (k: string) => stats.set(k, (stats.get(k) ?? 0) + 1);
  const server = await startModelServer({
    checkPairing: true,
    script: (req) => {
      const label = /SOAK-AGENT (soak-\d+)/.exec(req.raw)?.[1];
      const p = label ? byLabel.get(label) : undefined;
      if (!p || !label) {
        count('unknown');
        return textTurn('no such soak agent');
      }
      const tools = Array.isArray(req.body?.tools) && req.body.tools.length > 0;
      if (!tools) {
        count('ok');
        return textTurn(`salvage for ${label}`);
      }
      if (!faulted.has(label)) {
        const x = rnd();
        if (x < 0.12) {
          faulted.add(label);
          count('500');
          return statusTurn(500);
        }
        if (x < 0.24) {
          faulted.add(label);
          count('429');
          return statusTurn(429, { retryAfter: '1' });
        }
      }
      faulted.delete(label);
      const slow = rnd() < 0.1;
      count(slow ? 'slow' : 'ok');
      const extra: Partial<Turn> = slow ? { delayMs: 200 } : {};
      const msgs = (req.body?.messages ?? []) as Msg[];
      const k = msgs.filter((m) => m.role === 'assistant').length;
      const o = p.outputs[0]!;
      const files = [`/workspace/out/${o.path}`];
      if (k === 0) return toolCallTurn('write_file', { path: '/workspace/gen.js', content: WRITER_JS }, extra);
      if (k === 1) return toolCallTurn('shell', { command: `node /workspace/gen.js ${o.seed} ${o.bytes} /workspace/out/${o.path} 16384 20` }, extra);
      if (!p.steerTo) return toolCallTurn('finish', { answer: `done ${label}`, files }, extra);
      if (req.raw.includes(`[Steer from parent] ${p.steerTo}`)) return toolCallTurn('finish', { answer: `steered: ${p.steerTo}`, files }, extra);
      if (k < STEER_CAP) return toolCallTurn('shell', { command: 'sleep 0.3' }, extra);
      return toolCallTurn('finish', { answer: `never steered ${label}`, files }, extra);
    },
  });
  const env = { BRIG_MODEL_BASE_URL: server.baseUrl, BRIG_MODEL: 'soak-flaky-stand-in', BRIG_MODEL_CONTEXT_WINDOW: '200000' };
  return { server, env, stats };
}

// ── meters ──────────────────────────────────────────────────────────────────────────────

/** Kibibytes resident (VmRSS) of a process, or undefined once it is gone. */
export function rssKiB(pid: number | undefined): number | undefined {
  if (!pid) return undefined;
  try {
    const m = /VmRSS:\s+(\d+) kB/.exec(fs.readFileSync(`/proc/${pid}/status`, 'utf8'));
    return m ? Number(m[1]) : undefined;
  } catch {
    return undefined;
  }
}

/** One GET /v1/health on the daemon's socket: ms, or an error string (10 s bound). */
export function healthOnce(socket: string): Promise<number | string> {
  return new Promise((resolve) => {
    const t0 = performance.now();
    const req = http.request({ socketPath: socket, method: 'GET', path: '/v1/health', timeout: 10_000 }, (res) => {
      res.resume();
      res.on('end', () => resolve(res.statusCode === 200 ? performance.now() - t0 : `HTTP ${res.statusCode}`));
    });
    req.on('timeout', () => req.destroy(new Error('timeout')));
    req.on('error', (e) => resolve(e.message.includes('timeout') ? 'timeout' : ((e as NodeJS.ErrnoException).code ?? e.message)));
    req.end();
  });
}

export const quantile = (xs: number[], q: number): number => {
  if (xs.length === 0) return NaN;
  const s = [...xs].sort((a, b) => a - b);
  return s[Math.min(s.length - 1, Math.floor(q * s.length))]!;
};

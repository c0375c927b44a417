import type { BrokerClient } from './broker-client.js';

/**
 * What a script sees: `export default async function (brig) { ... }`. Every call goes
 * through the broker, so the supervisor stays the one place that counts steps, keeps
 * checkpoints and enforces the lease. `resume()` hands back an earlier checkpoint wrapped as
 * untrusted data: it came from a child and must be inspected, never executed.
 */

export interface UntrustedCheckpoint {
  untrusted: true;
  state: unknown;
}

export interface ChildRunSummary {
  runId: string;
  status: string;
  endReason: string | null;
  result: unknown;
  error: { code: string; message: string } | null;
  missingOutputs: string[];
}

export interface BrigSdk {
  readonly task: string;
  readonly packet: Readonly<Record<string, unknown>>;
  /** One step boundary: counts a step, returns steer messages that arrived since the last one. */
  progress(line?: string): Promise<string[]>;
  checkpoint(state: unknown): Promise<void>;
  resume(): Promise<UntrustedCheckpoint | null>;
  result(value: unknown): Promise<void>;
  spawn(request: Record<string, unknown>): Promise<ChildRunSummary>;
  /** Steer messages received and not yet taken. */
  steers(): string[];
  /** Kill one of this run's own children (needs `kill` in the lease). */
  kill(childRunId: string): Promise<{ runId: string; endReason: string | null }>;
  /** Steer one of this run's own children (needs `steer` in the lease). */
  steer(childRunId: string, message: string): Promise<{ mode: string; runId: string; newRunId: string | null }>;
}

export const METHODS = {
  progress: 'progress',
  checkpoint: 'checkpoint',
  resume: 'resume',
  result: 'result',
  spawn: 'spawn',
  kill: 'child.kill',
  steer: 'child.steer',
} as const;

export function createSdk(client: BrokerClient, packet: Record<string, unknown>, state: { resultSet: boolean }): BrigSdk {
  const inbox: string[] = [];
  const take = (): string[] => inbox.splice(0, inbox.length);
  return Object.freeze({
    task: String(packet.task ?? ''),
    packet: Object.freeze({ ...packet }),
    async progress(line?: string) {
      const r = (await client.call(METHODS.progress, { line: line === undefined ? null : String(line).slice(0, 200) })) as { steers?: unknown };
      if (Array.isArray(r?.steers)) for (const m of r.steers) if (typeof m === 'string') inbox.push(m);
      return take();
    },
    async checkpoint(s: unknown) {
      await client.call(METHODS.checkpoint, { state: s });
    },
    async resume() {
      const r = (await client.call(METHODS.resume, {})) as { checkpoint?: unknown } | null;
      return r && r.checkpoint !== undefined && r.checkpoint !== null ? { untrusted: true as const, state: r.checkpoint } : null;
    },
    async result(value: unknown) {
      await client.call(METHODS.result, { value });
      state.resultSet = true;
    },
    async spawn(request: Record<string, unknown>) {
      return (await client.call(METHODS.spawn, { request })) as ChildRunSummary;
    },
    steers: take,
    async kill(child: string) {
      return (await client.call(METHODS.kill, { child })) as { runId: string; endReason: string | null };
    },
    async steer(child: string, message: string) {
      return (await client.call(METHODS.steer, { child, message })) as { mode: string; runId: string; newRunId: string | null };
    },
  });
}

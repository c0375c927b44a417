import { appendFileSync, readFileSync, rmSync } from 'node:fs';
import { BrokerClient } from './broker-client.js';
import { runAgent } from './agent/loop.js';
import { parseAgentPacket, type LoopPacket } from './agent/packet.js';
import { AGENT_PATHS, PATHS } from './paths.js';
import { toolBoundProblem } from './tool-bound.js';

/**
 * The in-jail runtime for kind `agent`: `node /opt/brig/child/agent-runtime.js`. Reads the
 * spawn packet and the bearer the supervisor wrote, connects to the run's broker and runs
 * the agent loop. The bearer file is removed once the client holds it, and the runtime checks
 * it is non-dumpable (tool-bound.ts) before a tool can start a process, so nothing the shell
 * starts can read the bearer from the file or from this process. SIGTERM stops the loop at once and it salvages.
 * Exit 0 whenever the loop ran (its end is data in the result), 2 when set-up fails.
 */

async function main(): Promise<number> {
  let client: BrokerClient;
  let packet: LoopPacket;
  let token: string;
  try {
    packet = parseAgentPacket(JSON.parse(readFileSync(PATHS.packet, 'utf8')));
    token = readFileSync(PATHS.token, 'utf8').trim();
    // Reconnects (a daemon restart) are worth trying for as long as the run may live.
    client = await BrokerClient.connect(PATHS.socket, token, { reconnectUntil: Date.now() + packet.timeoutMs + 120_000 });
  } catch (e) {
    process.stderr.write(`brig-agent: set-up failed: ${(e as Error).message}\n`);
    return 2;
  }
  try {
    rmSync(PATHS.token, { force: true });
  } catch {
    // a read-only .brig/: the scrub of tool outputs still keeps it out of the transcript
  }
  // A tool that starts processes runs only while those processes cannot reach this one (INV-11).
  const unbound = toolBoundProblem(packet.agent.tools, PATHS.token);
  if (unbound) {
    process.stderr.write(`brig-agent: refusing to run its tools: ${unbound}\n`);
    client.close();
    return 2;
  }
  const stop = new AbortController();
  const onTerm = () => stop.abort();
  process.once('SIGTERM', onTerm);
  process.once('SIGINT', onTerm);
  const log = (event: Record<string, unknown>) => {
    try {
      appendFileSync(AGENT_PATHS.log, JSON.stringify({ t: new Date().toISOString(), ...event }) + '\n');
    } catch {
      // the log is a debugging aid only
    }
  };
  try {
    const out = await runAgent({ broker: client, packet, stop: stop.signal, secrets: [token], log });
    if (!out.resultSent) process.stderr.write('brig-agent: the result could not be sent\n');
    return 0;
  } catch (e) {
    process.stderr.write(`brig-agent: the loop failed: ${(e as Error)?.message ?? String(e)}\n`);
    return 1;
  } finally {
    client.close();
  }
}

// Exit even when a tool left something running (a shell's background job, a stuck worker).
process.exit(await main());

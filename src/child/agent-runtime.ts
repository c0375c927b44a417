import { appendFileSync, readFileSync, rmSync } from 'node:fs';
import { BrokerClient } from './broker-client.js';
import { runAgent } from './agent/loop.js';
import { JAIL_ROOTS } from './agent/confine.js';
import { parseAgentPacket, type LoopPacket } from './agent/packet.js';
import { PRESTART_FLAG, waitForRun } from './agent/prestart.js';
import { gatherWorkspaceInfo, type ImageFacts } from './agent/workspace-info.js';
import { AGENT_PATHS, PATHS } from './paths.js';
import { toolBoundProblem } from './tool-bound.js';

/**
 * The in-jail runtime for kind `agent`: `node /opt/brig/child/agent-runtime.js`. Reads the
 * spawn packet and the bearer the supervisor wrote, connects to the run's broker and runs
 * the agent loop. The bearer file is removed once the client holds it, and the runtime checks
 * it is non-dumpable (tool-bound.ts) before a tool can start a process, so nothing the shell
 * starts can read the bearer from the file or from this process. SIGTERM stops the loop at once and it salvages.
 * Exit 0 whenever the loop ran (its end is data in the result), 2 when set-up fails.
 * With `--prestarted` (a warm slot's, agent/prestart.ts) it loads and waits before its run
 * exists, then takes everything of the run from the assignment and goes on as above.
 */

async function main(): Promise<number> {
  let client: BrokerClient;
  let packet: LoopPacket;
  let token: string;
  let facts: ImageFacts | undefined;
  try {
    // The one place the in-jail runtime touches its environment: a pre-started one replaces it with its run's.
    if (process.argv.includes(PRESTART_FLAG)) facts = (await waitForRun({ env: process.env })).facts;
    packet = parseAgentPacket(JSON.parse(readFileSync(PATHS.packet, 'utf8')));
    token = readFileSync(PATHS.token, 'utf8').trim();
    // Reconnects (a daemon restart) are worth trying for as long as the run may live. The
    // hello's reply is not waited for here: the loop's first calls follow it (its `ready`).
    client = await BrokerClient.connect(PATHS.socket, token, { reconnectUntil: Date.now() + packet.timeoutMs + 120_000, pipelineHello: true });
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
  // A refused hello is the set-up's failure (the bearer is refused for every call), as before the loop.
  let refused: Error | undefined;
  const ready = client.authenticated.catch((e: Error) => {
    refused = e;
    throw e;
  });
  try {
    // Pre-started: the image's facts were gathered before the run; the workspace's are the run's own.
    const workspaceInfo = facts && packet.agent.workspaceAware ? { workspaceInfo: gatherWorkspaceInfo(JAIL_ROOTS, facts.dirs, '/', facts) } : {};
    const out = await runAgent({ broker: client, packet, stop: stop.signal, secrets: [token], log, ready, ...workspaceInfo });
    if (!out.resultSent) process.stderr.write('brig-agent: the result could not be sent\n');
    return 0;
  } catch (e) {
    if (refused) {
      process.stderr.write(`brig-agent: set-up failed: ${refused.message}\n`);
      return 2;
    }
    process.stderr.write(`brig-agent: the loop failed: ${(e as Error)?.message ?? String(e)}\n`);
    return 1;
  } finally {
    client.close();
  }
}

// Exit even when a tool left something running (a shell's background job, a stuck worker).
process.exit(await main());

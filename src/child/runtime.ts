import { readFileSync } from 'node:fs';
import { pathToFileURL } from 'node:url';
import { BrokerClient } from './broker-client.js';
import { PATHS } from './paths.js';
import { createSdk } from './sdk.js';

/**
 * The in-jail runtime for kind `script`: `node /opt/brig/child/runtime.js`. Loads the script
 * the supervisor put at /workspace/.brig/script.mjs (an ES module whose default export is
 * `async function (brig)`), hands it the SDK, and reports its return value as the result.
 * The bearer token is read from a file the supervisor wrote, so the runtime needs no
 * environment at all. Exit 0 on success, 1 when the script throws, 2 when set-up fails.
 */

export { PATHS };

async function main(): Promise<number> {
  let client: BrokerClient;
  let packet: Record<string, unknown>;
  try {
    packet = JSON.parse(readFileSync(PATHS.packet, 'utf8')) as Record<string, unknown>;
    // Reconnects (a daemon restart) are worth trying for as long as the run may live.
    const timeoutMs = typeof packet.timeoutMs === 'number' ? packet.timeoutMs : 600_000;
    client = await BrokerClient.connect(PATHS.socket, readFileSync(PATHS.token, 'utf8').trim(), { reconnectUntil: Date.now() + timeoutMs + 120_000 });
  } catch (e) {
    process.stderr.write(`brig-child: set-up failed: ${(e as Error).message}\n`);
    return 2;
  }
  const state = { resultSet: false };
  try {
    const mod = (await import(pathToFileURL(PATHS.script).href)) as { default?: unknown };
    if (typeof mod.default !== 'function') throw new Error('the script must export a default async function (brig)');
    const sdk = createSdk(client, packet, state);
    const value = await (mod.default as (b: unknown) => unknown)(sdk);
    if (!state.resultSet && value !== undefined) await sdk.result(value);
    return 0;
  } catch (e) {
    const err = e as Error;
    process.stderr.write(`brig-child: script failed: ${err?.name ?? 'Error'}: ${err?.message ?? String(e)}\n`);
    return 1;
  } finally {
    client.close();
  }
}

process.exitCode = await main();

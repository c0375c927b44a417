/** Building a client of either format against the scripted model server. */
import type { TestContext } from 'node:test';
import { AnthropicMessagesClient, OpenAIChatClient, type ClientOptions } from '../../../src/models/index.js';
import { startModelServer, type ModelServer, type ModelServerOptions, type WireFormat } from '../../helpers/model-server.js';

export const FORMATS: WireFormat[] = ['openai-chat', 'anthropic-messages'];

export type AnyClient = OpenAIChatClient | AnthropicMessagesClient;

export function clientFor(format: WireFormat, m: ModelServer, o: Partial<ClientOptions> = {}): AnyClient {
  const opts: ClientOptions = { baseUrl: m.baseUrl, model: format === 'openai-chat' ? 'gpt-test' : 'claude-test', backoff: { initialMs: 50, maxMs: 200 }, ...o };
  return format === 'openai-chat' ? new OpenAIChatClient(opts) : new AnthropicMessagesClient(opts);
}

/** A server and a client, both closed after the test. */
export async function setup(t: TestContext, format: WireFormat, server: ModelServerOptions, o: Partial<ClientOptions> = {}) {
  const m = await startModelServer(server);
  const client = clientFor(format, m, o);
  t.after(async () => {
    await client.close();
    await m.close();
  });
  return { m, client };
}

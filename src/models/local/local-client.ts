/**
 * A `local` model as the catalog hands it out: an openai-chat client whose endpoint is the
 * helper's unix socket (local-host.ts), started on the first call. Keys: none — nothing
 * leaves the machine, and the socket is reachable by the supervisor's uid only.
 *
 * A call that offers tools and leaves the choice to the model (`auto`) asks for `required`
 * by default: brig's agent loop ends only through its `finish` tool, and a 135M model given
 * the choice answered in prose on every step (measured; docs/models.md). `toolChoice: auto`
 * in the provider's configuration leaves the choice to the model.
 */
import type { ClientOptions } from '../client-options.js';
import { OpenAIChatClient } from '../openai-chat.js';
import type { Completion, CompletionRequest, CompletionTuning, ModelClient } from '../types.js';
import type { LocalModelHost } from './local-host.js';

export type LocalClientOptions = Omit<ClientOptions, 'baseUrl' | 'apiKey' | 'dispatcher'> & { toolChoice?: 'required' | 'auto' };

export class LocalModelClient implements ModelClient {
  readonly api = 'local' as const;
  readonly model: string;
  #inner: { client: OpenAIChatClient; dispatcher: unknown } | undefined;

  constructor(private readonly host: LocalModelHost, private readonly o: LocalClientOptions) {
    this.model = o.model;
  }

  async complete(req: CompletionRequest & CompletionTuning): Promise<Completion> {
    const started = await this.host.start();
    // A restarted helper has a new pool: the client follows it.
    if (this.#inner?.dispatcher !== started.dispatcher) {
      const { toolChoice: _, ...options } = this.o;
      this.#inner = { client: new OpenAIChatClient({ ...options, baseUrl: 'http://localhost/v1', dispatcher: started.dispatcher }), dispatcher: started.dispatcher };
    }
    const force = (this.o.toolChoice ?? 'required') === 'required' && (req.tools?.length ?? 0) > 0 && (req.toolChoice ?? 'auto') === 'auto';
    return this.#inner.client.complete(force ? { ...req, toolChoice: 'required' } : req);
  }
}

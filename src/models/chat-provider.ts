/**
 * The older `ModelProvider.chat` role (Level 2 condensation) on top of any ModelClient: system
 * messages become the system prompt, the rest the conversation; a per-call timeout joins the
 * caller's signal. Failures stay the client's `model_unavailable` errors.
 */
import type { ChatRequest, ChatResponse, CompletionRequest, CompletionTuning, LlmMessage, ModelClient, ModelProvider } from './types.js';

export class ClientChatProvider implements ModelProvider {
  readonly name: string;

  constructor(readonly client: ModelClient, name?: string) {
    this.name = name ?? `${client.api}:${client.model}`;
  }

  async chat(req: ChatRequest): Promise<ChatResponse> {
    const system = req.messages.filter((m) => m.role === 'system').map((m) => m.content).join('\n\n');
    const messages: LlmMessage[] = req.messages.flatMap((m): LlmMessage[] =>
      m.role === 'user' ? [{ role: 'user', content: m.content }] : m.role === 'assistant' ? [{ role: 'assistant', content: m.content }] : [],
    );
    const timeout = req.timeoutMs !== undefined ? AbortSignal.timeout(req.timeoutMs) : undefined;
    const signal = timeout && req.signal ? AbortSignal.any([timeout, req.signal]) : (timeout ?? req.signal);
    const full: CompletionRequest & CompletionTuning = {
      system,
      messages,
      ...(req.maxTokens !== undefined ? { maxTokens: req.maxTokens } : {}),
      ...(signal ? { signal } : {}),
      ...(req.temperature !== undefined ? { temperature: req.temperature } : {}),
      ...(req.json ? { json: true } : {}),
    };
    const c = await this.client.complete(full);
    return { content: c.message.content, model: c.model, usage: { promptTokens: c.usage.input, completionTokens: c.usage.output } };
  }
}

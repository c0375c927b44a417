/**
 * Running one model tool call: check it, run it under its timeout, bound its output. Every
 * call comes back as exactly one tool result — a malformed or unknown call, a throw, a
 * timeout and a run that is stopping included — so the conversation never holds an
 * unpaired call. `finish` is only checked here; the loop ends the run with it.
 */
import fs from 'node:fs';
import { boundResult, type Spiller } from './bound.js';
import { checkArgs } from './check-args.js';
import { confine } from './confine.js';
import { MAX_BOUNDED_CHARS, ToolError, type ToolContext, type ToolDef } from './tools/tool.js';
import { errorCode, errorMessage, type LlmMessage, type LlmReply } from './types.js';

export interface CallEnv {
  tools: ReadonlyMap<string, ToolDef>;
  ctx: Omit<ToolContext, 'signal'>;
  /** The run's stop signal (SIGTERM). */
  stop: AbortSignal;
  spiller: Spiller;
  /** Strings never to show the model (the bearer). */
  secrets: readonly string[];
}

export type ToolMessage = Extract<LlmMessage, { role: 'tool' }>;

export interface CallOutcome {
  message: ToolMessage;
  /** Counts against maxConsecutiveFormatErrors: bad JSON, an unknown tool, arguments off the schema. */
  formatError: boolean;
  finish?: { answer: string; files: string[] };
}

type Call = LlmReply['message']['toolCalls'][number];

const result = (call: Call, content: string, isError = false): ToolMessage => ({ role: 'tool', toolCallId: call.id, content, ...(isError ? { isError: true } : {}) });

function formatError(call: Call, why: string): CallOutcome {
  return { message: result(call, `error: ${why}`, true), formatError: true };
}

/** A synthetic result for a call that will not run (the run is stopping or already finished). */
export function notRun(call: Call, why: string): CallOutcome {
  return { message: result(call, `error: not run: ${why}`, true), formatError: false };
}

function describe(e: unknown, name: string): string {
  if (e instanceof ToolError) return `error: ${e.message}`;
  const code = errorCode(e);
  const hint = (e as { hint?: unknown }).hint;
  if (code !== 'internal') return `error (${code}): ${errorMessage(e)}${typeof hint === 'string' ? ` — ${hint}` : ''}`;
  return `error: ${name} failed: ${errorMessage(e)}`;
}

function finishFiles(files: unknown, env: CallEnv): { ok: string[] } | { bad: string[] } {
  const list = Array.isArray(files) ? (files as string[]) : [];
  const ok: string[] = [];
  const bad: string[] = [];
  for (const f of list) {
    const c = confine(f, env.ctx.roots, 'read');
    if (!c.ok) bad.push(`${f} (${c.reason})`);
    else if (!fs.existsSync(c.path)) bad.push(`${f} (it does not exist)`);
    else ok.push(c.path);
  }
  return bad.length ? { bad } : { ok };
}

async function withTimeout(tool: ToolDef, args: Record<string, unknown>, env: CallEnv): Promise<{ content: string; isError: boolean; maxChars?: number }> {
  const ac = new AbortController();
  const onStop = () => ac.abort();
  env.stop.addEventListener('abort', onStop, { once: true });
  const ms = tool.timeoutMs(args, { ...env.ctx, signal: ac.signal });
  let timer: NodeJS.Timeout | undefined;
  const timeout = new Promise<never>((_, reject) => {
    timer = setTimeout(() => {
      ac.abort();
      reject(new ToolError(`${tool.name} timed out after ${ms} ms`));
    }, ms);
  });
  try {
    const out = await Promise.race([tool.run(args, { ...env.ctx, signal: ac.signal }), timeout]);
    return typeof out === 'string' ? { content: out, isError: false } : { content: out.content, isError: out.isError === true, ...(out.maxChars !== undefined ? { maxChars: out.maxChars } : {}) };
  } catch (e) {
    return { content: describe(e, tool.name), isError: true };
  } finally {
    clearTimeout(timer);
    env.stop.removeEventListener('abort', onStop);
  }
}

export async function executeCall(call: Call, env: CallEnv): Promise<CallOutcome> {
  const name = String(call.name).slice(0, 64);
  if (call.inputError) return formatError(call, `the arguments of ${name} were not valid JSON (${String(call.inputError).slice(0, 200)}): send one JSON object that matches the tool's schema`);
  const tool = env.tools.get(name);
  if (!tool) return formatError(call, `there is no tool named ${JSON.stringify(name)}; the tools are: ${[...env.tools.keys()].join(', ')}`);
  const why = checkArgs(tool.parameters, call.input ?? {});
  if (why) return formatError(call, `invalid arguments for ${name}: ${why}`);
  const args = (call.input ?? {}) as Record<string, unknown>;
  if (name === 'finish') {
    const files = finishFiles(args.files, env);
    if ('bad' in files) return { message: result(call, `error: finish refused; these files are not readable paths under the workspace: ${files.bad.join('; ')}`, true), formatError: false };
    return { message: result(call, 'finished'), formatError: false, finish: { answer: String(args.answer), files: files.ok } };
  }
  const out = await withTimeout(tool, args, env);
  let text = out.content;
  for (const s of env.secrets) if (s) text = text.split(s).join('[redacted]');
  const max = Math.max(env.ctx.maxChars, Math.min(out.maxChars ?? 0, MAX_BOUNDED_CHARS));
  return { message: result(call, boundResult(text, max, env.spiller), out.isError), formatError: false };
}

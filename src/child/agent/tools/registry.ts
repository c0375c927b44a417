/**
 * Every tool the loop knows, in the one order the prompt and the `tools` param list them
 * (a fixed order keeps the request prefix byte-stable). A tool is offered only when the
 * packet's agent.tools names it; `finish` is always offered.
 */
import type { LlmTool } from '../types.js';
import { CHILD_TOOLS, REF_TOOLS } from './broker-tools.js';
import { FS_TOOLS } from './fs-tools.js';
import { SESSION_TOOLS } from './session-tools.js';
import { shellTool } from './shell-tool.js';
import { obj, S, type ToolDef } from './tool.js';
import { webTools } from './web-tools.js';

export const FINISH: ToolDef = {
  name: 'finish',
  description: 'End the run with your answer for the parent, and the files under /workspace/out that matter.',
  parameters: obj({ answer: S.str('your final answer: self-contained, concise'), files: S.strs('paths of files you wrote that matter (under /workspace/out)', 100) }, ['answer']),
  timeoutMs: () => 0,
  run: () => Promise.reject(new Error('finish is handled by the loop')),
};

/** How the run's tools are made: `egress` when the lease has egress rules (the shell's description says so), the search endpoint for web_search. */
export interface ToolOptions {
  shellPath?: string | undefined;
  egress?: boolean | undefined;
  webSearchUrl?: string | null | undefined;
}

export function allTools(o: ToolOptions = {}): ToolDef[] {
  return [shellTool(o.shellPath, o.egress === true), ...FS_TOOLS, ...REF_TOOLS, ...CHILD_TOOLS, ...SESSION_TOOLS, ...webTools(o.webSearchUrl)];
}

/** The tools a packet allows, in registry order, `finish` last. Names brig has no tool for are ignored; web_search needs the packet's search endpoint. */
export function offeredTools(allowed: readonly string[], o: ToolOptions = {}): ToolDef[] {
  const want = new Set(allowed);
  if (!o.webSearchUrl) want.delete('web_search');
  return [...allTools(o).filter((t) => want.has(t.name)), FINISH];
}

export function toolSchemas(tools: readonly ToolDef[]): LlmTool[] {
  return tools.map((t) => ({ name: t.name, description: t.description, parameters: t.parameters }));
}

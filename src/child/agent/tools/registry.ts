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

export const FINISH: ToolDef = {
  name: 'finish',
  description: 'End the run with your answer for the parent, and the files under /workspace/out that matter.',
  parameters: obj({ answer: S.str('your final answer: self-contained, concise'), files: S.strs('paths of files you wrote that matter (under /workspace/out)', 100) }, ['answer']),
  timeoutMs: () => 0,
  run: () => Promise.reject(new Error('finish is handled by the loop')),
};

export function allTools(shellPath?: string): ToolDef[] {
  return [shellTool(shellPath), ...FS_TOOLS, ...REF_TOOLS, ...CHILD_TOOLS, ...SESSION_TOOLS];
}

/** The tools a packet allows, in registry order, `finish` last. Names brig has no tool for are ignored. */
export function offeredTools(allowed: readonly string[], shellPath?: string): ToolDef[] {
  const want = new Set(allowed);
  return [...allTools(shellPath).filter((t) => want.has(t.name)), FINISH];
}

export function toolSchemas(tools: readonly ToolDef[]): LlmTool[] {
  return tools.map((t) => ({ name: t.name, description: t.description, parameters: t.parameters }));
}

/**
 * Agent specs: markdown with YAML frontmatter. The frontmatter is strictly validated (an
 * unknown key is refused with the nearest known one and its line); the body is the spec's
 * instructions, given to the model verbatim inside the system prompt. A spec can narrow what
 * its child is offered (tools, profile, steps, time) — never widen the lease: the supervisor
 * intersects everything with the lease.
 */
import { LineCounter, parseDocument } from 'yaml';
import { lineOf } from '../config/yaml-issues.js';
import { z } from 'zod';
import { BrigError, err, ok, type Result } from '../util/errors.js';
import { nearest } from '../util/nearest.js';
import { AGENT_TOOL_NAMES } from './tools.js';

const NameSchema = z.string().regex(/^[a-z][a-z0-9_-]{0,63}$/, 'a lowercase name: letters, digits, _ and -');

export const AgentFrontmatterSchema = z.strictObject({
  name: NameSchema,
  description: z.string().min(1).max(500),
  /** A model alias of the supervisor's configuration (default: its default model). */
  model: z.string().min(1).max(128).optional(),
  /** The lease profile the child asks for (attenuated by its parent's as any request). */
  profile: NameSchema.optional(),
  /** Tool names the child may be offered (default: every tool its lease allows). */
  tools: z.array(z.enum(AGENT_TOOL_NAMES as [string, ...string[]])).optional(),
  maxSteps: z.number().int().positive().max(10_000).optional(),
  /** Seconds. */
  timeout: z.number().int().positive().max(86_400).optional(),
  /**
   * The image the child runs in (a local tag; default brig's child image): an operator's choice in
   * the spec file, never the spawning child's (docs/jail.md, "Any image").
   */
  image: z.string().min(1).max(256).optional(),
  /** Gather the image's OS, language versions, packages, tools on PATH, disk and files inside the jail into the prompt. */
  workspaceAware: z.boolean().default(false),
  /** `coordinator`: delegation, read-only drill-in and observability only. */
  role: z.enum(['worker', 'coordinator']).default('worker'),
});
export type AgentFrontmatter = z.infer<typeof AgentFrontmatterSchema>;

export interface AgentSpec extends AgentFrontmatter {
  instructions: string;
  /** Where it was loaded from (a file path, or `built-in`). */
  source: string;
}

/** The longest spec file accepted. */
export const MAX_SPEC_BYTES = 64 * 1024;

const FENCE = /^---\r?\n([\s\S]*?)\r?\n---\r?\n?([\s\S]*)$/;

/** A frontmatter line as a line of the whole file (the opening fence is line 1). */
function lineIn(doc: ReturnType<typeof parseDocument>, lc: LineCounter, at: readonly PropertyKey[], key?: string): number | undefined {
  const l = lineOf(doc, lc, at, key);
  return l === undefined ? undefined : l + 1;
}

function invalid(source: string, text: string, hint?: string): BrigError {
  return new BrigError('invalid_input', `agent spec ${text}`, { data: { file: source }, hint: hint ?? 'Fix the spec; `brig agents show NAME` explains a valid one.' });
}

export function parseAgentSpec(text: string, source: string): Result<AgentSpec> {
  if (Buffer.byteLength(text) > MAX_SPEC_BYTES) return err(invalid(source, `${source} is over ${MAX_SPEC_BYTES} bytes`));
  const m = FENCE.exec(text);
  if (!m) return err(invalid(source, `${source}:1: no YAML frontmatter`, 'A spec starts with a `---` line, the frontmatter, and a closing `---` line, then the instructions.'));
  const lc = new LineCounter();
  const doc = parseDocument(m[1]!, { lineCounter: lc, prettyErrors: false, uniqueKeys: true });
  if (doc.errors.length > 0) {
    const e = doc.errors[0]!;
    return err(invalid(source, `${source}:${(e.linePos?.[0]?.line ?? lc.linePos(e.pos[0]).line) + 1}: YAML ${e.code}: ${e.message.split('\n')[0]}`));
  }
  const parsed = AgentFrontmatterSchema.safeParse(doc.toJS({ maxAliasCount: 20 }) ?? {});
  if (!parsed.success) {
    const issue = [...parsed.error.issues].sort((a, b) => Number(b.code === 'unrecognized_keys') - Number(a.code === 'unrecognized_keys'))[0]!;
    if (issue.code === 'unrecognized_keys') {
      const key = issue.keys[0]!;
      const near = nearest(key, Object.keys(AgentFrontmatterSchema.shape));
      const line = lineIn(doc, lc, issue.path, key);
      return err(invalid(source, `${source}${line ? `:${line}` : ''}: unknown key "${key}"`, near ? `Did you mean "${near}"?` : `Keys: ${Object.keys(AgentFrontmatterSchema.shape).join(', ')}.`));
    }
    const line = lineIn(doc, lc, issue.path);
    const where = issue.path.map(String).join('.');
    return err(invalid(source, `${source}${line ? `:${line}` : ''}: "${where || '(top)'}": ${issue.message}`));
  }
  const instructions = m[2]!.trim();
  if (instructions.length === 0) return err(invalid(source, `${source}: the instructions (the markdown after the frontmatter) are empty`));
  return ok({ ...parsed.data, instructions, source });
}

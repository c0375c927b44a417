/**
 * The `hooks` section of $BRIG_HOME/config.yaml: operator hooks reachable from `brig serve`
 * (issue 22 item 4). `prepareSpawn` and `onEnded` are each either a command (an argv array,
 * run without a shell) or a webhook POST to loopback http or a unix socket; each has a timeout
 * (default 10 s, at most 60 s) after which it is killed / aborted.
 *
 * Guarantees: strict like the rest of the file — an unknown key, a shell string, a webhook to
 * any host but loopback refuses the whole file with its line; a URL is never echoed (it could
 * carry a credential). Threat: a hook that ships run metadata off the machine; a typo that
 * silently drops a hook. Fails closed.
 */
import { z } from 'zod';
import { BrigError, err, ok, type Result } from '../util/errors.js';
import { describeIssue, parseYaml } from './yaml-issues.js';

export const HOOK_TIMEOUT_DEFAULT_MS = 10_000;
export const HOOK_TIMEOUT_MAX_MS = 60_000;

/** `unix://<absolute socket path>[:<request path>]`: the socket and the path POSTed to. */
const UNIX_URL = /^unix:\/\/(\/[^:\s]+)(?::(\/\S*))?$/;

/** Where a webhook goes: loopback http (127.0.0.0/8, ::1, localhost) or a unix socket; else undefined. */
export function webhookTarget(url: string): { socketPath: string; path: string } | { url: URL } | undefined {
  const unix = UNIX_URL.exec(url);
  if (unix) return { socketPath: unix[1]!, path: unix[2] ?? '/' };
  let u: URL;
  try {
    u = new URL(url);
  } catch {
    return undefined;
  }
  if (u.protocol !== 'http:' || u.username !== '' || u.password !== '') return undefined;
  const h = u.hostname;
  const loop = h === 'localhost' || h === '[::1]' || /^127\.\d{1,3}\.\d{1,3}\.\d{1,3}$/.test(h);
  return loop ? { url: u } : undefined;
}

const Argv = z.array(z.string().min(1).max(4096)).min(1).max(64);
const Webhook = z
  .string()
  .max(2048)
  .refine((u) => webhookTarget(u) !== undefined, 'a webhook goes to loopback only: http://127.x.y.z, http://[::1] or http://localhost (no credentials), or unix:///path/to.sock[:/path]');

const HookSchema = z
  .strictObject({
    command: Argv.optional(),
    /** prepareSpawn only: the command that undoes it (default: `command` again, phase "rollback"). */
    rollback: Argv.optional(),
    webhook: Webhook.optional(),
    timeoutMs: z.number().int().min(100).max(HOOK_TIMEOUT_MAX_MS).default(HOOK_TIMEOUT_DEFAULT_MS),
  })
  .superRefine((h, ctx) => {
    if ((h.command === undefined) === (h.webhook === undefined)) ctx.addIssue({ code: 'custom', message: 'a hook is either a command or a webhook (exactly one)', path: [] });
    if (h.rollback !== undefined && h.command === undefined) ctx.addIssue({ code: 'custom', message: 'rollback goes with a command hook', path: ['rollback'] });
  });

export const HooksSectionSchema = z
  .strictObject({ prepareSpawn: HookSchema.optional(), onEnded: HookSchema.optional() })
  .superRefine((s, ctx) => {
    if (s.onEnded?.rollback !== undefined) ctx.addIssue({ code: 'custom', message: 'rollback is for prepareSpawn only', path: ['onEnded', 'rollback'] });
  });

export type HookConfig = z.infer<typeof HookSchema>;
export type HooksSection = z.infer<typeof HooksSectionSchema>;

export function validHookKeysAt(path: readonly PropertyKey[]): readonly string[] {
  const p = path.map(String);
  if (p.length === 1) return ['prepareSpawn', 'onEnded'];
  if (p.length === 2) return ['command', 'rollback', 'webhook', 'timeoutMs'];
  return [];
}

/** config.yaml's `hooks` section (none: {}); every refusal is an `invalid_input` with `file:line`. */
export function parseHooksConfig(text: string, source: string): Result<HooksSection> {
  const { doc, lc, problems } = parseYaml(text, source);
  const fail = (ps: { text: string; hint?: string }[]) =>
    err(
      new BrigError('invalid_input', ps[0]!.text, {
        data: { file: source, problems: ps.map((p) => (p.hint ? `${p.text} (${p.hint})` : p.text)) },
        hint: `${ps[0]!.hint ? `${ps[0]!.hint} ` : ''}Fix ${source}; docs/supervisor.md ("Hooks") describes its hooks section.`,
      }),
    );
  if (problems.length > 0) return fail(problems);
  const js = (doc.toJS({ maxAliasCount: 50 }) ?? {}) as Record<string, unknown>;
  if (js.hooks === undefined || js.hooks === null) return ok({});
  const parsed = HooksSectionSchema.safeParse(js.hooks);
  if (parsed.success) return ok(parsed.data);
  const keysAt = (p: readonly PropertyKey[]) => (p[0] === 'hooks' ? validHookKeysAt(p) : []);
  const issues = [...parsed.error.issues].sort((a, b) => Number(b.code === 'unrecognized_keys') - Number(a.code === 'unrecognized_keys'));
  return fail(issues.map((i) => describeIssue({ ...i, path: ['hooks', ...i.path] }, source, doc, lc, keysAt)));
}

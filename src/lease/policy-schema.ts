import { z } from 'zod';
import { CapabilitySchema, EGRESS_BUDGET_KEYS, EGRESS_RULE_ID_RE, EgressBudgetsSchema, EgressRuleSchema, LIMIT_KEYS, LimitsSchema, POSTURE_ORDER, PostureSchema } from './types.js';

/** Names of profiles, groups and tools: short, lowercase, no path characters. */
const NameSchema = z.string().regex(/^[a-z][a-z0-9_-]{0,63}$/, 'a lowercase name: letters, digits, _ and -');
const ToolSchema = z.string().regex(/^[a-z][a-z0-9_.-]{0,63}$/, 'a lowercase tool name');

export const PolicyGroupSchema = z.strictObject({
  description: z.string().max(500).optional(),
  caps: z.array(CapabilitySchema).default([]),
  tools: z.array(ToolSchema).default([]),
});

const RuleIdSchema = z.string().regex(EGRESS_RULE_ID_RE, 'a rule id: lowercase letters, digits, _ and - (at most 32)');
const EnvName = z.string().regex(/^[A-Z_][A-Z0-9_]{0,127}$/, 'the NAME of an environment variable (the secret itself never goes in a policy)');
const CidrSchema = z.string().max(64);

/** A policy rule: an egress rule without its id (the key names it), defaults filled by normalizeRule. */
export const PolicyEgressRuleSchema = EgressRuleSchema.omit({ id: true }).partial({ ports: true, scheme: true, tls: true, websocket: true });

/**
 * A credential binding: the operator's secret (read from the supervisor's environment, never
 * written here, never in a jail) set as one header on inspected requests to its hosts and paths.
 */
export const CredentialBindingSchema = z.strictObject({
  secretEnv: EnvName,
  header: z.string().regex(/^[a-z][a-z0-9-]{0,63}$/, 'a lower-case header name'),
  /** `{}` stands for the secret (`Bearer {}`). */
  format: z.string().max(200).refine((f) => f.includes('{}'), 'the format names the secret as {}').default('{}'),
  hosts: z.array(z.string().min(1).max(256)).min(1).max(64),
  paths: z.array(z.string().min(1).max(1024)).min(1).optional(),
  /** An environment variable the child gets with a random placeholder (SDKs that refuse to start without a key); the gate strips it like any client credential. */
  placeholderEnv: EnvName.optional(),
});
export type CredentialBinding = z.infer<typeof CredentialBindingSchema>;

export const PolicyEgressSchema = z.strictObject({
  rules: z.record(RuleIdSchema, PolicyEgressRuleSchema).default({}),
  credentials: z.record(z.string().regex(/^[a-z][a-z0-9_-]{0,63}$/, 'a binding name: lowercase'), CredentialBindingSchema).default({}),
  /** web_search's endpoint: an https URL reached through a rule the run holds (usually with a credential). */
  search: z.strictObject({ url: z.string().max(2048), query: z.string().regex(/^[A-Za-z0-9_.-]{1,32}$/).default('q') }).optional(),
  denyHosts: z.array(z.string().min(1).max(256)).default([]),
  denyCidrs: z.array(CidrSchema).default([]),
  allowPrivateCidrs: z.array(CidrSchema).default([]),
  /** Added to brig's own list of suffixes no wildcard may cover. */
  multiTenantSuffixes: z.array(z.string().min(1).max(256)).default([]),
});
export type PolicyEgress = z.infer<typeof PolicyEgressSchema>;

export const PolicyProfileSchema = z.strictObject({
  description: z.string().max(500).optional(),
  groups: z.array(NameSchema).default([]),
  caps: z.array(CapabilitySchema).default([]),
  limits: LimitsSchema.partial().optional(),
  posture: PostureSchema.partial().optional(),
  /** The egress rules (policy rule ids) and budgets this profile may grant; root without `rules`: every policy rule. */
  egress: z.strictObject({ rules: z.array(RuleIdSchema).optional(), budgets: EgressBudgetsSchema.partial().optional() }).optional(),
  /**
   * The images a spawn under this profile may run in besides brig's child image: exact names
   * (`my-app:1.2`, `toolbox`) or every tag of one repository (`my-app:*`). Absent: root's list;
   * root's absent: any local image.
   */
  images: z.array(z.string().regex(/^[a-z0-9][a-z0-9._/:@-]{0,252}(:\*)?$/, 'an image name (lower case, no spaces), or REPO:* for every tag')).max(64).optional(),
});

export const PolicyFileSchema = z.strictObject({
  version: z.literal(1),
  groups: z.record(NameSchema, PolicyGroupSchema).default({}),
  denylist: z
    .strictObject({ caps: z.array(CapabilitySchema).default([]), tools: z.array(ToolSchema).default([]) })
    .default({ caps: [], tools: [] }),
  egress: PolicyEgressSchema.optional(),
  profiles: z.record(NameSchema, PolicyProfileSchema),
});
export type PolicyFile = z.infer<typeof PolicyFileSchema>;

/** The valid keys at a path of a policy file, for "did you mean" hints. */
export function validKeysAt(path: readonly PropertyKey[]): readonly string[] {
  const p = path.map(String);
  if (p.length === 0) return Object.keys(PolicyFileSchema.shape);
  if (p[0] === 'denylist' && p.length === 1) return ['caps', 'tools'];
  if (p[0] === 'groups' && p.length === 2) return Object.keys(PolicyGroupSchema.shape);
  if (p[0] === 'profiles' && p.length === 2) return Object.keys(PolicyProfileSchema.shape);
  if (p[0] === 'profiles' && p.length === 3 && p[2] === 'limits') return LIMIT_KEYS;
  if (p[0] === 'profiles' && p.length === 3 && p[2] === 'posture') return Object.keys(POSTURE_ORDER);
  if (p[0] === 'profiles' && p.length === 3 && p[2] === 'egress') return ['rules', 'budgets'];
  if (p[0] === 'profiles' && p.length === 4 && p[2] === 'egress' && p[3] === 'budgets') return EGRESS_BUDGET_KEYS;
  if (p[0] === 'egress' && p.length === 1) return Object.keys(PolicyEgressSchema.shape);
  if (p[0] === 'egress' && p.length === 3 && p[1] === 'rules') return Object.keys(PolicyEgressRuleSchema.shape);
  if (p[0] === 'egress' && p.length === 3 && p[1] === 'credentials') return Object.keys(CredentialBindingSchema.shape);
  return [];
}

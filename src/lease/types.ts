import { z } from 'zod';

import {
  CAPABILITIES,
  EGRESS_METHODS,
  EGRESS_SCHEMES,
  EGRESS_TLS,
  type EgressAsk,
  type EgressBudgets,
  type EgressGrant,
  type EgressRule,
  POSTURE_ORDER,
  type Capability,
  type Grant,
  type LeaseRecord,
  type LeaseRequest,
  type Limits,
  type Posture,
  type Refusal,
} from '../protocol/index.js';

/** The lease vocabulary's schemas, declared against protocol/leases.ts' types (never the other way round). */
export { CAPABILITIES, EGRESS_BUDGET_KEYS, LIMIT_KEYS, POSTURE_ORDER } from '../protocol/index.js';
export type { Capability, EgressAsk, EgressBudgets, EgressGrant, EgressRule, Grant, LeaseRecord, LeaseRequest, LimitKey, Limits, Posture, Refusal } from '../protocol/index.js';
export const CapabilitySchema = z.enum(CAPABILITIES) satisfies z.ZodType<Capability>;
export const LimitsSchema = z.strictObject({
  cpu: z.number().positive(),
  memoryMb: z.number().int().positive(),
  pids: z.number().int().positive(),
  diskMb: z.number().int().positive(),
  timeoutMs: z.number().int().positive(),
  maxSteps: z.number().int().nonnegative(),
  tokens: z.number().int().nonnegative(),
  costUsd: z.number().nonnegative(),
  resultBytes: z.number().int().nonnegative(),
  maxChildren: z.number().int().nonnegative(),
  maxDepth: z.number().int().nonnegative(),
}) satisfies z.ZodType<Limits>;
/** /workspace's ceiling (MiB) for a policy whose root sets no diskMb, and for a lease record written before diskMb existed. */
export const DEFAULT_ROOT_DISK_MB = 1024;

export const PostureSchema = z.strictObject({
  network: z.enum(POSTURE_ORDER.network),
  runtime: z.enum(POSTURE_ORDER.runtime),
  user: z.enum(POSTURE_ORDER.user),
}) satisfies z.ZodType<Posture>;

export const STRICTEST_POSTURE: Posture = Object.freeze({
  network: 'none',
  runtime: 'docker-hardened',
  user: 'nonroot',
});

/** Egress: the shapes only (what a pattern or a path may be is egress-attenuate.ts' normalizeRule). */
export const EGRESS_RULE_ID_RE = /^[a-z0-9][a-z0-9_-]{0,31}$/;
const HostText = z.string().min(1).max(256);
const Port = z.number().int().min(1).max(65535);
const PathPrefix = z.string().min(1).max(1024);
export const EgressRuleSchema = z.strictObject({
  id: z.string().regex(EGRESS_RULE_ID_RE, 'a rule id: lowercase letters, digits, _ and - (at most 32)'),
  hosts: z.array(HostText).min(1).max(64),
  ports: z.array(Port).min(1).max(64),
  scheme: z.enum(EGRESS_SCHEMES),
  tls: z.enum(EGRESS_TLS),
  methods: z.array(z.enum(EGRESS_METHODS)).min(1).optional(),
  paths: z.array(PathPrefix).min(1).max(64).optional(),
  websocket: z.boolean(),
  credential: z.string().regex(/^[a-z][a-z0-9_-]{0,63}$/).optional(),
}) satisfies z.ZodType<EgressRule>;
const Count = z.number().int().nonnegative().max(Number.MAX_SAFE_INTEGER);
export const EgressBudgetsSchema = z.strictObject({
  connections: Count,
  concurrent: Count,
  bytesUp: Count,
  bytesDown: Count,
  requestBodyMax: Count,
  dnsNames: Count,
  idleMs: Count,
  lifetimeMs: Count,
}) satisfies z.ZodType<EgressBudgets>;
export const EgressGrantSchema = z.strictObject({ rules: z.array(EgressRuleSchema).max(256), budgets: EgressBudgetsSchema }) satisfies z.ZodType<EgressGrant>;
/** A rule a spawn asks for: a policy rule's id, or a narrowed rule (no id: it takes the parent rule's). */
export const EgressRuleAskSchema = z.union([
  z.string().regex(EGRESS_RULE_ID_RE, 'a rule id of the policy'),
  z.strictObject({
    hosts: z.array(HostText).min(1).max(64),
    ports: z.array(Port).min(1).max(64).optional(),
    scheme: z.enum(EGRESS_SCHEMES).optional(),
    tls: z.enum(EGRESS_TLS).optional(),
    methods: z.array(z.enum(EGRESS_METHODS)).min(1).optional(),
    paths: z.array(PathPrefix).min(1).max(64).optional(),
    websocket: z.boolean().optional(),
    credential: z.string().regex(/^[a-z][a-z0-9_-]{0,63}$/).optional(),
  }),
]);
export const EgressAskSchema = z.strictObject({
  rules: z.array(EgressRuleAskSchema).max(32),
  budgets: EgressBudgetsSchema.partial().optional(),
}) satisfies z.ZodType<EgressAsk>;

/** A grant: what a lease allows. */
export const GrantSchema = z.strictObject({
  caps: z.array(CapabilitySchema),
  limits: LimitsSchema,
  posture: PostureSchema,
  egress: EgressGrantSchema.optional(),
}) satisfies z.ZodType<Grant>;

/** What a child asks for; anything left out means "as much as the parent allows" (egress: none). */
export const LeaseRequestSchema = z.strictObject({
  caps: z.array(CapabilitySchema).optional(),
  limits: LimitsSchema.partial().optional(),
  posture: PostureSchema.partial().optional(),
  egress: EgressAskSchema.optional(),
}) satisfies z.ZodType<LeaseRequest>;

export const RefusalSchema = z.strictObject({
  what: z.string(), // a capability name, a limit key, `posture.<field>`, `egress.…`
  code: z.enum(['capability_denied', 'posture_downgrade', 'limit_clamped', 'denylisted', 'egress_rule_denied']),
  reason: z.string(),
}) satisfies z.ZodType<Refusal>;

/** A persisted lease record. The bearer token itself is never stored: only its hash. */
export const LeaseRecordSchema = z.strictObject({
  id: z.string(),
  parentLeaseId: z.string().nullable(),
  runId: z.string(),
  rootRunId: z.string(),
  depth: z.number().int().nonnegative(),
  profile: z.string(),
  caps: z.array(CapabilitySchema),
  limits: LimitsSchema,
  posture: PostureSchema,
  egress: EgressGrantSchema.optional(),
  requested: LeaseRequestSchema,
  refused: z.array(RefusalSchema),
  tokenHash: z.string(),
  issuedAt: z.string(),
  expiresAt: z.string(),
  revoked: z.strictObject({ by: z.string(), at: z.string(), reason: z.string().optional() }).nullable(),
}) satisfies z.ZodType<LeaseRecord>;

import { z } from 'zod';

import {
  CAPABILITIES,
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
export { CAPABILITIES, LIMIT_KEYS, POSTURE_ORDER } from '../protocol/index.js';
export type { Capability, Grant, LeaseRecord, LeaseRequest, LimitKey, Limits, Posture, Refusal } from '../protocol/index.js';
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

/** A grant: what a lease allows. */
export const GrantSchema = z.strictObject({
  caps: z.array(CapabilitySchema),
  limits: LimitsSchema,
  posture: PostureSchema,
}) satisfies z.ZodType<Grant>;

/** What a child asks for; anything left out means "as much as the parent allows". */
export const LeaseRequestSchema = z.strictObject({
  caps: z.array(CapabilitySchema).optional(),
  limits: LimitsSchema.partial().optional(),
  posture: PostureSchema.partial().optional(),
}) satisfies z.ZodType<LeaseRequest>;

export const RefusalSchema = z.strictObject({
  what: z.string(), // a capability name, a limit key, or `posture.<field>`
  code: z.enum(['capability_denied', 'posture_downgrade', 'limit_clamped', 'denylisted']),
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
  requested: LeaseRequestSchema,
  refused: z.array(RefusalSchema),
  tokenHash: z.string(),
  issuedAt: z.string(),
  expiresAt: z.string(),
  revoked: z.strictObject({ by: z.string(), at: z.string(), reason: z.string().optional() }).nullable(),
}) satisfies z.ZodType<LeaseRecord>;

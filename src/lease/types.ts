import { z } from 'zod';

import { CAPABILITIES } from './capabilities.js';

export { CAPABILITIES };
export const CapabilitySchema = z.enum(CAPABILITIES);
export type Capability = z.infer<typeof CapabilitySchema>;

/** Numeric limits. Every one only shrinks from parent to child. */
export const LIMIT_KEYS = [
  'cpu', // CPUs (fractional)
  'memoryMb',
  'pids',
  'diskMb', // /workspace's size
  'timeoutMs',
  'maxSteps',
  'tokens',
  'costUsd',
  'resultBytes',
  'maxChildren',
  'maxDepth',
] as const;
export type LimitKey = (typeof LIMIT_KEYS)[number];
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
});
export type Limits = z.infer<typeof LimitsSchema>;
/** /workspace's ceiling (MiB) for a policy whose root sets no diskMb, and for a lease record written before diskMb existed. */
export const DEFAULT_ROOT_DISK_MB = 1024;

/**
 * Posture: ordered from strictest to loosest. A child's posture is never looser than its
 * parent's; asking for looser is refused (`posture_downgrade`), never silently clamped.
 */
export const POSTURE_ORDER = {
  network: ['none', 'egress'] as const,
  runtime: ['docker-hardened'] as const,
  user: ['nonroot'] as const,
} as const;
export const PostureSchema = z.strictObject({
  network: z.enum(POSTURE_ORDER.network),
  runtime: z.enum(POSTURE_ORDER.runtime),
  user: z.enum(POSTURE_ORDER.user),
});
export type Posture = z.infer<typeof PostureSchema>;

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
});
export type Grant = z.infer<typeof GrantSchema>;

/** What a child asks for; anything left out means "as much as the parent allows". */
export const LeaseRequestSchema = z.strictObject({
  caps: z.array(CapabilitySchema).optional(),
  limits: LimitsSchema.partial().optional(),
  posture: PostureSchema.partial().optional(),
});
export type LeaseRequest = z.infer<typeof LeaseRequestSchema>;

export const RefusalSchema = z.strictObject({
  what: z.string(), // a capability name, a limit key, or `posture.<field>`
  code: z.enum(['capability_denied', 'posture_downgrade', 'limit_clamped', 'denylisted']),
  reason: z.string(),
});
export type Refusal = z.infer<typeof RefusalSchema>;

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
});
export type LeaseRecord = z.infer<typeof LeaseRecordSchema>;

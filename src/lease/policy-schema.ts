import { z } from 'zod';
import { CapabilitySchema, LIMIT_KEYS, LimitsSchema, POSTURE_ORDER, PostureSchema } from './types.js';

/** Names of profiles, groups and tools: short, lowercase, no path characters. */
const NameSchema = z.string().regex(/^[a-z][a-z0-9_-]{0,63}$/, 'a lowercase name: letters, digits, _ and -');
const ToolSchema = z.string().regex(/^[a-z][a-z0-9_.-]{0,63}$/, 'a lowercase tool name');

export const PolicyGroupSchema = z.strictObject({
  description: z.string().max(500).optional(),
  caps: z.array(CapabilitySchema).default([]),
  tools: z.array(ToolSchema).default([]),
});

export const PolicyProfileSchema = z.strictObject({
  description: z.string().max(500).optional(),
  groups: z.array(NameSchema).default([]),
  caps: z.array(CapabilitySchema).default([]),
  limits: LimitsSchema.partial().optional(),
  posture: PostureSchema.partial().optional(),
});

export const PolicyFileSchema = z.strictObject({
  version: z.literal(1),
  groups: z.record(NameSchema, PolicyGroupSchema).default({}),
  denylist: z
    .strictObject({ caps: z.array(CapabilitySchema).default([]), tools: z.array(ToolSchema).default([]) })
    .default({ caps: [], tools: [] }),
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
  return [];
}

/**
 * The lease vocabulary: the closed set of capabilities, the limits, the posture and the lease
 * record every face shows. No wildcards: a capability not named here does not exist, and a
 * policy naming one fails to load. Plain data; lease/types.ts declares its schemas against
 * these types.
 */
import type { EgressAsk, EgressGrant } from './egress.js';
export const CAPABILITIES = [
  'spawn', // start grandchildren through the broker
  'refs.read', // slice its own descendants' ResultRefs
  'llm', // call a model through the broker (keys stay in the supervisor)
  'steer', // steer its own children
  'kill', // kill its own children
  'artifacts.read', // see artifacts its parent handed it
  'exec', // run processes inside its own jail
  'graph', // run an execution graph through the broker: its nodes are children of this run, each lease inside this run's
  'net.egress', // reach the hosts the lease's egress rules name, through the gate (the jail still has no network)
] as const;
export type Capability = (typeof CAPABILITIES)[number];

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
export type Limits = Record<LimitKey, number>;

/**
 * Posture: ordered from strictest to loosest. A child's posture is never looser than its
 * parent's; asking for looser is refused (`posture_downgrade`), never silently clamped.
 */
export const POSTURE_ORDER = {
  network: ['none', 'egress'] as const,
  runtime: ['docker-hardened'] as const,
  user: ['nonroot'] as const,
} as const;
export interface Posture {
  network: (typeof POSTURE_ORDER.network)[number];
  runtime: (typeof POSTURE_ORDER.runtime)[number];
  user: (typeof POSTURE_ORDER.user)[number];
}

/** A grant: what a lease allows. */
export interface Grant {
  caps: Capability[];
  limits: Limits;
  posture: Posture;
  /** Egress rules and budgets (a policy profile's: the most it may grant). Absent or no rules: no egress. */
  egress?: EgressGrant | undefined;
}

/** What a child asks for; anything left out means "as much as the parent allows". */
export interface LeaseRequest {
  caps?: Capability[] | undefined;
  limits?: Partial<Limits> | undefined;
  posture?: Partial<Posture> | undefined;
  /** Egress is never inherited: the rules a child gets are the ones it names here. */
  egress?: EgressAsk | undefined;
}

export interface Refusal {
  /** A capability name, a limit key, `posture.<field>`, `egress.rules[<i>]` or `egress.budgets.<key>`. */
  what: string;
  code: 'capability_denied' | 'posture_downgrade' | 'limit_clamped' | 'denylisted' | 'egress_rule_denied';
  reason: string;
}

/** A persisted lease record. The bearer token itself is never stored: only its hash. */
export interface LeaseRecord {
  id: string;
  parentLeaseId: string | null;
  runId: string;
  rootRunId: string;
  depth: number;
  profile: string;
  caps: Capability[];
  limits: Limits;
  posture: Posture;
  /** The egress it holds; absent (every record before egress existed, and most since): none. */
  egress?: EgressGrant | undefined;
  requested: LeaseRequest;
  refused: Refusal[];
  tokenHash: string;
  issuedAt: string;
  expiresAt: string;
  revoked: { by: string; at: string; reason?: string | undefined } | null;
}

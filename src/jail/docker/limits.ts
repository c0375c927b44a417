/**
 * A jail's resource limits: the floors, the rendering, and what the kernel will be given.
 *
 * Guarantees: every limit a jail gets (cpu, memory, pids, /tmp size) is at or above its floor
 * and never above what the spec — the lease, already min(parent, requested) — asked for
 * (INV-9, INV-1). The same two functions judge the create body before it is sent and the
 * engine's inspect report after create: one predicate, two users.
 * Threat: a limit that renders to the engine's or the kernel's "no limit" value. The engine
 * turns NanoCpus into a CFS quota over a 100 ms period with integer arithmetic, so 0.000001
 * CPU became a quota of 0 — no quota at all; memory, pids and tmpfs size all read 0 as
 * "unlimited" too. A verify that only compared the engine's echo with the same wrong body
 * passed it.
 * Trusts: the engine's conversion NanoCpus → quota (moby daemon/oci_linux.go: quota =
 * NanoCpus × 100000 / 1e9, period 100000 µs), which this file restates to check.
 * Fails: closed. Below a floor is refused (`invalid_input` naming the floor), never raised:
 * raising would give a child more than its lease.
 *
 * Pure: no engine.
 */
import { BrigError } from '../../util/errors.js';
import type { JailLimits } from '../types.js';

export const MIB = 1024 * 1024;
/** The engine's CFS period for NanoCpus (µs). */
export const CFS_PERIOD_US = 100_000;
/** The kernel's smallest CFS quota (µs): cpu.cfs_quota_us refuses less. */
export const CFS_MIN_QUOTA_US = 1000;

/** The smallest limit of each kind a jail is made with, and why. */
export const LIMIT_FLOORS = Object.freeze({
  cpu: 0.01, // 1 ms per 100 ms period: the kernel's smallest quota; below it the engine renders 0, i.e. no limit
  memoryMb: 6, // the engine's own minimum (it refuses less); 0 would mean no limit
  pids: 16, // node starts 7 threads and 4 more for libuv's pool at its first fs call; with fewer it hangs, it does not fail
  tmpfsMb: 1, // tmpfs reads size=0 as no limit
  diskMb: 16, // an ext4 workspace smaller than this is mostly its own metadata
});
type LimitName = keyof typeof LIMIT_FLOORS;

const FLOOR_HINTS: Record<LimitName, string> = {
  cpu: 'below 0.01 CPU the engine\'s CFS quota rounds to 0, which the kernel reads as no limit',
  memoryMb: 'the engine refuses a memory limit under 6 MiB',
  pids: 'node needs about 11 tasks before it can read a file; with fewer it hangs',
  tmpfsMb: 'a /tmp of size 0 would be unlimited',
  diskMb: 'a smaller /workspace filesystem leaves the child almost nothing after its own metadata',
};

/** Refuses a spec's limits that are not numbers, not integers where they must be, or below a floor. */
export function checkRequestedLimits(limits: JailLimits): BrigError | undefined {
  for (const k of Object.keys(LIMIT_FLOORS) as LimitName[]) {
    const v = limits[k];
    if (typeof v !== 'number' || !Number.isFinite(v)) return new BrigError('invalid_input', `jail limit ${k} must be a finite number`, { data: { limit: k } });
    if (k !== 'cpu' && !Number.isInteger(v)) return new BrigError('invalid_input', `jail limit ${k} must be an integer`, { data: { limit: k } });
    const floor = LIMIT_FLOORS[k];
    if (v < floor) {
      return new BrigError('invalid_input', `jail limit ${k} (${v}) is below the floor of ${floor}`, {
        data: { limit: k, floor, requested: v },
        hint: `Ask for at least ${floor} (${FLOOR_HINTS[k]}).`,
      });
    }
  }
  return undefined;
}

/**
 * NanoCpus for a CPU count: a whole number of quota microseconds, rounded down so the quota
 * is never above the lease (the 1e-6 absorbs binary fractions such as 0.29 × 1e5).
 */
export function nanoCpusFor(cpu: number): number {
  return Math.floor(cpu * CFS_PERIOD_US + 1e-6) * (1e9 / CFS_PERIOD_US);
}

/** What the kernel will be given, read from a create body's or an inspect report's HostConfig. */
export interface EffectiveLimits {
  cfsQuotaUs: number | null;
  /** CpuQuota / CpuPeriod set beside NanoCpus (brig never sets them). */
  rawCpuQuota: number;
  rawCpuPeriod: number;
  memoryBytes: number | null;
  memorySwapBytes: number | null;
  pids: number | null;
  tmpfsBytes: number | null;
}

const num = (x: unknown): number | null => (typeof x === 'number' && Number.isFinite(x) ? x : null);

/** Bytes of a tmpfs `size=` option (k, m, g suffixes), or null when absent or unreadable. */
export function tmpfsSizeBytes(options: unknown): number | null {
  if (typeof options !== 'string') return null;
  const m = /(?:^|,)size=(\d+)([kmg]?)(?:,|$)/i.exec(options);
  if (!m) return null;
  const unit = { '': 1, k: 1024, m: MIB, g: 1024 * MIB }[m[2]!.toLowerCase() as '' | 'k' | 'm' | 'g'];
  return Number(m[1]) * unit;
}

export function effectiveLimits(h: Record<string, unknown> | object): EffectiveLimits {
  const hc = h as Record<string, unknown>;
  const nano = num(hc.NanoCpus);
  return {
    // The engine's own integer arithmetic (int64 NanoCpus × period / 1e9).
    cfsQuotaUs: nano === null ? null : Math.floor((nano * CFS_PERIOD_US) / 1e9),
    rawCpuQuota: num(hc.CpuQuota) ?? 0,
    rawCpuPeriod: num(hc.CpuPeriod) ?? 0,
    memoryBytes: num(hc.Memory),
    memorySwapBytes: num(hc.MemorySwap),
    pids: num(hc.PidsLimit),
    tmpfsBytes: tmpfsSizeBytes((hc.Tmpfs as Record<string, unknown> | undefined)?.['/tmp']),
  };
}

export interface LimitDrift {
  field: string;
  expected: unknown;
  actual: unknown;
}

/** Where the effective limits differ from what the lease intended: positive, at or above the floors, never above the lease. */
export function limitDrift(e: EffectiveLimits, intent: JailLimits): LimitDrift[] {
  const out: LimitDrift[] = [];
  const check = (field: string, expected: unknown, actual: unknown, good: boolean) => {
    if (!good) out.push({ field, expected, actual });
  };
  const wantQuota = Math.floor(intent.cpu * CFS_PERIOD_US + 1e-6);
  const q = e.cfsQuotaUs;
  check('limits.cpu', `cfs quota ${wantQuota} µs per ${CFS_PERIOD_US} µs (>= ${CFS_MIN_QUOTA_US})`, q, q !== null && q >= CFS_MIN_QUOTA_US && q >= LIMIT_FLOORS.cpu * CFS_PERIOD_US && q === wantQuota);
  check('limits.cpuQuota', 'unset (NanoCpus only)', { CpuQuota: e.rawCpuQuota, CpuPeriod: e.rawCpuPeriod }, e.rawCpuQuota === 0 && e.rawCpuPeriod === 0);
  const mem = intent.memoryMb * MIB;
  check('limits.memory', mem, e.memoryBytes, e.memoryBytes === mem && intent.memoryMb >= LIMIT_FLOORS.memoryMb);
  check('limits.memorySwap', mem, e.memorySwapBytes, e.memorySwapBytes === mem);
  check('limits.pids', intent.pids, e.pids, e.pids === intent.pids && intent.pids >= LIMIT_FLOORS.pids);
  const tmp = intent.tmpfsMb * MIB;
  check('limits.tmpfs', tmp, e.tmpfsBytes, e.tmpfsBytes === tmp && intent.tmpfsMb >= LIMIT_FLOORS.tmpfsMb);
  return out;
}

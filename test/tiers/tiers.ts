/**
 * The test tiers `make test` runs in order, each with the files it owns, how many of them run
 * at once and the wall-clock budget it must stay under (test/tiers/run.ts fails a tier that
 * passes it). Budgets come from runs on the reference machine (2 cores, a real engine; other
 * work on it at the time): unit 17–28 s measured, integration 333–363 s, long 75–107 s (its
 * wall is the longevity test's). The real local model's agent test (issue 31) is one
 * integration file of 15–40 s, started first. Round 2026-12-02 added 93 → 95 integration files'
 * worth of new proofs (egress in real jails, graphs, a full home, engine outages, restarts,
 * Atlas, hand-off) and ~110 unit tests (graph properties): unit 40.7 s and integration 576 s
 * measured at load 8, then unit 22 s, integration 446 s, long 62 s in the clean-checkout CI run
 * (load 4.6 from the tests themselves), so the budgets grew to unit 40, integration 520 (≈ 15 %
 * over that run), long 95 — still a guard a slower suite trips. Round 2026-12-03 added 14
 * integration files (foreign images built here, repositories and patches, the tool bound,
 * honest ends, conversations, resume, self-view, web tools, egress after restart, graph macros
 * and MCP, the quiet log, the CLI's promises, the thin path): integration 661 s and long 134 s
 * in a clean-checkout CI run at load 6–7 with other tests beside it (700 s in a second), so
 * integration 720 until a quiet run measures it, long 120. Round 2026-12-03 (second part)
 * added 10 integration files (graph crash and explain, replay, admission, operator hooks, the
 * toolbox's coding agent, a private TMPDIR, graph_run): ~150 s more file time, so integration
 * 840 until a clean-checkout run measures it. Round 2026-12-03 (third part) added 16
 * integration files (the library's handles and package, a foreign image's warm pool, graph
 * budgets, graph_wait and the agents example, inspected TLS in and out of a jail, the run's
 * timing, completion ids, resume that follows, the event client's resume): ~200 s more file
 * time; a clean-checkout run at load 11 (helpers beside it) took 1,210 s, so integration 900
 * until a quiet one measures it. Every *.test.ts
 * file under test/ is in exactly one tier (test/arch/tiers.test.ts).
 */
import fs from 'node:fs';
import path from 'node:path';

export const ROOT = path.resolve(import.meta.dirname, '../..');

export type TierName = 'unit' | 'integration' | 'long' | 'k8s';

export interface Tier {
  name: TierName;
  /** One line for `make help` and the summary. */
  what: string;
  /** How many files run at once. */
  concurrency: number;
  budgetS: number;
  /**
   * Files run one after another in `concurrency` shared processes (test/tiers/worker.ts)
   * instead of one process each: no per-file start-up (tsx, the library's imports).
   */
  shared: boolean;
  /** In a shared tier, the files that still get a process of their own, each with why. */
  ownProcess: Readonly<Record<string, string>>;
  /** Files of this tier that run with no other file beside them, each with why. */
  alone: Readonly<Record<string, string>>;
  /** Files started first, longest first (measured): the pool ends when its longest file does. */
  startFirst: readonly string[];
}

/**
 * The long ones: soak-like loads (40 s and more of wall each, measured), a real browser, the
 * whole demo; their own tier so that `make test-integration` stays a quicker loop, and still
 * part of `make test` and CI.
 */
export const LONG: Readonly<Record<string, string>> = {
  'test/integration/agents/longevity.test.ts': 'a coordinator delegating 50 children of 5 MB each, one after another (60–110 s)',
  'test/integration/runs/long-lived.test.ts': 'children silent for 11 s twice, a watchdog timeout, admission at the default caps (~40 s)',
  'test/integration/console/console.test.ts': 'a real browser (chromium, installed with apt when missing) against a daemon',
  'test/integration/console/console-graph.test.ts': 'a real browser drawing a graph live and approving its gate against a daemon',
  'test/integration/demo/main-job.test.ts': "`make demo`'s main job end to end: doctor, three jailed children, drill-in",
};

/**
 * Integration files that must not share the machine with another test file, and why. The
 * rest run two at a time: each test makes its own BRIG_HOME (so its own owner label, broker
 * socket directory and disks), its own root run id, loopback servers on port 0.
 */
export const INTEGRATION_ALONE: Readonly<Record<string, string>> = {
  'test/integration/jail/disk-quota.test.ts': "measures the host's free space on /var/lib before and after a run: another file's writes would count against the cap it checks",
};

/**
 * Unit files that change what their process is for whoever runs after them, so they do not
 * share one (each file in a shared process runs alone in it, but leftovers would carry over).
 */
export const UNIT_OWN_PROCESS: Readonly<Record<string, string>> = {
  'test/unit/util/atomic-file.test.ts': "sets the process umask (restored after, but a shared process's leftover work would create files under it)",
};

export const TIERS: readonly Tier[] = [
  {
    name: 'unit',
    what: 'test/unit + test/arch: no engine, fakes of the interfaces',
    concurrency: 3,
    budgetS: 40,
    shared: true,
    ownProcess: UNIT_OWN_PROCESS,
    alone: {},
    startFirst: ['test/unit/jail/collect.test.ts', 'test/unit/lease/attenuate.test.ts', 'test/unit/api/event-hub.test.ts'],
  },
  {
    name: 'integration',
    what: 'test/integration by area: the real engine, DuckDB helper, sockets, HTTP',
    concurrency: 2,
    budgetS: 900,
    shared: false,
    ownProcess: {},
    alone: INTEGRATION_ALONE,
    // Longest first (2 cores, a real engine): the pool ends when its last long file does.
    startFirst: [
      'test/integration/daemon/warm-pool.test.ts',
      'test/integration/models/local-model.test.ts',
      'test/integration/slice/helper-caps.test.ts',
      'test/integration/agents/agent-control.test.ts',
      'test/integration/jail/collect.test.ts',
      'test/integration/runs/supervisor.test.ts',
      'test/integration/cli/live-spawn.test.ts',
      'test/integration/mcp/mcp.test.ts',
      'test/integration/daemon/restart.test.ts',
      'test/integration/graphs/crash.test.ts',
    ],
  },
  {
    name: 'long',
    what: 'the long ones: soak-like loads, a browser, the demo',
    concurrency: 2,
    budgetS: 120,
    shared: false,
    ownProcess: {},
    alone: {},
    startFirst: ['test/integration/agents/longevity.test.ts', 'test/integration/runs/long-lived.test.ts'],
  },
  {
    // The cluster itself (scripts/k8s-up.sh) is started by `make test` before the tiers and
    // ended after; its start is not in this budget (a first build of the binaries is 5–10 min: 557 s on a fresh machine, 2026-12-03).
    name: 'k8s',
    what: 'test/k8s: a real single-node Kubernetes (scripts/k8s-up.sh): pods, PodSecurity, the network holes, exec, the jail driver',
    concurrency: 1,
    // ~155 s here (2026-12-04, 10 files, 51 tests; ~75 s before the pool, egress, repository,
    // doctor-enforcement and conformance ENOSPC/PID rows): the driver's runs each wait on the
    // kubelet's status (~1 s a change), and the doctor's runs wait for NetworkPolicy to apply.
    budgetS: 240,
    shared: false,
    ownProcess: {},
    alone: {},
    startFirst: [],
  },
];

function walk(dir: string): string[] {
  if (!fs.existsSync(dir)) return [];
  return fs.readdirSync(dir, { withFileTypes: true }).flatMap((e) => {
    const p = path.join(dir, e.name);
    if (e.isDirectory()) return walk(p);
    return e.name.endsWith('.test.ts') ? [p] : [];
  });
}

/** Every test file under test/, relative to the repository root, sorted. */
export function allTestFiles(): string[] {
  return walk(path.join(ROOT, 'test')).map((f) => path.relative(ROOT, f).split(path.sep).join('/')).sort();
}

/** The tier a test file belongs to, by where it lives and the LONG list. */
export function tierOf(file: string): TierName | undefined {
  if (file in LONG) return 'long';
  if (file.startsWith('test/unit/') || file.startsWith('test/arch/')) return 'unit';
  if (file.startsWith('test/integration/')) return 'integration';
  if (file.startsWith('test/k8s/')) return 'k8s';
  return undefined;
}

export function filesOf(tier: TierName, all: readonly string[] = allTestFiles()): string[] {
  return all.filter((f) => tierOf(f) === tier);
}

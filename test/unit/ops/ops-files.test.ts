/**
 * The operator's files in docs/ops/ (a Grafana dashboard, Prometheus alert rules) against the
 * daemon's real registry: every PromQL expression names only metrics `brig serve` exports —
 * read from an in-process render of the daemon's families (daemon/metrics-feed.ts), never a
 * hand list — and, when promtool is installed (PATH or $PROMTOOL), `promtool check rules`
 * passes on the rules and `promtool check metrics` on the render (its name conventions).
 */
import { test } from 'node:test';
import assert from 'node:assert/strict';
import { execFile, spawnSync } from 'node:child_process';
import fs from 'node:fs';
import path from 'node:path';
import { parse as parseYaml } from 'yaml';
import { collectState, countBrokerCall, meterEvents, meterRequests, meterSlices, setBuildInfo } from '../../../src/daemon/metrics-feed.js';
import { collectProcess } from '../../../src/daemon/process-metrics.js';
import { Metrics } from '../../../src/util/metrics.js';

const OPS = path.resolve(import.meta.dirname, '../../../docs/ops');
const RULES = path.join(OPS, 'prometheus-alerts.yml');
const DASHBOARD = path.join(OPS, 'grafana-dashboard.json');

/** The daemon's registry as compose() wires it (no engine: no supervisor, no pools), with one value of each feed. */
async function daemonRender(): Promise<string> {
  const m = new Metrics();
  const feed = meterEvents(m);
  setBuildInfo(m, '0.0.0-test');
  collectState(m, () => undefined, []);
  const stop = collectProcess(m);
  try {
    feed({ type: 'run.spawned', runId: 'r-1', kind: 'command', timestamp: new Date().toISOString() });
    feed({ type: 'run.lifecycle_ended', runId: 'r-1', endReason: 'completed', killedBy: null, runtimeMs: 1500 });
    countBrokerCall(m)('progress', 'ok');
    meterSlices(m)({ verb: 'grep', lane: 'operator', outcome: 'ok', seconds: 0.02 });
    meterRequests(m)('listRuns', 200, 0.003);
    return await m.expose();
  } finally {
    stop();
  }
}

function families(text: string): Map<string, string> {
  const out = new Map<string, string>();
  for (const t of text.matchAll(/^# TYPE (\S+) (\S+)$/gm)) out.set(t[1]!, t[2]!);
  return out;
}

const KEYWORDS = new Set(['and', 'or', 'unless', 'bool', 'offset', 'by', 'without', 'on', 'ignoring', 'group_left', 'group_right', 'inf', 'nan']);

/** The metric names a PromQL expression selects: strings, matchers, ranges, groupings, numbers and function names taken out. */
function metricNames(expr: string): string[] {
  const bare = expr
    .replace(/"(?:[^"\\]|\\.)*"/g, '""')
    .replace(/\{[^}]*\}/g, ' ')
    .replace(/\[[^\]]*\]/g, ' ')
    .replace(/\boffset\s+-?[\dsmhdwy]+/g, ' ')
    .replace(/\b(?:by|without|on|ignoring|group_left|group_right)\s*\([^)]*\)/g, ' ')
    .replace(/(?<![\w:])\d+(?:\.\d+)?(?:e[+-]?\d+)?/gi, ' ');
  const names: string[] = [];
  for (const t of bare.matchAll(/[a-zA-Z_:][a-zA-Z0-9_:]*/g)) {
    const after = bare.slice(t.index + t[0].length).trimStart();
    if (after.startsWith('(') || KEYWORDS.has(t[0].toLowerCase())) continue;
    names.push(t[0]);
  }
  return names;
}

/** A sample name's family: itself, or the histogram it is a _bucket/_sum/_count of. */
function familyOf(name: string, fams: Map<string, string>): string | undefined {
  if (fams.has(name)) return name;
  const h = /^(.*)_(?:bucket|sum|count)$/.exec(name);
  return h && fams.get(h[1]!) === 'histogram' ? h[1] : undefined;
}

interface Rule {
  alert?: string;
  expr?: string;
  labels?: Record<string, string>;
  annotations?: Record<string, string>;
}

function ruleExprs(): { name: string; expr: string; rule: Rule }[] {
  const doc = parseYaml(fs.readFileSync(RULES, 'utf8')) as { groups: { name: string; rules: Rule[] }[] };
  return doc.groups.flatMap((g) => g.rules.map((rule) => ({ name: `${g.name}/${rule.alert}`, expr: String(rule.expr), rule })));
}

interface Panel {
  id: number;
  title: string;
  targets?: { expr: string }[];
}

function dashboardExprs(): { name: string; expr: string }[] {
  const d = JSON.parse(fs.readFileSync(DASHBOARD, 'utf8')) as { panels: Panel[]; templating: { list: { name: string; query?: unknown }[] } };
  const exprs = d.panels.flatMap((p) => (p.targets ?? []).map((t, i) => ({ name: `panel ${p.id} "${p.title}" target ${i}`, expr: t.expr })));
  for (const v of d.templating.list) {
    const q = typeof v.query === 'object' && v.query !== null ? (v.query as { query?: string }).query : undefined;
    const lv = q ? /^label_values\(\s*([^,]+),\s*\w+\s*\)$/.exec(q) : null;
    if (lv) exprs.push({ name: `variable ${v.name}`, expr: lv[1]! });
  }
  return exprs;
}

test('ops: metricNames reads the selectors of a PromQL expression, not its functions, labels or numbers', () => {
  assert.deepEqual(metricNames('histogram_quantile(0.95, sum by (verb, le) (rate(brig_slice_seconds_bucket{instance=~"$i",x="a}b"}[$__rate_interval])))'), ['brig_slice_seconds_bucket']);
  assert.deepEqual(metricNames('a / b > 0.25 and sum by (instance) (increase(c[15m])) >= 1e3 or d offset 5m'), ['a', 'b', 'c', 'd']);
});

test('ops: every PromQL expression of the dashboard and the alert rules names only metrics the daemon exports', async () => {
  const fams = families(await daemonRender());
  assert.ok(fams.has('brig_build_info') && fams.has('process_resident_memory_bytes') && fams.has('brig_run_duration_seconds'), 'the render holds the daemon families');
  const exprs = [...ruleExprs(), ...dashboardExprs()];
  assert.ok(exprs.length >= 20, `${exprs.length} expressions`);
  const used = new Set<string>();
  for (const { name, expr } of exprs) {
    const names = metricNames(expr);
    assert.ok(names.length > 0, `${name}: no metric in ${expr}`);
    for (const n of names) {
      const f = familyOf(n, fams);
      assert.ok(f, `${name}: ${n} is not a metric brig serve exports (${expr})`);
      used.add(f);
    }
  }
  // The dashboard's asked-for views each have their family.
  for (const f of ['brig_run_ends_total', 'brig_run_duration_seconds', 'brig_runs', 'brig_slice_seconds', 'brig_api_request_seconds', 'process_resident_memory_bytes', 'nodejs_eventloop_lag_p99_seconds']) assert.ok(used.has(f), f);
});

test('ops: every alert rule has a name, a severity and a summary; dashboard panels have unique ids and a place', () => {
  const names = new Set<string>();
  for (const { name, rule } of ruleExprs()) {
    assert.ok(rule.alert && /^[A-Z][A-Za-z]+$/.test(rule.alert), name);
    assert.ok(!names.has(rule.alert), `${rule.alert} twice`);
    names.add(rule.alert);
    assert.ok(['critical', 'warning', 'info'].includes(rule.labels?.severity ?? ''), `${name}: severity`);
    assert.ok(rule.annotations?.summary, `${name}: summary`);
  }
  const d = JSON.parse(fs.readFileSync(DASHBOARD, 'utf8')) as { uid: string; panels: (Panel & { gridPos?: unknown })[] };
  assert.ok(d.uid);
  assert.equal(new Set(d.panels.map((p) => p.id)).size, d.panels.length);
  for (const p of d.panels) assert.ok(p.gridPos && (p.targets ?? []).length > 0, p.title);
});

function promtool(): string | undefined {
  const given = process.env.PROMTOOL;
  if (given) return fs.existsSync(given) ? given : undefined;
  const r = spawnSync('sh', ['-c', 'command -v promtool'], { encoding: 'utf8' });
  return r.status === 0 ? r.stdout.trim() || undefined : undefined;
}

function run(cmd: string, args: string[], stdin?: string): Promise<{ code: number; out: string }> {
  return new Promise((resolve) => {
    const p = execFile(cmd, args, { timeout: 60_000 }, (e, stdout, stderr) => resolve({ code: e ? (typeof e.code === 'number' ? e.code : 1) : 0, out: `${stdout}${stderr}` }));
    if (stdin !== undefined) p.stdin!.end(stdin);
  });
}

test('ops: promtool check rules on the alert rules, promtool check metrics on the daemon render', async (t) => {
  const bin = promtool();
  if (!bin) {
    const why = 'promtool is not installed (not on PATH, $PROMTOOL unset): the rules were checked by this file only';
    console.log(`skipped: ${why}`);
    t.skip(why);
    return;
  }
  const rules = await run(bin, ['check', 'rules', RULES]);
  assert.equal(rules.code, 0, rules.out);
  const lint = await run(bin, ['check', 'metrics'], await daemonRender());
  assert.equal(lint.code, 0, lint.out);
});

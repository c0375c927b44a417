/**
 * A small metrics registry and the Prometheus text exposition format (version 0.0.4).
 *
 * One registry per composed supervisor (never a global: two supervisors in one process keep
 * their own counts). Counters only go up, gauges are set, histograms count observations into
 * fixed buckets. Label values are brig's own enums and ids-free names (a method, a code, an end
 * reason, a model alias): never run ids, task text or paths (INV-7), so the series stay bounded.
 */

type Labels = Record<string, string>;

interface Family {
  name: string;
  help: string;
  type: 'counter' | 'gauge' | 'histogram';
  buckets?: readonly number[];
  series: Map<string, { labels: Labels; value: number; counts?: number[]; sum?: number }>;
}

const NAME_RE = /^[a-z_][a-z0-9_]*$/;

/** Latency buckets in seconds: 5 ms to 2 min. */
export const SECONDS_BUCKETS = [0.005, 0.01, 0.025, 0.05, 0.1, 0.25, 0.5, 1, 2.5, 5, 10, 30, 60, 120] as const;

function key(labels: Labels): string {
  return Object.keys(labels)
    .sort()
    .map((k) => `${k}=${labels[k]}`)
    .join(',');
}

function escapeLabel(v: string): string {
  return v.replace(/\\/g, '\\\\').replace(/\n/g, '\\n').replace(/"/g, '\\"');
}

function renderLabels(labels: Labels, extra?: [string, string]): string {
  const all = Object.entries(labels).sort(([a], [b]) => a.localeCompare(b));
  if (extra) all.push(extra);
  return all.length === 0 ? '' : `{${all.map(([k, v]) => `${k}="${escapeLabel(v)}"`).join(',')}}`;
}

const num = (v: number) => (Number.isFinite(v) ? String(v) : v > 0 ? '+Inf' : v < 0 ? '-Inf' : 'NaN');

export class Metrics {
  readonly #families = new Map<string, Family>();
  readonly #collectors: (() => void | Promise<void>)[] = [];

  #family(name: string, type: Family['type']): Family {
    const f = this.#families.get(name);
    if (!f) throw new Error(`metric ${name} was never declared`);
    if (f.type !== type && !(f.type === 'counter' && type === 'gauge')) throw new Error(`metric ${name} is a ${f.type}, not a ${type}`);
    return f;
  }

  /** Declares a family with its help text: before its first value, and so it is exposed (with no series) from the start. */
  declare(name: string, help: string, type: Family['type'], buckets: readonly number[] = SECONDS_BUCKETS): void {
    if (!NAME_RE.test(name)) throw new Error(`bad metric name ${name}`);
    if (!this.#families.has(name)) this.#families.set(name, { name, help, type, series: new Map(), ...(type === 'histogram' ? { buckets } : {}) });
  }

  inc(name: string, labels: Labels = {}, by = 1): void {
    if (!(by >= 0)) return; // a counter never goes down, and NaN is no count
    const f = this.#family(name, 'counter');
    const k = key(labels);
    const s = f.series.get(k) ?? { labels, value: 0 };
    s.value += by;
    f.series.set(k, s);
  }

  /** A gauge's value; also a counter's, when its source keeps the count (a helper pool's starts). */
  set(name: string, labels: Labels, value: number): void {
    const f = this.#family(name, 'gauge');
    f.series.set(key(labels), { labels, value });
  }

  /** Drops a gauge family's series (before a collector sets them afresh). */
  reset(name: string): void {
    this.#families.get(name)?.series.clear();
  }

  observe(name: string, labels: Labels, value: number): void {
    if (!Number.isFinite(value)) return;
    const f = this.#family(name, 'histogram');
    const k = key(labels);
    const b = f.buckets!;
    const s = f.series.get(k) ?? { labels, value: 0, counts: b.map(() => 0), sum: 0 };
    s.value++;
    s.sum! += value;
    for (let i = 0; i < b.length; i++) if (value <= b[i]!) s.counts![i]!++;
    f.series.set(k, s);
  }

  /** Runs before each exposition: gauges read from their source at scrape time. */
  collect(fn: () => void | Promise<void>): void {
    this.#collectors.push(fn);
  }

  /** The current value of one series. */
  value(name: string, labels: Labels = {}): number | undefined {
    return this.#families.get(name)?.series.get(key(labels))?.value;
  }

  async expose(): Promise<string> {
    for (const c of this.#collectors) await c();
    const out: string[] = [];
    for (const f of [...this.#families.values()].sort((a, b) => a.name.localeCompare(b.name))) {
      out.push(`# HELP ${f.name} ${f.help.replace(/\\/g, '\\\\').replace(/\n/g, '\\n')}`, `# TYPE ${f.name} ${f.type}`);
      for (const s of [...f.series.values()].sort((a, b) => key(a.labels).localeCompare(key(b.labels)))) {
        if (f.type !== 'histogram') {
          out.push(`${f.name}${renderLabels(s.labels)} ${num(s.value)}`);
          continue;
        }
        f.buckets!.forEach((le, i) => out.push(`${f.name}_bucket${renderLabels(s.labels, ['le', String(le)])} ${s.counts![i]}`));
        out.push(`${f.name}_bucket${renderLabels(s.labels, ['le', '+Inf'])} ${s.value}`);
        out.push(`${f.name}_sum${renderLabels(s.labels)} ${num(s.sum!)}`);
        out.push(`${f.name}_count${renderLabels(s.labels)} ${s.value}`);
      }
    }
    return `${out.join('\n')}\n`;
  }
}

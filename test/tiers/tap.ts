/**
 * What node's TAP (`--test-reporter=tap`) says about a test file: its counts, each skipped
 * test with the reason it gave, the tests that failed. Counted from the result lines, as node
 * counts them (suites are not tests; a skip or a todo is not a pass), so that a file read out
 * of a shared process's stream (test/tiers/worker.ts) is counted the same way as a file that
 * ran alone. Pure: the runner's summary is tested (test/unit/tiers/tap.test.ts).
 */

export interface FileCounts {
  tests: number;
  pass: number;
  fail: number;
  cancelled: number;
  skipped: number;
  todo: number;
}

export interface Skip {
  /** The test's name, its suites and parents first (`outer > inner`). */
  name: string;
  reason: string;
}

export interface TapReport {
  counts: FileCounts;
  skips: Skip[];
  /** The tests that failed or were cancelled, parents first, each with its error line. */
  failed: string[];
}

const RESULT = /^( *)(ok|not ok) \d+ - (.*)$/;
const SUBTEST = /^( *)# Subtest: (.*)$/;
/** A directive: node escapes `#` in names as `\#`, so the first bare ` # ` starts it. */
const DIRECTIVE = /^(.*?)(?<!\\) # (SKIP|TODO)\b ?(.*)$/i;
const YAML_FIELD = /^( *)(type|failureType|error): (.*)$/;

function unescape(s: string): string {
  return s.replace(/\\#/g, '#').replace(/\\\\/g, '\\');
}

function unquote(s: string): string {
  const t = s.trim();
  return /^'.*'$/.test(t) ? t.slice(1, -1).replace(/''/g, "'") : t;
}

interface Result {
  indent: number;
  name: string;
  ok: boolean;
  directive: 'SKIP' | 'TODO' | undefined;
  reason: string;
  suite: boolean;
  failureType: string;
  error: string;
}

export function emptyCounts(): FileCounts {
  return { tests: 0, pass: 0, fail: 0, cancelled: 0, skipped: 0, todo: 0 };
}

export function parseTap(text: string): TapReport {
  const counts = emptyCounts();
  const skips: Skip[] = [];
  const failed: string[] = [];
  // The open subtests by indentation: node announces each with `# Subtest:` before its result.
  const open: { indent: number; name: string }[] = [];
  let last: Result | undefined;
  const settle = () => {
    if (!last) return;
    const failedHere = !last.ok && !last.directive;
    // A suite fails when a test in it did (already listed), or on its own: its file threw at import.
    if (failedHere && last.failureType !== 'subtestsFailed') failed.push(`${last.name}: ${last.error || last.failureType || 'failed'}`);
    if (last.suite) return void (last = undefined);
    counts.tests++;
    if (last.directive === 'TODO') counts.todo++;
    else if (last.directive === 'SKIP') {
      counts.skipped++;
      skips.push({ name: last.name, reason: last.reason || '(no reason given)' });
    } else if (last.ok) counts.pass++;
    else if (last.failureType === 'cancelledByParent') counts.cancelled++;
    else counts.fail++;
    last = undefined;
  };
  let errorBlock = false;
  for (const line of text.split('\n')) {
    if (errorBlock && last) {
      errorBlock = false;
      if (line.startsWith(' '.repeat(last.indent + 4))) {
        last.error = line.trim();
        continue;
      }
    }
    const yaml = YAML_FIELD.exec(line);
    if (last && yaml && yaml[1]!.length === last.indent + 2) {
      if (yaml[2] === 'type') last.suite = unquote(yaml[3]!) === 'suite';
      else if (yaml[2] === 'failureType') last.failureType = unquote(yaml[3]!);
      else if (/^[|>]-?$/.test(yaml[3]!.trim())) errorBlock = true;
      else last.error = unquote(yaml[3]!);
      continue;
    }
    const sub = SUBTEST.exec(line);
    if (sub) {
      settle();
      const indent = sub[1]!.length;
      while (open.length > 0 && open.at(-1)!.indent >= indent) open.pop();
      open.push({ indent, name: unescape(sub[2]!) });
      continue;
    }
    const res = RESULT.exec(line);
    if (res) {
      settle();
      const indent = res[1]!.length;
      while (open.length > 0 && open.at(-1)!.indent > indent) open.pop();
      const d = DIRECTIVE.exec(res[3]!);
      const own = unescape((d ? d[1]! : res[3]!).trim());
      const parents = open.filter((o) => o.indent < indent).map((o) => o.name);
      const name = [...parents, own].join(' > ');
      last = { indent, name, ok: res[2] === 'ok', directive: d ? (d[2]!.toUpperCase() as 'SKIP' | 'TODO') : undefined, reason: d ? unescape(d[3]!.trim()) : '', suite: false, failureType: '', error: '' };
      if (open.length > 0 && open.at(-1)!.indent === indent) open.pop();
      continue;
    }
  }
  settle();
  return { counts, skips, failed };
}

/** node's own closing summary (`# tests N` …), present only when the process ended normally. */
export function tapSummary(text: string): Partial<FileCounts> | undefined {
  const out: Partial<FileCounts> = {};
  for (const m of text.matchAll(/^# (tests|pass|fail|skipped|todo|cancelled) (\d+)$/gm)) out[m[1] as keyof FileCounts] = Number(m[2]);
  return Object.keys(out).length >= 3 ? out : undefined;
}

export interface Section {
  /** The top-level test's name (in a shared process: the file it imported). */
  name: string;
  ok: boolean;
  /** Its lines, the top level's four-space indent removed: read as a file of its own. */
  body: string;
  /** Its own result line and YAML block, for a failure that is the suite's own (an import that threw). */
  tail: string;
}

/** Splits a TAP stream into its top-level tests (a shared process: one suite per file). */
export function topLevelSections(text: string): Section[] {
  const out: Section[] = [];
  let cur: { name: string; body: string[]; tail: string[]; ok?: boolean } | undefined;
  let inTail = false;
  for (const line of text.split('\n')) {
    const sub = /^# Subtest: (.*)$/.exec(line);
    if (sub) {
      if (cur) out.push({ name: cur.name, ok: cur.ok ?? false, body: cur.body.join('\n'), tail: cur.tail.join('\n') });
      cur = { name: unescape(sub[1]!), body: [], tail: [] };
      inTail = false;
      continue;
    }
    if (!cur) continue;
    const res = /^(ok|not ok) \d+ - /.exec(line);
    if (res && !inTail) {
      cur.ok = res[1] === 'ok';
      cur.tail.push(line);
      inTail = true;
      continue;
    }
    if (inTail) {
      if (line.startsWith('  ')) cur.tail.push(line);
      else {
        out.push({ name: cur.name, ok: cur.ok ?? false, body: cur.body.join('\n'), tail: cur.tail.join('\n') });
        cur = undefined;
        inTail = false;
      }
      continue;
    }
    cur.body.push(line.startsWith('    ') ? line.slice(4) : line);
  }
  if (cur) out.push({ name: cur.name, ok: cur.ok ?? false, body: cur.body.join('\n'), tail: cur.tail.join('\n') });
  return out;
}

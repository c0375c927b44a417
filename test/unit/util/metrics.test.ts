import { test } from 'node:test';
import assert from 'node:assert/strict';
import { Metrics } from '../../../src/util/metrics.js';

test('metrics: the text format — HELP/TYPE, sorted labels, escaping, counters never down, cumulative histogram buckets, collectors at scrape', async () => {
  const m = new Metrics();
  m.declare('brig_x_total', 'Things.\nMore', 'counter');
  m.inc('brig_x_total', { b: '2', a: 'q"u\\o' }, 3);
  m.inc('brig_x_total', { a: 'q"u\\o', b: '2' });
  m.inc('brig_x_total', { a: 'q"u\\o', b: '2' }, -5); // ignored
  m.inc('brig_x_total', { a: 'q"u\\o', b: '2' }, Number.NaN); // ignored
  m.declare('brig_h_seconds', 'Latency.', 'histogram');
  for (const v of [0.003, 0.2, 7, Number.NaN]) m.observe('brig_h_seconds', {}, v);
  let scrapes = 0;
  m.declare('brig_g', 'A gauge.', 'gauge');
  m.collect(() => m.set('brig_g', { s: 'ok' }, ++scrapes));
  assert.throws(() => m.inc('brig_never_declared'), /never declared/, 'a family is declared, with its help, before its first value');
  assert.throws(() => m.observe('brig_x_total', {}, 1), /is a counter/);
  const text = await m.expose();
  assert.match(text, /^# HELP brig_g A gauge\.\n# TYPE brig_g gauge\nbrig_g\{s="ok"\} 1\n/m);
  assert.match(text, /# HELP brig_x_total Things\.\\nMore\n# TYPE brig_x_total counter\nbrig_x_total\{a="q\\"u\\\\o",b="2"\} 4\n/);
  assert.match(text, /brig_h_seconds_bucket\{le="0\.005"\} 1\n/);
  assert.match(text, /brig_h_seconds_bucket\{le="0\.25"\} 2\n/);
  assert.match(text, /brig_h_seconds_bucket\{le="10"\} 3\n/);
  assert.match(text, /brig_h_seconds_bucket\{le="\+Inf"\} 3\nbrig_h_seconds_sum 7\.203\nbrig_h_seconds_count 3\n/);
  assert.equal(m.value('brig_x_total', { a: 'q"u\\o', b: '2' }), 4);
  await m.expose();
  assert.equal(m.value('brig_g', { s: 'ok' }), 2, 'collectors run at each scrape');
});

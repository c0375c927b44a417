import { test } from 'node:test';
import assert from 'node:assert/strict';
import { htmlToText } from '../../../src/child/agent/tools/html-text.js';
import { searchHits } from '../../../src/child/agent/tools/web-tools.js';

test('HTML becomes readable text: title, headings, list items, links resolved against the page; scripts, styles and comments dropped', () => {
  const html = `<!doctype html><html><head><title>The &amp; Page</title><style>p{color:red}</style><script>alert("x<p>")</script></head>
<body><!-- hidden <b>note</b> --><h1>Top</h1><p>One&nbsp;para with <a href="/a?b=1&amp;c=2">a link</a> and <a href="javascript:alert(1)">js</a>.</p>
<ul><li>first</li><li>second &#x263A; &#9731;</li></ul><noscript>NOSCRIPT</noscript><table><tr><td>c1</td><td>c2</td></tr></table></body></html>`;
  const t = htmlToText(html, 'https://site.test/dir/page');
  assert.match(t, /^The & Page\n\n# Top\n\nOne para with a link \(https:\/\/site\.test\/a\?b=1&c=2\) and js\./);
  assert.match(t, /- first\n- second ☺ ☃/);
  assert.match(t, /\| c1 \| c2/);
  for (const gone of ['alert', 'color:red', 'hidden', 'NOSCRIPT', '<']) assert.ok(!t.includes(gone), gone);
});

test('hostile HTML stays linear: unclosed tags and comments, a million angle brackets', () => {
  // A quadratic scan would not end within the test's timeout; nothing here times it (bench/ measures speed).
  assert.equal(htmlToText('<'.repeat(1_000_000)), '');
  assert.equal(htmlToText('a<script' + 'x'.repeat(100_000)), 'a');
  assert.equal(htmlToText('b<!--' + '<p>'.repeat(100_000)), 'b');
  assert.equal(htmlToText('<a href=x>y</a>'.repeat(10_000), 'https://s.test/').length, 10_000 * 'y (https://s.test/x) '.length - 1);
});

test('search answers of the common shapes become hits; anything else is not a result list', () => {
  assert.deepEqual(searchHits({ results: [{ title: 'A', url: 'https://a.test/', content: '<b>x</b>' }] }), [{ title: 'A', url: 'https://a.test/', snippet: 'x' }]);
  assert.deepEqual(searchHits({ web: { results: [{ title: 'B', url: 'https://b.test/', description: 'd' }] } })?.[0]?.url, 'https://b.test/');
  assert.deepEqual(searchHits({ items: [{ title: 'C', link: 'https://c.test/', snippet: 's' }, { title: 'no url' }] })?.map((h) => h.title), ['C']);
  assert.equal(searchHits({ answer: 'text' }), null);
});

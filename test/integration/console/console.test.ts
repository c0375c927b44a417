/**
 * The web console in a real browser (Debian's chromium through playwright-core) against a real
 * `brig serve --ui`: no token, no data; with it, a run spawned through the CLI appears live,
 * its detail opens, a grep slice comes back as text, and a kill confirmed in the page ends
 * another run. BRIG_CONSOLE_SHOTS=DIR saves the screenshots docs/console.md shows.
 */
import { test } from 'node:test';
import assert from 'node:assert/strict';
import fs from 'node:fs';
import path from 'node:path';
import { chromium } from 'playwright-core';
import { CHROMIUM, CHROMIUM_ARGS, ensureChromium } from '../../helpers/chromium.js';
import { requireEngine } from '../../helpers/engine.js';
import { daemonHome, warmReady } from '../daemon/serve-proc.js';
import { STALE_TOKEN_PAGE } from '../../../src/console/console.js';
import { until } from '../runs/fixture.js';

test('the console: 401 without the token; with it (gone from the address bar after load), live runs, a run\'s detail, a grep slice, a confirmed kill, and admission paused and resumed from the header', async (t) => {
  if (!(await requireEngine(t))) return;
  if (!ensureChromium(t)) return;
  const h = await daemonHome(t);
  // One warm jail: the first run is served from the pool, and its detail says so.
  const serve = await h.serve(['--ui', '--warm', '1']);
  const url = (JSON.parse(serve.stdout().split('\n')[0]!) as { console?: string }).console!;
  assert.match(url, /^http:\/\/127\.0\.0\.1:\d+\/\?token=[A-Za-z0-9_-]{32}$/);
  const base = url.split('?')[0]!;
  const token = new URL(url).searchParams.get('token')!;

  // No token, no data: the API and the event stream answer 401 with nothing; the page a constant one saying what to do.
  for (const p of ['', `?token=${'x'.repeat(token.length)}`, 'api/v1/runs', 'api/v1/events', `api/v1/runs?token=${'x'.repeat(token.length)}`]) {
    const r = await fetch(base + p);
    assert.equal(r.status, 401, p);
    assert.equal(await r.text(), p.startsWith('api/') ? '' : STALE_TOKEN_PAGE, p);
  }
  assert.equal((await fetch(`${base}api/v1/runs`, { headers: { authorization: `Bearer ${token}` } })).status, 200);

  const browser = await chromium.launch({ executablePath: CHROMIUM, args: CHROMIUM_ARGS });
  t.after(() => browser.close());
  const outsider = await browser.newPage();
  // A stale address: the constant page says what to do, and nothing of brig's runs shows.
  const denied = await outsider.goto(`${base}?token=${'y'.repeat(token.length)}`).then((r) => r?.status(), (e: Error) => e.message);
  assert.equal(denied, 401);
  await outsider.waitForLoadState('load').catch(() => {});
  const shown = await outsider.evaluate<string>('document.documentElement.outerHTML').catch(() => '');
  assert.match(shown, /This address has no valid token/);
  assert.doesNotMatch(shown, /brig console|r-[0-9a-f]{16}/, 'without the token the page shows nothing of brig');
  await outsider.close();

  const page = await browser.newPage({ viewport: { width: 1400, height: 800 } });

  await page.goto(url);
  await page.waitForSelector('#live:text("live")');
  // Once loaded, the token leaves the address bar and the history entry; the page keeps it in memory.
  assert.equal(page.url(), base, 'the address bar holds no token after load');
  assert.equal(await page.evaluate<string>('location.search'), '');
  await until(async () => (await warmReady(serve.socket)) === 1, 'the warm jail ready');
  const spawned = await h.run(['spawn', '--json', '--task', 'numbers', '--', 'sh', '-c', 'seq 1 3000 > out/n.txt']);
  assert.equal(spawned.code, 0, spawned.stderr);
  const runId = (JSON.parse(spawned.stdout) as { runId: string }).runId;
  // It appears live (the page is driven by the event stream, not reloaded).
  const row = page.locator(`tr[data-run="${runId}"][data-status="ended"]`);
  await row.waitFor({ timeout: 15_000 });
  // Its time bar within its tree (a root alone: the whole window), and no tokens (a command).
  assert.match((await row.locator('.tl span.done').getAttribute('style')) ?? '', /^left:0\.0%;width:100\.0%$/);
  await row.click();
  await page.waitForSelector(`#detail h2:text("Run ${runId}")`);
  await page.selectOption('#verb', 'grep');
  await page.fill('#arg', '^299[0-9]$');
  await page.click('#go');
  await page.waitForSelector('#slice pre');
  const text = (await page.textContent('#slice pre')) ?? '';
  assert.match(text, /2990/);
  assert.match(text, /2999/);
  assert.doesNotMatch(text, /^1$/m);
  assert.equal(await page.textContent('#slice p'), '10 matches, all of it');
  // The refs table says what each ref is before it is sliced; a cut slice says where it was cut.
  const refRow = (await page.locator('#refs tr[data-ref]').allTextContents()).find((r) => r.startsWith('out/n.txt'));
  assert.match(refRow ?? '', /^out\/n\.txt(text|log)[\d.]+ \S*B3,000 linesref_[a-z2-7]{26}$/, refRow);
  await page.selectOption('#verb', 'read');
  await page.fill('#arg', '1');
  await page.click('#go');
  await page.waitForSelector('#slice p.cut');
  assert.equal(await page.textContent('#slice p.cut'), 'cut at 20 of 3,000 lines');
  const shots = process.env.BRIG_CONSOLE_SHOTS;
  if (shots) await page.screenshot({ path: path.join(shots, 'console-run.png'), fullPage: true });

  // Kill another run from the page, confirming the dialog.
  const longOut = await h.run(['spawn', '--async', '--json', '--task', 'sleeper', '--', 'sleep', '120']);
  assert.equal(longOut.code, 0, `${longOut.stdout}\n${longOut.stderr}`);
  const long = JSON.parse(longOut.stdout) as { runId: string };
  assert.match(long.runId ?? '', /^r-/, longOut.stdout);
  const live = page.locator(`tr[data-run="${long.runId}"][data-status="running"]`);
  await live.waitFor({ timeout: 20_000 });
  if (shots) {
    await page.evaluate('window.scrollTo(0, 0)');
    await page.screenshot({ path: path.join(shots, 'console-runs.png') });
  }
  // Search within the page: one run by a piece of its id; the pager says this is the newest page, nothing older.
  await page.fill('#f-search', long.runId.slice(2, 10));
  await until(async () => (await page.locator('#runs tbody tr').count()) === 1, 'the search leaves one row');
  assert.equal(await page.locator(`tr[data-run="${long.runId}"]`).count(), 1);
  await page.fill('#f-search', '');
  await until(async () => (await page.locator('#runs tbody tr').count()) === 2, 'both rows back');
  assert.equal(await page.textContent('#page-note'), 'the newest 2 run(s)');
  assert.ok((await page.isDisabled('#older')) && (await page.isDisabled('#newest')));
  // Paging back through the API the page uses: the run before the sleeper is the first one.
  const older = (await (await fetch(`${base}api/v1/runs?limit=1&before=${long.runId}`, { headers: { authorization: `Bearer ${token}` } })).json()) as { runs: { id: string }[] };
  assert.deepEqual(older.runs.map((r) => r.id), [runId]);
  await live.click();
  await page.waitForSelector(`#detail h2:text("Run ${long.runId}")`);
  page.once('dialog', (d) => void d.accept());
  await page.click('#kill');
  await page.locator(`tr[data-run="${long.runId}"][data-status="ended"]`).waitFor({ timeout: 30_000 });
  const cells = await page.locator(`tr[data-run="${long.runId}"] td`).allTextContents();
  assert.deepEqual([cells[4], cells[5]], ['killed', 'operator']);
  // A killed run is red, and its kill and steer buttons are off (its detail is still open).
  assert.match((await page.locator(`tr[data-run="${long.runId}"]`).getAttribute('class')) ?? '', /\bbad\b/);
  await page.waitForSelector('#kill:disabled');
  assert.equal(await page.isDisabled('#steer'), true);
  // A URL per run: the detail's address opens the same run in a fresh page.
  assert.match(page.url(), new RegExp(`#run=${long.runId}$`));
  // The run's lease beside what it asked for (here: the root profile's grant, nothing asked).
  await page.locator(`tr[data-run="${runId}"]`).click();
  // This run's detail, not the killed one's still on screen.
  await page.waitForSelector(`#detail h2:text("Run ${runId}")`);
  await page.waitForSelector('#lease table');
  assert.match((await page.textContent('#lease')) ?? '', /profile root/);
  assert.match((await page.textContent('#lease')) ?? '', /diskMb/);
  // Its egress: the lease names no rule, so the page says the jail has no network.
  await page.waitForSelector('#egress p');
  assert.match((await page.textContent('#egress')) ?? '', /none: the lease names no egress rule \(the jail has no network\)/);
  const jail = (await page.textContent('#jail')) ?? '';
  for (const want of [/user65534:65534/, /networknone/, /root filesystemread-only/, /capabilities droppedALL/, /no-new-privilegesyes/, /seccompbrig's profile [0-9a-f]{12}/, /\/workspace\d+ MiB ext4 nosuid,nodev/, /\/run\/brig \(ro\)/]) {
    assert.match(jail, want, `the jail as verified: ${jail}`);
  }
  assert.match(jail, /warm poolpool-[0-9a-f]{12} · ready \S+ · verified again and assigned \S+/, `the pooled jail says so: ${jail}`);

  // Leases: revoke a third run's lease from the page; the run ends killed by the operator.
  const thirdOut = await h.run(['spawn', '--async', '--json', '--task', 'revoked', '--', 'sleep', '120']);
  assert.equal(thirdOut.code, 0, `${thirdOut.stdout}\n${thirdOut.stderr}`);
  const third = JSON.parse(thirdOut.stdout) as { runId: string };
  await page.locator(`tr[data-run="${third.runId}"][data-status="running"]`).waitFor({ timeout: 20_000 });
  await page.click('nav button[data-tab="leases"]');
  const leaseRow = page.locator(`#leases tr[data-run="${third.runId}"][data-state="live"]`);
  await leaseRow.waitFor();
  if (shots) await page.screenshot({ path: path.join(shots, 'console-leases.png') });
  page.once('dialog', (d) => void d.accept());
  await leaseRow.locator('button.revoke').click();
  await page.locator(`#leases tr[data-run="${third.runId}"][data-state="revoked"]`).waitFor({ timeout: 15_000 });
  await page.click('nav button[data-tab="runs"]');
  await page.locator(`tr[data-run="${third.runId}"][data-status="ended"]`).waitFor({ timeout: 30_000 });
  const ended = await page.locator(`tr[data-run="${third.runId}"] td`).allTextContents();
  assert.deepEqual([ended[4], ended[5]], ['killed', 'operator']);

  // Audit: the chain verified, and a query as a table.
  await page.click('nav button[data-tab="audit"]');
  await page.waitForSelector('#verify.ok');
  assert.match((await page.textContent('#verify')) ?? '', /^ledger ok: \d+ line/);
  await page.click('#query');
  await page.waitForSelector('#audit-result table');
  assert.match((await page.textContent('#audit-result')) ?? '', /run\.spawned/);
  if (shots) await page.screenshot({ path: path.join(shots, 'console-audit.png') });

  // Doctor: a real probe jail, judged.
  await page.click('nav button[data-tab="doctor"]');
  await page.click('#doctor-run');
  await page.waitForSelector('#doctor li.ok:has-text("jail: non-root user")', { timeout: 60_000 });
  assert.equal(await page.locator('#doctor li.fail').count(), 0);
  if (shots) await page.screenshot({ path: path.join(shots, 'console-doctor.png') });

  // Fleet: the roll-up over the window.
  await page.click('nav button[data-tab="fleet"]');
  await page.waitForSelector('#fleet dd');
  assert.match((await page.textContent('#fleet')) ?? '', /runs3 \(0 live\)/);
  assert.match((await page.textContent('#fleet')) ?? '', /egress0 connection\(s\), 0 B up, 0 B down \{\}; 0 refused \{\}/);
  // The fleet as pictures: runs per hour stacked by end reason (the three runs, none live), the trees by tokens, the spawn latency.
  const bars = await page.locator('#fleet-hourly rect[data-reason]').evaluateAll((rs) => rs.map((r) => [r.getAttribute('data-reason'), Number(r.getAttribute('data-count'))] as [string, number]));
  const byReason: Record<string, number> = {};
  for (const [r, n] of bars) byReason[r] = (byReason[r] ?? 0) + n;
  assert.deepEqual(byReason, { completed: 1, killed: 2 }, JSON.stringify(bars));
  assert.equal(await page.locator('#fleet-trees g[data-root]').count(), 3);
  assert.match((await page.textContent('#fleet-latency')) ?? '', /^p50 \d+(ms|\.\ds) · p95 \d+(ms|\.\ds) over 3 run\(s\)$/);
  if (shots) await page.screenshot({ path: path.join(shots, 'console-fleet.png'), fullPage: true });
  // Admission from the header: paused (confirmed), as the CLI sees it, then resumed.
  await page.waitForSelector('#admission:text("admission open")');
  page.once('dialog', (d) => void d.accept());
  await page.click('#admission-toggle');
  await page.waitForSelector('#admission:text("admission PAUSED since")');
  assert.match((await page.textContent('#admission')) ?? '', / by console · 0 queued$/);
  const st = await h.run(['admission', 'status', '--json']);
  assert.deepEqual((JSON.parse(st.stdout) as { admission: { paused: boolean; by: string } }).admission.by, 'console');
  page.once('dialog', (d) => void d.accept());
  await page.click('#admission-toggle');
  await page.waitForSelector('#admission:text("admission open")');
  // The daemon restarted under an open page (its token changed): the page says so once, instead of a stream of errors.
  assert.equal(await page.locator('#stale').count(), 0);
  await page.route('**/api/v1/**', (r) => void r.fulfill({ status: 401, body: '' }));
  await page.click('nav button[data-tab="leases"]');
  await page.waitForSelector('#stale[role="alert"]:has-text("no longer valid")');
  await page.unroute('**/api/v1/**');
  await serve.signal('SIGTERM');
  assert.doesNotMatch(serve.stderr(), new RegExp(token), 'the token is never logged');
  const ledger = fs.readdirSync(path.join(h.home, 'ledger')).map((f) => fs.readFileSync(path.join(h.home, 'ledger', f), 'utf8')).join('');
  assert.ok(ledger.includes('run.spawned'), 'the ledger was read');
  assert.ok(!ledger.includes(token), 'the token never lands in the ledger');
});

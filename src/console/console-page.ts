/**
 * The console's one page: plain HTML, CSS and JavaScript in one string, served by console.ts.
 * No framework and nothing fetched from anywhere but the console's own /api (its CSP says
 * so). Text from the daemon is inserted as text, never as HTML.
 */
export const CONSOLE_PAGE = String.raw`<!doctype html>
<html lang="en">
<head>
<meta charset="utf-8">
<title>brig console</title>
<style>
  body { font: 13px/1.4 ui-monospace, SFMono-Regular, Menlo, monospace; margin: 0; color: #1b1f24; background: #f6f8fa; }
  header { background: #24292f; color: #fff; padding: 8px 16px; display: flex; gap: 16px; align-items: baseline; }
  header h1 { font-size: 15px; margin: 0; }
  #live { color: #8fd18f; }
  main { display: grid; grid-template-columns: minmax(520px, 1fr) minmax(420px, 1fr); gap: 12px; padding: 12px; }
  section { background: #fff; border: 1px solid #d0d7de; border-radius: 6px; padding: 8px 12px; overflow: auto; }
  h2 { font-size: 13px; margin: 4px 0 8px; }
  table { border-collapse: collapse; width: 100%; }
  th, td { text-align: left; padding: 3px 6px; border-bottom: 1px solid #eaeef2; white-space: nowrap; }
  tr.run { cursor: pointer; } tr.run:hover { background: #f0f6ff; } tr.sel { background: #dbeafe; }
  .ended { color: #57606a; } .running { color: #1a7f37; } .queued, .starting, .materializing { color: #9a6700; }
  dl { display: grid; grid-template-columns: max-content 1fr; gap: 2px 12px; margin: 0 0 8px; } dt { color: #57606a; }
  pre { background: #f6f8fa; padding: 6px; max-height: 320px; overflow: auto; white-space: pre-wrap; }
  button { font: inherit; } .danger { color: #cf222e; } .cut { color: #9a6700; font-weight: 600; }
  input, select, textarea { font: inherit; }
  nav button { background: none; border: 0; color: #c9d1d9; cursor: pointer; padding: 2px 6px; } nav button.on { color: #fff; border-bottom: 2px solid #fff; }
  .page { padding: 12px; } .page section { max-width: 1200px; }
  .ok { color: #1a7f37; } .fail { color: #cf222e; }
  textarea { width: 100%; }
  [hidden] { display: none !important; }
  .tl { position: relative; width: 120px; height: 10px; background: #eaeef2; border-radius: 2px; } .tl span { position: absolute; top: 0; height: 10px; border-radius: 2px; background: #1a7f37; min-width: 2px; }
  .tl span.running { background: #0969da; } .tl span.bad { background: #cf222e; } .tl span.waiting { background: #9a6700; }
  tr.bad td { color: #cf222e; } a.id { color: #0969da; cursor: pointer; text-decoration: underline; }
  #filters { display: flex; flex-wrap: wrap; gap: 6px; margin-bottom: 6px; }
  @media (max-width: 1000px) { main { grid-template-columns: 1fr; } }
  svg.graph { display: block; margin: 8px 0; } svg.graph g.node { cursor: pointer; } svg.graph text { font: 11px ui-monospace, monospace; }
  svg.graph rect { stroke: #57606a; rx: 4; } svg.graph line { stroke: #8c959f; }
  .n-pending rect { fill: #fff; } .n-running rect { fill: #ddf4ff; stroke: #0969da; } .n-succeeded rect { fill: #dafbe1; stroke: #1a7f37; }
  .n-failed rect { fill: #ffebe9; stroke: #cf222e; } .n-skipped rect { fill: #eaeef2; } .n-waiting rect { fill: #fff8c5; stroke: #9a6700; }
  tr.graph { cursor: pointer; } tr.graph:hover { background: #f0f6ff; }
</style>
</head>
<body>
<header><h1>brig console</h1><nav><button data-tab="runs" class="on">runs</button><button data-tab="leases">leases</button><button data-tab="audit">audit</button><button data-tab="doctor">doctor</button><button data-tab="fleet">fleet</button><button data-tab="graphs">graphs</button></nav><span id="live">connecting…</span><span id="count"></span><span id="admission"></span><button id="admission-toggle" hidden></button></header>
<main id="tab-runs">
  <section><h2>Runs</h2>
    <div id="filters"><select id="f-status"><option value="">any status</option><option>queued</option><option>starting</option><option>running</option><option>materializing</option><option>ended</option></select><select id="f-kind"><option value="">any kind</option><option>agent</option><option>script</option><option>command</option></select><input id="f-label" size="12" placeholder="label"><input id="f-root" size="22" placeholder="root run id"><select id="f-since"><option value="">any time</option><option value="60">1h</option><option value="1440">24h</option><option value="10080">7d</option></select><input id="f-search" size="16" placeholder="search id, label, agent"></div>
    <table id="runs"><thead><tr><th>run</th><th>label</th><th>kind</th><th>status</th><th>end</th><th>killed by</th><th>depth</th><th>steps</th><th>age</th><th>elapsed</th><th>tokens</th><th title="each run's time within its tree's, from the root's start to the last end (or now)">timeline</th><th>progress</th></tr></thead><tbody></tbody></table>
    <p id="pager"><button id="newest" disabled>newest</button> <button id="older" disabled>older ›</button> <span id="page-note"></span></p>
  </section>
  <section id="detail"><h2>Run</h2><p id="hint">Select a run.</p></section>
</main>
<div class="page" id="tab-leases" hidden><section><h2>Leases</h2><table id="leases"><thead><tr><th>lease</th><th>run</th><th>profile</th><th>state</th><th>caps</th><th>expires</th><th></th></tr></thead><tbody></tbody></table></section></div>
<div class="page" id="tab-audit" hidden><section><h2>Audit ledger</h2><p id="verify">…</p>
  <textarea id="sql" rows="3">SELECT type, count(*) AS n FROM ledger GROUP BY type ORDER BY n DESC</textarea><p><button id="query">query</button></p><div id="audit-result"></div></section></div>
<div class="page" id="tab-doctor" hidden><section><h2>Doctor</h2><p><button id="doctor-run">run doctor</button> (starts a probe jail)</p><ul id="doctor"></ul></section></div>
<div class="page" id="tab-graphs" hidden><section><h2>Graphs</h2><div id="graphs"></div><div id="graph"></div></section></div>
<div class="page" id="tab-fleet" hidden><section><h2>Fleet</h2><p><select id="fleet-since"><option>1h</option><option selected>24h</option><option>7d</option></select></p><dl id="fleet"></dl><div id="fleet-charts"></div></section></div>
<script>
"use strict";
const token = new URLSearchParams(location.search).get('token') || '';
// Out of the address bar and this history entry (screens, shared screenshots, synced history);
// the page keeps it in memory for its own calls. A reload needs the printed address again.
if (location.search) history.replaceState(null, '', location.pathname + location.hash);
const staleToken = () => {
  if (document.getElementById('stale')) return;
  const b = document.createElement('div');
  b.id = 'stale';
  b.setAttribute('role', 'alert');
  b.style.cssText = 'background:#b00020;color:#fff;padding:.6em 1em;font-weight:600';
  b.textContent = "This page's token is no longer valid (the daemon was restarted, or its console): open the address brig serve --ui printed last.";
  document.body.prepend(b);
};
const api = async (path, body) => {
  const r = await fetch('/api/v1' + path, body === undefined ? { headers: { authorization: 'Bearer ' + token } } : { method: 'POST', headers: { authorization: 'Bearer ' + token, 'content-type': 'application/json' }, body: JSON.stringify(body) });
  // The daemon restarted since this page loaded (a new token): say so once, in place of a stream of errors.
  if (r.status === 401) staleToken();
  const j = await r.json().catch(() => ({}));
  if (!r.ok) throw new Error((j.error && (j.error.code + ': ' + j.error.message)) || ('HTTP ' + r.status));
  return j;
};
const el = (tag, attrs, ...kids) => {
  const e = document.createElement(tag);
  for (const [k, v] of Object.entries(attrs || {})) if (v !== undefined && v !== null) e.setAttribute(k, String(v));
  for (const k of kids) e.append(k instanceof Node ? k : document.createTextNode(k === null || k === undefined ? '' : String(k)));
  return e;
};
const elapsed = (r) => {
  const a = Date.parse(r.startedAt || r.createdAt), b = r.endedAt ? Date.parse(r.endedAt) : Date.now();
  const ms = Math.max(0, b - a);
  return ms < 1000 ? ms + 'ms' : ms < 60000 ? (ms / 1000).toFixed(1) + 's' : Math.round(ms / 60000) + 'm';
};
/** 1536 → "1.5 KiB"; a duration in ms → "1.2s", "3m", "2h"; an ISO time → the browser's local time. */
const bytes = (n) => { n = Number(n) || 0; const u = ['B', 'KiB', 'MiB', 'GiB', 'TiB']; let i = 0; while (n >= 1024 && i < u.length - 1) { n /= 1024; i++; } return (i ? n.toFixed(1) : n) + ' ' + u[i]; };
const dur = (ms) => ms < 1000 ? ms + 'ms' : ms < 60000 ? (ms / 1000).toFixed(1) + 's' : ms < 3600000 ? Math.round(ms / 60000) + 'm' : (ms / 3600000).toFixed(1) + 'h';
const local = (iso) => iso ? new Date(iso).toLocaleString() : '—';
const age = (r) => dur(Math.max(0, Date.now() - Date.parse(r.createdAt)));
const bad = (r) => r.endReason && r.endReason !== 'completed';
/** A run id that opens that run (and gives it its own URL, #run=ID). */
const runLink = (id) => { if (!id) return '—'; const a = el('a', { class: 'id', 'data-open': id }, id); a.addEventListener('click', () => open_(id)); return a; };
const open_ = (id) => { location.hash = 'run=' + encodeURIComponent(id); };
window.addEventListener('hashchange', () => { const m = /^#run=(.+)$/.exec(location.hash); if (m) show(decodeURIComponent(m[1])).catch((e) => alert(String(e.message))); });
let selected = null;
let runs = [];

/** Parents before children, each child under its parent. */
function tree(list) {
  const kids = new Map();
  for (const r of list) { const p = r.parentRunId || ''; if (!kids.has(p)) kids.set(p, []); kids.get(p).push(r); }
  const ids = new Set(list.map((r) => r.id));
  const out = [];
  const walk = (p) => { for (const r of kids.get(p) || []) { out.push(r); walk(r.id); } };
  // Newest trees first; a tree's children in the order they were spawned.
  if (kids.has('')) kids.get('').sort((a, b) => String(b.createdAt).localeCompare(String(a.createdAt)));
  walk('');
  for (const r of list) if (r.parentRunId && !ids.has(r.parentRunId) && !out.includes(r)) { out.push(r); walk(r.id); }
  return out;
}

/** Paging back: null is the newest page; else the run whose older runs the page shows (the API's before). */
let before = null;
const PAGE = 200;
async function refresh() {
  const q = new URLSearchParams({ limit: String(PAGE) });
  if (before) q.set('before', before);
  for (const [k, id] of [['status', 'f-status'], ['kind', 'f-kind'], ['label', 'f-label'], ['rootRunId', 'f-root'], ['since', 'f-since']]) { const v = document.getElementById(id).value.trim(); if (v) q.set(k, v); }
  runs = (await api('/runs?' + q)).runs;
  document.getElementById('newest').disabled = !before;
  // A full page may have older runs behind it.
  document.getElementById('older').disabled = runs.length < PAGE;
  document.getElementById('page-note').textContent = (before ? runs.length + ' run(s) created before ' + before : 'the newest ' + runs.length + ' run(s)') + (runs.length < PAGE ? '' : ' — older ones on the next page');
  // Search: within the page, by id, label or agent (case-insensitive).
  const needle = document.getElementById('f-search').value.trim().toLowerCase();
  const shown = needle ? runs.filter((r) => [r.id, r.label, r.agent].some((v) => v && String(v).toLowerCase().includes(needle))) : runs;
  const body = document.querySelector('#runs tbody');
  // A Gantt bar per run: its start and end within its tree's window (the root's start to the tree's last end, or now).
  const now = Date.now();
  const t0 = (r) => Date.parse(r.startedAt || r.createdAt);
  const t1 = (r) => (r.endedAt ? Date.parse(r.endedAt) : now);
  const windows = new Map();
  for (const r of runs) { const w = windows.get(r.rootRunId) || [Infinity, -Infinity]; windows.set(r.rootRunId, [Math.min(w[0], t0(r)), Math.max(w[1], t1(r))]); }
  const bar = (r) => {
    const [a, b] = windows.get(r.rootRunId); const span = Math.max(1, b - a);
    const left = ((t0(r) - a) / span) * 100, width = Math.max(1, ((t1(r) - t0(r)) / span) * 100);
    return el('div', { class: 'tl', title: dur(t1(r) - t0(r)) + ' of the tree\'s ' + dur(b - a) }, el('span', { class: bad(r) ? 'bad' : r.status === 'ended' ? 'done' : r.status === 'running' ? 'running' : 'waiting', style: 'left:' + left.toFixed(1) + '%;width:' + Math.min(width, 100 - left).toFixed(1) + '%' }));
  };
  body.replaceChildren(...tree(shown).map((r) => {
    const tr = el('tr', { class: 'run' + (r.id === selected ? ' sel' : '') + (bad(r) ? ' bad' : ''), 'data-run': r.id, 'data-status': r.status },
      el('td', { style: 'padding-left:' + (6 + 14 * (r.depth - 1)) + 'px' }, r.id), el('td', {}, r.label || ''), el('td', {}, r.kind), el('td', { class: r.status }, r.status), el('td', {}, r.endReason || ''),
      el('td', {}, r.killedBy || ''), el('td', {}, r.depth), el('td', {}, r.stepsExecuted), el('td', { title: local(r.createdAt) }, age(r)), el('td', {}, elapsed(r)), el('td', {}, r.tokens ? r.tokens.toLocaleString() : ''), el('td', {}, bar(r)), el('td', {}, r.progressLine || ''));
    tr.addEventListener('click', () => open_(r.id));
    return tr;
  }));
  document.getElementById('count').textContent = runs.length + ' run(s)';
  admission().catch(() => {});
  if (selected) { const r = runs.find((x) => x.id === selected); if (r) { document.getElementById('status').textContent = r.status + (r.endReason ? ' / ' + r.endReason : '') + (r.killedBy ? ' by ' + r.killedBy : ''); for (const b of ['kill', 'steer']) { const x = document.getElementById(b); if (x) x.disabled = r.status === 'ended'; } } }
}

/** Admission: open or paused (since, by, queued), and the one button that flips it (an operator action, confirmed). */
async function admission() {
  const { admission: a } = await api('/admission');
  const span = document.getElementById('admission');
  span.className = a.paused ? 'fail' : '';
  span.textContent = 'admission ' + (a.paused ? 'PAUSED since ' + a.since + (a.by ? ' by ' + a.by : '') : 'open') + ' · ' + a.queued + ' queued';
  const b = document.getElementById('admission-toggle');
  b.textContent = a.paused ? 'resume admission' : 'pause admission';
  b.className = a.paused ? '' : 'danger';
  b.dataset.paused = String(a.paused);
  b.hidden = false;
}
document.getElementById('admission-toggle').addEventListener('click', async (ev) => {
  const paused = ev.currentTarget.dataset.paused === 'true';
  if (!confirm(paused ? 'Resume admission? The queued runs start in order.' : 'Pause admission? Running children go on; new spawns wait in the queue.')) return;
  try { await api('/admission/' + (paused ? 'resume' : 'pause'), { by: 'console' }); } catch (e) { alert(String(e.message)); }
  admission().catch(() => {});
});

async function show(id) {
  selected = id;
  const d = document.getElementById('detail');
  const { run } = await api('/runs/' + encodeURIComponent(id));
  const env = await api('/runs/' + encodeURIComponent(id) + '/envelope').catch(() => null);
  const refs = (await api('/runs/' + encodeURIComponent(id) + '/refs').catch(() => ({ refs: [] }))).refs;
  if (selected !== id) return; // another run was opened while this one loaded: it shows that one
  const facts = [['run', run.id], ['status', ''], ['kind', run.kind], ['label', run.label || '—'], ['parent', runLink(run.parentRunId)], ['root', runLink(run.rootRunId)], ['depth', run.depth],
    ['lease', run.leaseId || '—'], ['created', local(run.createdAt)], ['started', local(run.startedAt)], ['ended', local(run.endedAt)], ['error', run.error ? run.error.code + ': ' + run.error.message : '—'],
    ['outputs', (run.outputFiles || 0) + ' file(s), ' + bytes(run.outputBytes)], ['skipped', (run.skipped || []).length]];
  const dl = el('dl', {});
  for (const [k, v] of facts) dl.append(el('dt', {}, k), el('dd', k === 'status' ? { id: 'status' } : {}, v));
  const kill = el('button', { id: 'kill', class: 'danger' }, 'kill');
  kill.addEventListener('click', async () => {
    if (!confirm('Kill ' + run.id + '? Its in-flight work is discarded.')) return;
    try { await api('/runs/' + encodeURIComponent(run.id) + '/kill', { confirm: true }); } catch (e) { alert(String(e.message)); }
    refresh();
  });
  const steer = el('button', { id: 'steer' }, 'steer');
  // An ended run has nothing left to kill or steer.
  kill.disabled = steer.disabled = run.status === 'ended';
  steer.addEventListener('click', async () => {
    const message = prompt('Steering message for ' + run.id);
    if (!message) return;
    try { await api('/runs/' + encodeURIComponent(run.id) + '/steer', { message }); } catch (e) { alert(String(e.message)); }
  });
  const pick = el('select', { id: 'ref' }, ...refs.map((r) => el('option', { value: r.ref }, (r.path || r.ref) + ' (' + r.kind + ', ' + bytes(r.bytes) + ')')));
  const verb = el('select', { id: 'verb' }, ...['grep', 'read', 'jq', 'sql', 'jsonpath'].map((v) => el('option', { value: v }, v)));
  const arg = el('input', { id: 'arg', size: 40, placeholder: 'pattern / line / expression / SELECT … FROM ref' });
  const go = el('button', { id: 'go' }, 'slice');
  const out = el('div', { id: 'slice' });
  // What each ref is, before slicing it: a row picks it.
  const refTable = el('table', { id: 'refs' }, el('tr', {}, ...['path', 'kind', 'size', 'rows', 'columns', 'ref'].map((h) => el('th', {}, h))));
  for (const r of refs) {
    const cols = r.columns ? r.columns.slice(0, 8).join(', ') + ((r.columnCount || r.columns.length) > 8 ? ' +' + ((r.columnCount || r.columns.length) - 8) + ' more' : '') : '';
    const tr = el('tr', { 'data-ref': r.ref, style: 'cursor:pointer' }, el('td', {}, r.path || '—'), el('td', {}, r.kind), el('td', {}, bytes(r.bytes)), el('td', {}, r.rows === undefined || r.rows === null ? (r.lines ? r.lines.toLocaleString() + ' lines' : '') : r.rows.toLocaleString()), el('td', {}, cols), el('td', {}, r.ref));
    tr.addEventListener('click', () => { pick.value = r.ref; });
    refTable.append(tr);
  }
  // A slice says when it is cut, and where: "cut at N of M rows".
  const cut = (s) => s.more > 0 ? 'cut at ' + s.returned.toLocaleString() + ' of ' + (s.returned + s.more).toLocaleString() + (s.moreExact ? '' : '+') + ' ' + s.unit : s.returned.toLocaleString() + ' ' + s.unit + ', all of it';
  go.addEventListener('click', async () => {
    const v = verb.value, a = arg.value, ref = pick.value;
    const body = v === 'grep' ? { pattern: a } : v === 'read' ? { line: Number(a) || 1, lines: 20 } : v === 'jq' ? { expr: a } : v === 'sql' ? { query: a } : { expr: a };
    try {
      const s = await api('/refs/' + encodeURIComponent(ref) + '/' + v, body);
      if (s.columns) {
        const t = el('table', {}, el('tr', {}, ...s.columns.map((c) => el('th', {}, c))));
        for (const row of s.rows) t.append(el('tr', {}, ...row.map((c) => el('td', {}, typeof c === 'object' ? JSON.stringify(c) : c))));
        out.replaceChildren(el('p', { class: s.more > 0 ? 'cut' : 'whole' }, cut(s)), t);
      } else out.replaceChildren(el('p', { class: s.more > 0 ? 'cut' : 'whole' }, cut(s)), el('pre', {}, s.text));
    } catch (e) { out.replaceChildren(el('p', { class: 'danger' }, String(e.message))); }
  });
  const leaseBox = el('div', { id: 'lease' }, run.leaseId ? 'loading…' : 'no lease (not started)');
  const egressBox = el('div', { id: 'egress' }, run.leaseId ? 'loading…' : '—');
  if (run.leaseId) api('/leases/' + encodeURIComponent(run.leaseId)).then(({ lease, lineage }) => {
    leaseBox.replaceChildren(leaseTable(lease, lineage));
    egressOf(run.id, lease.egress).then((n) => egressBox.replaceChildren(n)).catch((e) => egressBox.replaceChildren(String(e.message)));
  }).catch((e) => leaseBox.replaceChildren(String(e.message)));
  const j = run.jail;
  const jailBox = el('div', { id: 'jail' }, j ? jailTable(j) : 'not verified yet (the jail is made when the run starts)');
  d.replaceChildren(el('h2', {}, 'Run ' + run.id), dl, el('p', {}, kill, ' ', steer), el('h2', {}, 'Lease'), leaseBox, el('h2', {}, 'Jail (as the engine reported it, verified)'), jailBox,
    el('h2', {}, 'Egress'), egressBox,
    el('h2', {}, 'Envelope'), el('pre', { id: 'envelope' }, env ? env.envelope : '—'),
    el('h2', {}, 'ResultRefs'), ...(refs.length ? [refTable, el('p', {}, pick, ' ', verb, ' ', arg, ' ', go)] : [el('p', {}, 'none yet')]), out);
  refresh();
}

/** A run's egress: its lease's rules, and from the ledger (content-free) its connections and bytes by rule, its refusals by reason. */
async function egressOf(runId, grant) {
  if (!grant || !grant.rules || grant.rules.length === 0) return el('p', {}, 'none: the lease names no egress rule (the jail has no network)');
  const rules = el('ul', {}, ...grant.rules.map((r) => el('li', {}, r.id + ': ' + r.hosts.join(', ') + ' port ' + r.ports.join(', ') + ' ' + r.scheme + (r.scheme === 'https' ? ' ' + r.tls : '') + (r.methods ? ' ' + r.methods.join('|') : '') + (r.paths ? ' ' + r.paths.join(' ') : '') + (r.credential ? ' credential ' + r.credential : ''))));
  if (!/^r-[0-9a-f]+$/.test(runId)) return rules;
  const sql = 'SELECT type, CAST("ruleId" AS VARCHAR) AS rule, CAST(reason AS VARCHAR) AS reason, count(*) AS n, sum(CAST("bytesUp" AS BIGINT)) AS bytes_up, sum(CAST("bytesDown" AS BIGINT)) AS bytes_down FROM ledger WHERE "runId" = \'' + runId + '\' AND type IN (\'egress.conn\', \'egress.deny\') GROUP BY ALL ORDER BY type, n DESC';
  const got = await api('/audit/query', { sql }).catch(() => null);
  return el('div', {}, rules, got && got.rows.length ? rowsTable(got) : el('p', {}, 'no connection or refusal recorded yet'));
}

/** Granted beside requested, the refusals with their reasons, and the lineage up to the root. */
function leaseTable(lease, lineage) {
  const req = lease.requested || {};
  const t = el('table', {}, el('tr', {}, el('th', {}, ''), el('th', {}, 'granted'), el('th', {}, 'requested')));
  t.append(el('tr', {}, el('td', {}, 'caps'), el('td', {}, (lease.caps || []).join(' ')), el('td', {}, req.caps ? req.caps.join(' ') : '(the profile)')));
  for (const [k, v] of Object.entries(lease.limits || {})) t.append(el('tr', {}, el('td', {}, k), el('td', {}, v), el('td', {}, req.limits && req.limits[k] !== undefined ? req.limits[k] : '')));
  const refused = el('ul', { id: 'refusals' }, ...(lease.refused || []).map((r) => el('li', {}, r.what + ': ' + r.code + ' — ' + r.reason)));
  return el('div', {}, el('p', {}, lease.id + ' · profile ' + lease.profile + ' · ' + lease.state + ' · expires ' + lease.expiresAt), t,
    el('p', {}, 'refusals: ' + ((lease.refused || []).length || 'none')), refused,
    el('p', {}, 'lineage: ' + ([lease.id].concat(lineage.map((l) => l.id)).join(' ← ') )));
}

function jailTable(j) {
  const rows = [['container', j.containerId + ' · ' + j.image], ['user', j.user], ['network', j.network], ['root filesystem', j.readOnlyRoot ? 'read-only' : 'WRITABLE'],
    ['capabilities dropped', j.capDrop.join(' ')], ['no-new-privileges', j.noNewPrivileges ? 'yes' : 'NO'], ['seccomp', j.seccompSha ? "brig's profile " + j.seccompSha : 'NONE'], ['ipc', j.ipc],
    ['cpu', j.limits.cpu], ['memory (= swap)', j.limits.memoryMb + ' MiB (' + j.limits.memorySwapMb + ' MiB)'], ['pids', j.limits.pids], ['/tmp', j.limits.tmpfsMb + ' MiB'],
    ['/workspace', j.limits.diskMb !== null ? j.limits.diskMb + ' MiB ' + j.workspace.type + ' ' + j.workspace.options : 'no disk quota'],
    ['binds', j.binds.map((b) => b.target + (b.readOnly ? ' (ro)' : ' (RW)')).join(', ') || '—'], ['verified', j.verifiedAt]];
  if (j.pooled) rows.push(['warm pool', j.pooled.slot + ' · ready ' + j.pooled.readyAt + ' · verified again and assigned ' + j.pooled.assignedAt]);
  const t = el('dl', {});
  for (const [k, v] of rows) t.append(el('dt', {}, k), el('dd', {}, v));
  return t;
}

async function leases() {
  const { leases } = await api('/leases');
  leases.sort((a, b) => String(b.issuedAt).localeCompare(String(a.issuedAt)));
  document.querySelector('#leases tbody').replaceChildren(...leases.map((l) => {
    const b = el('button', { class: 'danger revoke' }, 'revoke');
    b.disabled = l.state !== 'live';
    b.addEventListener('click', async () => {
      if (!confirm('Revoke ' + l.id + ' and every lease under it? Their runs end killed.')) return;
      try { await api('/leases/' + encodeURIComponent(l.id) + '/revoke', { confirm: true, reason: 'console' }); } catch (e) { alert(String(e.message)); }
      leases_();
    });
    return el('tr', { 'data-lease': l.id, 'data-run': l.runId, 'data-state': l.state }, el('td', {}, l.id), el('td', {}, l.runId), el('td', {}, l.profile), el('td', {}, l.state), el('td', {}, (l.caps || []).join(' ')), el('td', {}, l.expiresAt), el('td', {}, b));
  }));
}
const leases_ = () => leases().catch((e) => alert(String(e.message)));

function rowsTable(r) {
  const t = el('table', {}, el('tr', {}, ...r.columns.map((c) => el('th', {}, c))));
  for (const row of r.rows) t.append(el('tr', {}, ...row.map((c) => el('td', {}, typeof c === 'object' && c !== null ? JSON.stringify(c) : c))));
  return t;
}

async function audit() {
  const v = await api('/audit/verify');
  const p = document.getElementById('verify');
  p.className = v.ok ? 'ok' : 'fail';
  p.textContent = (v.ok ? 'ledger ok: ' : 'ledger BROKEN: ') + (v.lines ?? '?') + ' line(s) in ' + (v.files ?? '?') + ' segment(s)' + (v.ok ? '' : ' — ' + JSON.stringify(v.bad || v).slice(0, 300));
}
document.getElementById('query').addEventListener('click', async () => {
  const out = document.getElementById('audit-result');
  try { out.replaceChildren(rowsTable(await api('/audit/query', { sql: document.getElementById('sql').value }))); } catch (e) { out.replaceChildren(el('p', { class: 'fail' }, String(e.message))); }
});
document.getElementById('doctor-run').addEventListener('click', async () => {
  const ul = document.getElementById('doctor');
  ul.replaceChildren(el('li', {}, 'running…'));
  try {
    const { checks } = await api('/doctor');
    ul.replaceChildren(...checks.map((c) => el('li', { class: c.ok ? 'ok' : 'fail' }, (c.ok ? 'ok    ' : 'FAIL  ') + c.name + ': ' + c.detail + (c.hint ? ' → ' + c.hint : ''))));
  } catch (e) { ul.replaceChildren(el('li', { class: 'fail' }, String(e.message))); }
});
async function fleet() {
  const { fleet: f } = await api('/fleet?since=' + encodeURIComponent(document.getElementById('fleet-since').value));
  const pairs = [['window', f.since + ' → ' + f.until], ['runs', f.runs + ' (' + f.live + ' live)'], ['end reasons', JSON.stringify(f.byEndReason)], ['killed by', JSON.stringify(f.byKilledBy)], ['stuck kills', f.stuckKills],
    ['refusals', f.refusals.total + ' ' + JSON.stringify(f.refusals.byCode)], ['tokens', f.tokens], ['cost', '$' + f.costUsd.toFixed(4) + (f.costUnknownRuns ? ' (+' + f.costUnknownRuns + ' unknown)' : '')],
    ['egress', f.egress ? f.egress.connections + ' connection(s), ' + f.egress.bytesUp + ' B up, ' + f.egress.bytesDown + ' B down ' + JSON.stringify(Object.fromEntries(Object.entries(f.egress.byRule).map(([k, r]) => [k, r.connections]))) + '; ' + f.egress.refusals + ' refused ' + JSON.stringify(f.egress.refusalsByReason) : '—'],
    ['kept out of context', '~' + f.keptOutOfContext.estSavedTokens + ' tokens (estimate)'], ['top trees', f.topTrees.map((t) => t.rootRunId + ' $' + t.costUsd.toFixed(4)).join(', ') || '—']];
  document.getElementById('fleet').replaceChildren(...pairs.flatMap(([k, v]) => [el('dt', {}, k), el('dd', {}, v)]));
  const lat = f.spawnLatencyMs;
  document.getElementById('fleet-charts').replaceChildren(
    el('h2', {}, 'Runs per ' + (f.bucketMinutes === 60 ? 'hour' : f.bucketMinutes / 60 + ' hours') + ', by end reason'), stacked(f.buckets, f.bucketMinutes),
    el('h2', {}, 'Tokens and cost per tree (the top ' + f.topTrees.length + ')'), treeBars(f.topTrees),
    el('h2', {}, 'Spawn latency (request → child started)'),
    el('p', { id: 'fleet-latency' }, lat.n ? 'p50 ' + dur(lat.p50) + ' · p95 ' + dur(lat.p95) + ' over ' + lat.n + ' run(s)' : 'no run started in the window'),
    el('h2', {}, 'Kept out of context'),
    el('p', { id: 'fleet-kept' }, bytes(f.keptOutOfContext.materializedBytes) + ' materialized as refs, ' + f.keptOutOfContext.charsReentered.toLocaleString() + ' chars re-entered a context — ~' + f.keptOutOfContext.estSavedTokens.toLocaleString() + ' tokens kept out (estimate, ' + f.keptOutOfContext.runs + ' envelope(s))'));
}
const REASON_COLOURS = { completed: '#1a7f37', failed: '#cf222e', killed: '#8250df', watchdog_timeout: '#9a6700', stuck: '#bc4c00' };
const colourOf = (reason) => REASON_COLOURS[reason] || '#57606a';
/** Runs per bucket as stacked bars by end reason (still running on top, grey), the hour under every few bars, a legend. */
function stacked(buckets, minutes) {
  const W = 720, H = 160, pad = 24, bw = Math.max(2, Math.floor((W - pad) / Math.max(1, buckets.length)) - 2);
  const max = Math.max(1, ...buckets.map((b) => b.runs));
  const pic = svg('svg', { id: 'fleet-hourly', width: W, height: H + 34, viewBox: '0 0 ' + W + ' ' + (H + 34), role: 'img' });
  pic.append(svg('text', { x: 0, y: 10, 'font-size': 10 }, String(max)), svg('line', { x1: pad, y1: H, x2: W, y2: H, stroke: '#d0d7de' }));
  const reasons = [...new Set(buckets.flatMap((b) => Object.keys(b.byEndReason)))].sort();
  buckets.forEach((b, i) => {
    const x = pad + i * (bw + 2);
    let y = H;
    const parts = [...reasons.map((r) => [r, b.byEndReason[r] || 0]), ['live', b.runs - Object.values(b.byEndReason).reduce((a, n) => a + n, 0)]];
    for (const [r, n] of parts) {
      if (!n) continue;
      const h = (n / max) * (H - 14);
      y -= h;
      pic.append(svg('rect', { x, y, width: bw, height: h, fill: r === 'live' ? '#afb8c1' : colourOf(r), 'data-reason': r, 'data-count': n }, svg('title', {}, new Date(b.start).toLocaleString() + ': ' + n + ' ' + r)));
    }
    const every = Math.ceil(buckets.length / 8);
    if (i % every === 0) pic.append(svg('text', { x, y: H + 12, 'font-size': 9 }, new Date(b.start).toLocaleString([], minutes >= 1440 ? { month: 'numeric', day: 'numeric' } : { hour: '2-digit', minute: '2-digit' })));
  });
  [...reasons, 'live'].forEach((r, i) => pic.append(svg('rect', { x: pad + i * 120, y: H + 20, width: 10, height: 10, fill: r === 'live' ? '#afb8c1' : colourOf(r) }), svg('text', { x: pad + i * 120 + 14, y: H + 29, 'font-size': 10 }, r === 'live' ? 'not ended' : r)));
  return pic;
}
/** The trees that spent the most: a bar per tree (tokens), its cost beside it; a click opens the root run. */
function treeBars(trees) {
  if (!trees.length) return el('p', {}, 'no tree in the window');
  const W = 720, row = 18, max = Math.max(1, ...trees.map((t) => t.tokens));
  const pic = svg('svg', { id: 'fleet-trees', width: W, height: trees.length * row + 4, role: 'img' });
  trees.forEach((t, i) => {
    const w = Math.max(1, (t.tokens / max) * 360);
    const g = svg('g', { 'data-root': t.rootRunId, style: 'cursor:pointer' },
      svg('text', { x: 0, y: i * row + 13, 'font-size': 11 }, t.rootRunId),
      svg('rect', { x: 170, y: i * row + 3, width: w, height: row - 6, fill: '#0969da' }),
      svg('text', { x: 176 + w, y: i * row + 13, 'font-size': 11 }, t.tokens.toLocaleString() + ' tokens · $' + t.costUsd.toFixed(4) + ' · ' + t.runs + ' run(s)'));
    g.addEventListener('click', () => { document.querySelector('nav button[data-tab="runs"]').click(); open_(t.rootRunId); });
    pic.append(g);
  });
  return pic;
}
document.getElementById('fleet-since').addEventListener('change', () => fleet().catch(() => {}));
/** The graphs on record, newest first; a click draws one. */
async function graphs() {
  const { graphs: gs } = await api('/graphs');
  const t = el('table', {}, el('tr', {}, ...['graph', 'label', 'state', 'nodes', 'created'].map((h) => el('th', {}, h))));
  for (const g of gs.slice().reverse()) {
    const tr = el('tr', { class: 'graph', 'data-graph': g.id, 'data-state': g.state }, el('td', {}, g.id), el('td', {}, g.label || '—'), el('td', {}, g.state), el('td', {}, g.nodes.length), el('td', {}, local(g.createdAt)));
    tr.addEventListener('click', () => showGraph(g.id).catch((e) => alert(String(e.message))));
    t.append(tr);
  }
  document.getElementById('graphs').replaceChildren(gs.length ? t : el('p', {}, 'no graph on record (brig graph run SPEC)'));
}

let openGraph = null;
let graphTimer = null;
const svg = (tag, attrs, ...kids) => {
  const e = document.createElementNS('http://www.w3.org/2000/svg', tag);
  for (const [k, v] of Object.entries(attrs || {})) e.setAttribute(k, String(v));
  for (const k of kids) e.append(k instanceof Node ? k : document.createTextNode(String(k)));
  return e;
};
/** A node's state as drawn: a gate with no decision yet waits for an operator. */
const drawnState = (n) => (n.kind === 'gate' && n.state === 'running' && n.gate && !n.gate.decision ? 'waiting' : n.state);

/** One graph, drawn live (every second until it ends): nodes in columns by depth, coloured by state; a click opens the node's run; a waiting gate gets approve / reject. */
async function showGraph(id) {
  openGraph = id;
  clearTimeout(graphTimer);
  const { explanation: x } = await api('/graphs/' + encodeURIComponent(id) + '/explain');
  if (openGraph !== id) return;
  const depth = new Map();
  for (const n of x.nodes) depth.set(n.id, n.dependsOn.length ? 1 + Math.max(...n.dependsOn.map((d) => depth.get(d) ?? 0)) : 0);
  const rows = new Map();
  const at = new Map();
  for (const n of x.nodes) {
    const d = depth.get(n.id), r = rows.get(d) ?? 0;
    rows.set(d, r + 1);
    at.set(n.id, { x: 10 + d * 200, y: 10 + r * 64 });
  }
  const W = 200 * (Math.max(0, ...depth.values()) + 1) + 20, H = 64 * Math.max(1, ...rows.values()) + 20;
  const pic = svg('svg', { class: 'graph', id: 'graph-svg', width: W, height: H, viewBox: '0 0 ' + W + ' ' + H });
  for (const n of x.nodes) for (const d of n.dependsOn) {
    const a = at.get(d), b = at.get(n.id);
    if (a && b) pic.append(svg('line', { x1: a.x + 160, y1: a.y + 24, x2: b.x, y2: b.y + 24 }));
  }
  for (const n of x.nodes) {
    const p = at.get(n.id), st = drawnState(n), last = n.attempts[n.attempts.length - 1];
    const g = svg('g', { class: 'node n-' + st, 'data-node': n.id, 'data-state': st, transform: 'translate(' + p.x + ',' + p.y + ')' },
      svg('rect', { width: 160, height: 48 }), svg('text', { x: 8, y: 18 }, n.id.length > 22 ? n.id.slice(0, 21) + '…' : n.id),
      svg('text', { x: 8, y: 36 }, n.kind + ' · ' + st + (n.attempts.length > 1 ? ' · ' + n.attempts.length + ' attempts' : '')));
    if (last && last.runId) g.addEventListener('click', () => {
      document.querySelector('nav button[data-tab="runs"]').click();
      location.hash = '#run=' + encodeURIComponent(last.runId);
    });
    pic.append(g);
  }
  const gates = x.nodes.filter((n) => drawnState(n) === 'waiting').map((n) => {
    const decide = (decision) => async () => {
      const note = prompt((decision === 'approve' ? 'Approve' : 'Reject') + ' gate ' + n.id + ' of ' + x.graphId + '? A note (kept only as its hash):', '');
      if (note === null) return;
      try { await api('/graphs/' + encodeURIComponent(x.graphId) + '/decide', { node: n.id, decision, by: 'console', ...(note ? { note } : {}) }); } catch (e) { alert(String(e.message)); }
      showGraph(x.graphId).catch(() => {});
    };
    const ok = el('button', { class: 'approve', 'data-gate': n.id }, 'approve ' + n.id), no = el('button', { class: 'reject danger', 'data-gate': n.id }, 'reject ' + n.id);
    ok.addEventListener('click', decide('approve'));
    no.addEventListener('click', decide('reject'));
    // What the person deciding needs: the spec's prompt, and the results the gate shows (its show list).
    return el('div', { class: 'gate', 'data-gate': n.id }, el('p', {}, 'gate ', n.id, ' waits for an operator until ', local(n.gate.deadline), ': ', ok, ' ', no),
      el('p', { class: 'prompt' }, n.prompt || ''), ...(n.shown || []).map((sh) => el('pre', { 'data-shows': sh.node }, sh.node + ': ' + sh.text)));
  });
  document.getElementById('graph').replaceChildren(el('h2', {}, 'Graph ' + x.graphId + (x.label ? ' (' + x.label + ')' : '')),
    el('p', { id: 'graph-state', 'data-state': x.state }, x.state + (x.endReason ? ' — ' + x.endReason : '') + ' · max ' + x.parallel + ' at once'), pic, ...gates);
  if (x.state === 'running') graphTimer = setTimeout(() => { if (!document.getElementById('tab-graphs').hidden) showGraph(id).catch(() => {}); }, 1000);
}

for (const b of document.querySelectorAll('nav button')) b.addEventListener('click', () => {
  for (const x of document.querySelectorAll('nav button')) x.classList.toggle('on', x === b);
  for (const name of ['runs', 'leases', 'audit', 'doctor', 'fleet', 'graphs']) document.getElementById('tab-' + name).hidden = name !== b.dataset.tab;
  if (b.dataset.tab === 'graphs') graphs().then(() => openGraph && showGraph(openGraph)).catch((e) => alert(String(e.message)));
  if (b.dataset.tab === 'leases') leases_();
  if (b.dataset.tab === 'audit') audit().catch((e) => alert(String(e.message)));
  if (b.dataset.tab === 'fleet') fleet().catch((e) => alert(String(e.message)));
});

let timer = null;
const soon = () => { clearTimeout(timer); timer = setTimeout(() => refresh().catch(() => {}), 150); };
function follow() {
  const es = new EventSource('/api/v1/events?token=' + encodeURIComponent(token));
  es.onopen = () => { document.getElementById('live').textContent = 'live'; soon(); };
  es.onmessage = soon;
  for (const t of ['spawned', 'started', 'progress', 'completed', 'failed', 'lifecycle_ended', 'steered', 'gap']) es.addEventListener(t, soon);
  es.onerror = () => { document.getElementById('live').textContent = 'reconnecting…'; };
}
for (const id of ['f-status', 'f-kind', 'f-label', 'f-root', 'f-since', 'f-search']) document.getElementById(id).addEventListener(id === 'f-label' || id === 'f-root' || id === 'f-search' ? 'input' : 'change', () => { if (id !== 'f-search') before = null; soon(); });
document.getElementById('older').addEventListener('click', () => { if (runs.length) { before = runs[0].id; refresh().catch(() => {}); } });
document.getElementById('newest').addEventListener('click', () => { before = null; refresh().catch(() => {}); });
refresh().catch((e) => { document.getElementById('live').textContent = String(e.message); });
if (/^#run=/.test(location.hash)) window.dispatchEvent(new HashChangeEvent('hashchange'));
follow();
</script>
</body>
</html>
`;

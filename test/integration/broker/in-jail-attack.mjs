// Runs INSIDE a real jail as the child (Node built-ins only). Attacks its broker socket and
// prints one JSON report line. Env: TOKEN (its own bearer), OTHER (another run's bearer),
// METHODS (JSON: method → required capability).
import net from 'node:net';

const SOCK = '/run/brig/broker.sock';
const TOKEN = process.env.TOKEN;
const OTHER = process.env.OTHER;
const METHODS = JSON.parse(process.env.METHODS);
const report = { caps: {}, auth: {}, hostile: {}, phases: {} };
const sleep = (ms) => new Promise((r) => setTimeout(r, ms));

function connect() {
  return new Promise((resolve, reject) => {
    const s = net.connect(SOCK);
    s.setEncoding('utf8');
    let buf = '';
    const waiters = [];
    const got = [];
    let closed = false;
    s.on('data', (d) => {
      buf += d;
      let nl;
      while ((nl = buf.indexOf('\n')) !== -1) {
        const line = buf.slice(0, nl);
        buf = buf.slice(nl + 1);
        let r;
        try { r = JSON.parse(line); } catch { continue; }
        const w = waiters.shift();
        if (w) w(r); else got.push(r);
      }
    });
    s.on('error', () => {});
    // The broker ends its side first (FIN); a peer still writing sees 'end' before 'close'.
    s.on('end', () => { closed = true; for (const w of waiters.splice(0)) w({ ok: false, error: { code: 'closed' } }); });
    s.on('close', () => { closed = true; for (const w of waiters.splice(0)) w({ ok: false, error: { code: 'closed' } }); });
    s.once('connect', () => resolve({
      s,
      next: () => (got.length ? Promise.resolve(got.shift()) : closed ? Promise.resolve({ ok: false, error: { code: 'closed' } }) : new Promise((r) => waiters.push(r))),
      send(obj) { s.write((typeof obj === 'string' ? obj : JSON.stringify(obj)) + '\n'); return this.next(); },
      get closed() { return closed; },
    }));
    s.once('error', reject);
  });
}
const code = (r) => (r.ok ? 'ok' : r.error.code);
let id = 0;
const call = (c, method, params = {}, token = TOKEN) => c.send({ v: 1, id: ++id, method, token, params });

const c = await connect();
report.hello = code(await call(c, 'hello'));
for (const [m, cap] of Object.entries(METHODS)) report.caps[m] = { cap, got: code(await call(c, m, {})) };
report.auth.bad = code(await call(c, 'progress', {}, 'A'.repeat(43)));
report.auth.other = code(await call(c, 'progress', {}, OTHER));
report.auth.missing = code(await c.send({ v: 1, id: ++id, method: 'hello' }));
// Every method, not only one: a bad bearer and another run's bearer.
report.authAll = { bad: {}, other: {} };
for (const m of Object.keys(METHODS)) {
  report.authAll.bad[m] = code(await call(c, m, {}, 'A'.repeat(43)));
  report.authAll.other[m] = code(await call(c, m, {}, OTHER));
}

// A 10 MB line on its own connection.
const big = await connect();
big.s.write(Buffer.alloc(10 * 1024 * 1024, 0x61));
report.hostile.bigLine = code(await big.next());
for (let i = 0; i < 30 && !big.closed; i++) await sleep(100);
report.hostile.bigLineClosed = big.closed;
report.hostile.invalidJson = code(await c.send('{"v":1,"id":'));
report.hostile.deepNesting = code(await c.send('['.repeat(60000)));
report.hostile.unknown = code(await call(c, 'system.exec', { cmd: 'id' }));
report.hostile.proto = code(await call(c, '__proto__'));
report.hostile.stillServed = code(await call(c, 'hello'));

// A half-open connection: connect and say nothing. The broker must close it on its own.
const silent = await connect();

await sleep(1500);
report.hostile.halfOpenClosed = silent.closed;

// Phase 2: the host expires, then revokes, this run's lease while it keeps calling.
console.log('PHASE1-DONE');
// Every method is tried in each round (paced under the refill rate, so the answers are the
// lease's, not the rate limiter's); `byMethod` records which methods met each kind.
const seen = [];
const byMethod = { expired: {}, revoked: {} };
const all = Object.keys(METHODS);
const deadline = Date.now() + 30000;
while (Date.now() < deadline && !(seen.length === 2 && all.every((m) => byMethod.revoked[m]))) {
  for (const m of all) {
    const r = await call(c, m, {});
    if (!r.ok && r.error.code === 'lease_expired') {
      const kind = /revoked/.test(r.error.message) ? 'revoked' : 'expired';
      if (!seen.includes(kind)) seen.push(kind);
      byMethod[kind][m] = true;
    }
  }
  await sleep(300);
}
report.phases.seen = seen;
report.phases.byMethod = { expired: Object.keys(byMethod.expired).sort(), revoked: Object.keys(byMethod.revoked).sort() };

// Last, since it is sustained abuse (the broker then cuts this run off): 10,000 messages in
// one burst on another connection.
const flood = await connect();
const lines = [];
for (let i = 0; i < 10000; i++) lines.push(JSON.stringify({ v: 1, id: `f${i}`, method: 'progress', token: TOKEN, params: {} }));
flood.s.write(lines.join('\n') + '\n');
const counts = {};
for (let i = 0; i < 10000; i++) {
  const r = await flood.next();
  counts[code(r)] = (counts[code(r)] ?? 0) + 1;
  if (r.error?.code === 'closed') break;
}
report.hostile.burst = counts;
report.hostile.afterAbuse = code(await call(c, 'hello'));
console.log('REPORT ' + JSON.stringify(report));
process.exit(0);

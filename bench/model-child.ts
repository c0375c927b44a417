/**
 * A script child for the model-call benches: it speaks the broker protocol itself (no SDK in the
 * way) and times its own `llm.complete` calls — `calls` timed after one warm-up, each on a fresh
 * conversation whose one user turn is `${before}${i}${after}`. Returns the times (ms).
 */
export function modelCallsChild(o: { calls: number; system: string; before: string; after?: string; maxTokens?: number }): string {
  const complete = JSON.stringify({ system: o.system, ...(o.maxTokens !== undefined ? { maxTokens: o.maxTokens } : {}) });
  return `import net from 'node:net';
import { readFileSync } from 'node:fs';
export default async function () {
  const token = readFileSync('/workspace/.brig/token', 'utf8').trim();
  const s = net.connect('/run/brig/broker.sock');
  await new Promise((r) => s.once('connect', r));
  let buf = ''; const waiting = new Map(); let id = 0;
  s.on('data', (d) => { buf += d; let i; while ((i = buf.indexOf('\\n')) >= 0) { const m = JSON.parse(buf.slice(0, i)); buf = buf.slice(i + 1); waiting.get(m.id)?.(m); } });
  const call = (method, params) => new Promise((r) => { const k = ++id; waiting.set(k, r); s.write(JSON.stringify({ v: 1, id: k, method, token, params }) + '\\n'); });
  const ms = [];
  for (let i = 0; i <= ${o.calls}; i++) {
    await call('llm.reset', { messages: [{ role: 'user', content: ${JSON.stringify(o.before)} + i + ${JSON.stringify(o.after ?? '')} }] });
    const t0 = performance.now();
    const r = await call('llm.complete', ${complete});
    if (!r.ok) throw new Error(r.error.code + ' ' + r.error.message);
    if (i > 0) ms.push(performance.now() - t0);
  }
  s.end();
  return ms;
}`;
}

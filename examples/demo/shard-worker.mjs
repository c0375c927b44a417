// A brig script child: runs inside its own jail (no network, read-only root, non-root).
// It generates one deterministic shard of an order book and a service log from its seed,
// writes them to /workspace/out (materialized by brig as ResultRefs), and returns a short
// result. Node built-ins only: nothing else exists in the jail.
import { createWriteStream } from 'node:fs';
import { once } from 'node:events';

const REGIONS = ['north', 'south', 'east', 'west', 'central'];
const PRODUCTS = ['anchor', 'bollard', 'capstan', 'davit', 'ensign', 'fender', 'gangway', 'hawser'];
const STATUSES = ['paid', 'paid', 'paid', 'paid', 'shipped', 'shipped', 'refunded', 'cancelled'];
const ERRORS = ['E200', 'E404', 'E429', 'E503', 'E504'];

// mulberry32: a tiny seeded PRNG, so every run of the demo yields the same bytes.
function rng(seed) {
  let a = seed >>> 0;
  return () => {
    a = (a + 0x6d2b79f5) >>> 0;
    let t = a;
    t = Math.imul(t ^ (t >>> 15), t | 1);
    t ^= t + Math.imul(t ^ (t >>> 7), t | 61);
    return ((t ^ (t >>> 14)) >>> 0) / 4294967296;
  };
}
const pick = (r, xs) => xs[Math.floor(r() * xs.length)];

async function writeLines(path, count, line) {
  const out = createWriteStream(path);
  for (let i = 0; i < count; i++) {
    if (!out.write(line(i) + '\n')) await once(out, 'drain');
  }
  out.end();
  await once(out, 'finish');
}

export default async function (brig) {
  const { shard, seed, orders, logLines } = JSON.parse(brig.task);
  const r = rng(seed);
  await brig.progress(`shard ${shard}: orders`);
  const epoch = Date.UTC(2026, 0, 1);
  await writeLines('/workspace/out/orders.jsonl', orders, (i) =>
    JSON.stringify({
      id: `s${shard}-${i}`,
      region: pick(r, REGIONS),
      product: pick(r, PRODUCTS),
      status: pick(r, STATUSES),
      qty: 1 + Math.floor(r() * 9),
      amount: Math.round(r() * 50000) / 100,
      installed_at: new Date(epoch + Math.floor(r() * 300 * 86400000)).toISOString(),
    }),
  );
  await brig.progress(`shard ${shard}: log`);
  await writeLines('/workspace/out/service.log', logLines, (i) => {
    const t = new Date(epoch + i * 1000).toISOString();
    return r() < 0.04
      ? `${t} ERROR ${pick(r, ERRORS)} upstream ${pick(r, PRODUCTS)} failed after ${Math.floor(r() * 3000)}ms`
      : `${t} INFO request ${i} served in ${Math.floor(r() * 200)}ms`;
  });
  await brig.progress(`shard ${shard}: done`);
  return { shard, orders, logLines, files: ['out/orders.jsonl', 'out/service.log'] };
}

/**
 * Exec into a pod over the Kubernetes API's WebSocket exec protocol (src/jail/k8s/kube-exec.ts),
 * on brig's own cluster: exit codes from channel 3's Status with stdout and stderr; a 64 MiB
 * stdout through a deliberately slow reader, byte-exact and hash-equal, while this process's
 * memory stays bounded (the socket is paused, not buffered); stdin delivered and half-closed
 * with v5's close signal; a container the pod does not have, an account RBAC refuses and a CA
 * that did not sign the server all refused with a BrigError in the API server's words; and after
 * close() nothing is left to keep a process alive.
 */
import assert from 'node:assert/strict';
import { spawn } from 'node:child_process';
import { createHash, randomBytes } from 'node:crypto';
import net from 'node:net';
import path from 'node:path';
import { Readable, Writable } from 'node:stream';
import { pipeline } from 'node:stream/promises';
import { test } from 'node:test';
import http from 'node:http';
import { WebSocketServer, type WebSocket } from 'ws';
import { BrigError } from '../../src/util/errors.js';
import { KubeApi, readKubeconfig } from '../../src/jail/k8s/kube-api.js';
import { execInPod, execText, exitCodeOfStatus } from '../../src/jail/k8s/kube-exec.js';
import { launchVerified } from '../../src/jail/k8s/pod-launch.js';
import { CONTAINER, renderPod } from '../../src/jail/k8s/pod-spec.js';
import type { JailSpec } from '../../src/jail/index.js';
import { kubectl, requireCluster, type Cluster } from '../helpers/k8s.js';

const MiB = 1024 * 1024;
const ROOT = path.resolve(import.meta.dirname, '../..');

function manifest(c: Cluster) {
  const id = `r-${randomBytes(8).toString('hex')}`;
  // /workspace holds the 64 MiB file the stream reads: a disk limit above it.
  const spec: JailSpec = { runId: id, leaseId: 'l-exec', rootRunId: id, argv: ['sh', '-c', 'mkdir -p /workspace/out; sleep 600'], env: { HOME: '/workspace', PATH: '/bin:/usr/bin' }, limits: { memoryMb: 128, cpu: 0.5, pids: 64, tmpfsMb: 16, diskMb: 256 }, artifacts: [] };
  return renderPod(spec, { namespace: c.namespace, owner: 'k8s-test', image: c.childImage, workspace: c.workspace, activeDeadlineSeconds: 600 });
}

async function waitRunning(api: KubeApi, name: string, timeoutMs: number): Promise<void> {
  const until = Date.now() + timeoutMs;
  for (;;) {
    const pod = await api.getPod(name);
    const statuses = ((pod?.status as { containerStatuses?: { name: string; state?: { running?: unknown } }[] } | undefined)?.containerStatuses ?? []);
    if (statuses.find((s) => s.name === CONTAINER)?.state?.running) return;
    if (Date.now() > until) assert.fail(`pod ${name} is not running after ${timeoutMs} ms: ${JSON.stringify(pod?.status ?? null).slice(0, 600)}`);
    await new Promise((r) => setTimeout(r, 200));
  }
}

/** A reader paced at `bytesPerS`, hashing and counting what it gets. */
function pacedSink(bytesPerS: number) {
  const hash = createHash('sha256');
  const r = { bytes: 0, sha256: '', hash };
  const t0 = performance.now();
  const sink = new Writable({
    highWaterMark: 64 * 1024,
    write(chunk: Buffer, _enc, cb) {
      hash.update(chunk);
      r.bytes += chunk.length;
      const wait = t0 + (r.bytes / bytesPerS) * 1000 - performance.now();
      if (wait > 0) setTimeout(cb, wait);
      else cb();
    },
  });
  return { sink, r };
}

test('a channel-3 Status reads as an exit code; any other failure, or no JSON, is a BrigError', () => {
  assert.equal(exitCodeOfStatus('{"metadata":{},"status":"Success"}', 'x'), 0);
  assert.equal(exitCodeOfStatus('{"status":"Failure","reason":"NonZeroExitCode","details":{"causes":[{"reason":"ExitCode","message":"3"}]}}', 'x'), 3);
  assert.throws(() => exitCodeOfStatus('{"status":"Failure","reason":"InternalError","message":"container not running"}', 'exec'), (e) => e instanceof BrigError && e.code === 'jail_failed' && /container not running/.test(e.message));
  assert.throws(() => exitCodeOfStatus('{"status":"Failure","reason":"NonZeroExitCode","details":{"causes":[{"reason":"ExitCode","message":"x"}]}}', 'x'), BrigError);
  assert.throws(() => exitCodeOfStatus('not json', 'x'), /not JSON/);
});

test('a server that accepts and never answers: refused engine_unavailable at timeoutMs, nothing left open', async (t) => {
  const sockets = new Set<net.Socket>();
  const closed: Promise<void>[] = [];
  const server = net.createServer((s) => {
    sockets.add(s);
    closed.push(new Promise((r) => s.on('close', () => r())));
    s.resume();
  });
  await new Promise<void>((r) => server.listen(0, '127.0.0.1', r));
  t.after(() => {
    for (const s of sockets) s.destroy();
    server.close();
  });
  const api = new KubeApi({ server: `http://127.0.0.1:${(server.address() as net.AddressInfo).port}` }, 'brig');
  t.after(() => api.close());
  const t0 = Date.now();
  await assert.rejects(execInPod(api, 'p', 'c', ['true'], { timeoutMs: 300 }), (e) => e instanceof BrigError && e.code === 'engine_unavailable' && /300 ms/.test(e.message));
  assert.ok(Date.now() - t0 < 3000);
  assert.equal(closed.length, 1);
  await Promise.all(closed); // the client hung up: else this would wait for the test's timeout
});

/** A stand-in API server speaking the exec protocol as `script` says (for what a real one will not do on demand). */
async function fakeApi(t: { after(fn: () => unknown): void }, protocol: string, script: (ws: WebSocket) => void): Promise<KubeApi> {
  const server = http.createServer();
  const wss = new WebSocketServer({ server, handleProtocols: (offered) => (offered.has(protocol) ? protocol : false) });
  wss.on('connection', script);
  await new Promise<void>((r) => server.listen(0, '127.0.0.1', r));
  const api = new KubeApi({ server: `http://127.0.0.1:${(server.address() as net.AddressInfo).port}` }, 'brig');
  t.after(async () => {
    await api.close();
    for (const c of wss.clients) c.terminate();
    await new Promise((r) => wss.close(r));
    await new Promise((r) => server.close(r));
  });
  return api;
}

const frame = (channel: number, text: string) => Buffer.concat([Buffer.of(channel), Buffer.from(text)]);

test('fails closed on what a server may do wrong: v4 chosen when stdin needs v5, no status before the close, an unknown channel', async (t) => {
  const v4 = await fakeApi(t, 'v4.channel.k8s.io', (ws) => {
    ws.send(frame(1, 'hi'));
    ws.send(frame(3, '{"status":"Failure","reason":"NonZeroExitCode","details":{"causes":[{"reason":"ExitCode","message":"5"}]}}'));
    ws.close();
  });
  // Without stdin v4 is enough: its status says the exit code.
  assert.deepEqual(await execText(v4, 'p', 'c', ['x']), { exitCode: 5, stdout: 'hi', stderr: '', stderrBytes: 0 });
  await assert.rejects(execInPod(v4, 'p', 'c', ['cat'], { stdin: Buffer.from('x') }), (e) => e instanceof BrigError && e.code === 'jail_failed' && /chose v4\.channel\.k8s\.io/.test(e.message) && /v5\.channel\.k8s\.io/.test(e.message));
  const noStatus = await fakeApi(t, 'v5.channel.k8s.io', (ws) => {
    ws.send(frame(1, 'partial'));
    ws.close(1011, 'gone');
  });
  await assert.rejects(execText(noStatus, 'p', 'c', ['x']), (e) => e instanceof BrigError && e.code === 'jail_failed' && /closed \(1011 gone\) before the process's exit status/.test(e.message));
  const odd = await fakeApi(t, 'v5.channel.k8s.io', (ws) => ws.send(frame(9, 'what')));
  await assert.rejects(execText(odd, 'p', 'c', ['x']), (e) => e instanceof BrigError && /channel 9/.test(e.message));
});

test('exec into a running pod over the WebSocket exec protocol (v5.channel.k8s.io)', async (t) => {
  const c = requireCluster(t);
  if (!c) return;
  const admin = readKubeconfig(c.kubeconfig);
  const api = new KubeApi(admin, c.namespace);
  const m = manifest(c);
  const pod = m.metadata.name;
  t.after(async () => {
    await api.deletePod(pod);
    await api.close();
  });
  await launchVerified(api, m);
  await waitRunning(api, pod, 60_000);

  await t.test('exit codes 0 and 3 come back from channel 3, stdout and stderr from 1 and 2', async () => {
    const ok = await execText(api, pod, CONTAINER, ['sh', '-c', 'echo "uid=$(id -u)"']);
    assert.deepEqual(ok, { exitCode: 0, stdout: 'uid=65534\n', stderr: '', stderrBytes: 0 });
    const three = await execText(api, pod, CONTAINER, ['sh', '-c', 'echo out; echo "to stderr: $0" >&2; exit 3', 'an arg with spaces & a quote "']);
    assert.deepEqual(three, { exitCode: 3, stdout: 'out\n', stderr: 'to stderr: an arg with spaces & a quote "\n', stderrBytes: 42 });
    const s = await execInPod(api, pod, CONTAINER, ['true']);
    assert.equal(s.protocol, 'v5.channel.k8s.io');
    s.stdout.resume();
    assert.deepEqual(await s.done, { exitCode: 0, stderr: '', stderrBytes: 0 });
    // stderr is a bounded tail: its last 16 KiB.
    const loud = await execText(api, pod, CONTAINER, ['sh', '-c', 'i=0; while [ $i -lt 2000 ]; do echo "line $i ........................"; i=$((i+1)); done >&2']);
    assert.ok(loud.stderr.length <= 16 * 1024 && loud.stderr.endsWith('line 1999 ........................\n'), `${loud.stderr.length}`);
  });

  await t.test('a 64 MiB stdout streams through a slow reader: byte-exact, hash-equal, memory bounded', async (tt) => {
    const size = 64 * MiB;
    const prep = await execText(api, pod, CONTAINER, ['sh', '-c', `head -c ${size} /dev/urandom > /workspace/out/big && sha256sum /workspace/out/big`]);
    assert.equal(prep.exitCode, 0, prep.stderr);
    const want = prep.stdout.split(' ')[0];
    // The first stream through this process is its warm-up: V8 collects the spent socket buffers
    // lazily (external memory up to its soft limit), so the first pass grows RSS by a one-time
    // ~30–40 MiB whatever the stream's size. The second, through a reader paced far below the
    // producer, is the one whose memory is asserted: without backpressure it would buffer most
    // of the 64 MiB within a second.
    for (const [label, rate] of [['fast reader', Infinity], ['slow reader (16 MiB/s)', 16 * MiB]] as const) {
      const rss0 = process.memoryUsage().rss;
      let peakRss = rss0;
      let peakBuffered = 0;
      const s = await execInPod(api, pod, CONTAINER, ['cat', '/workspace/out/big']);
      const sampler = setInterval(() => {
        peakRss = Math.max(peakRss, process.memoryUsage().rss);
        peakBuffered = Math.max(peakBuffered, s.stdout.readableLength);
      }, 10);
      const { sink, r } = pacedSink(rate);
      const t0 = performance.now();
      try {
        await pipeline(s.stdout, sink);
        assert.deepEqual(await s.done, { exitCode: 0, stderr: '', stderrBytes: 0 });
      } finally {
        clearInterval(sampler);
      }
      const secs = (performance.now() - t0) / 1000;
      peakRss = Math.max(peakRss, process.memoryUsage().rss);
      const growth = (peakRss - rss0) / MiB;
      tt.diagnostic(`${label}: ${r.bytes} bytes in ${secs.toFixed(2)} s = ${(r.bytes / MiB / secs).toFixed(1)} MiB/s; RSS growth ${growth.toFixed(1)} MiB; stdout buffer peak ${(peakBuffered / 1024).toFixed(0)} KiB`);
      assert.equal(r.bytes, size);
      assert.equal(r.hash.digest('hex'), want);
      assert.ok(peakBuffered <= 2 * MiB, `stdout held ${peakBuffered} bytes`);
      if (rate === Infinity) continue;
      assert.ok(secs > 3, `the reader set the pace (${secs.toFixed(2)} s)`);
      assert.ok(growth < 32, `RSS grew ${growth.toFixed(1)} MiB while streaming 64 MiB to a slow reader`);
    }
  });

  await t.test('stdin is delivered and half-closed (v5 close signal): wc -c counts it exactly, cat echoes it, EOF alone is seen', async () => {
    const n = 5 * MiB + 7;
    async function* chunks() {
      for (let sent = 0; sent < n; sent += 64 * 1024) yield Buffer.alloc(Math.min(64 * 1024, n - sent), 0x61);
    }
    const wc = await execText(api, pod, CONTAINER, ['wc', '-c'], { stdin: Readable.from(chunks()) });
    assert.deepEqual({ ...wc, stdout: wc.stdout.trim() }, { exitCode: 0, stdout: String(n), stderr: '', stderrBytes: 0 });

    const data = randomBytes(8 * MiB);
    const s = await execInPod(api, pod, CONTAINER, ['cat'], { stdin: data });
    const back: Buffer[] = [];
    for await (const c of s.stdout as AsyncIterable<Buffer>) back.push(c);
    assert.equal((await s.done).exitCode, 0);
    assert.ok(Buffer.concat(back).equals(data), 'cat echoed the bytes');

    const eof = await execText(api, pod, CONTAINER, ['sh', '-c', 'cat >/dev/null; echo eof-seen'], { stdin: Buffer.alloc(0) });
    assert.equal(eof.stdout, 'eof-seen\n');
  });

  await t.test('a container the pod does not have, or a program its image does not have: a BrigError naming it', async (tt) => {
    await assert.rejects(execInPod(api, pod, 'no-such-container', ['true']), (e) => {
      assert.ok(e instanceof BrigError && e.code === 'jail_failed', String(e));
      assert.match(e.message, /no-such-container/);
      tt.diagnostic(e.message);
      return true;
    });
    await assert.rejects(execText(api, pod, CONTAINER, ['/no/such/program']), (e) => {
      assert.ok(e instanceof BrigError && e.code === 'jail_failed', String(e));
      assert.match(e.message, /\/no\/such\/program/);
      tt.diagnostic(e.message);
      return true;
    });
    await assert.rejects(execText(api, 'no-such-pod', CONTAINER, ['true']), (e) => e instanceof BrigError && (e.data as { status?: number }).status === 404 && /no-such-pod/.test(e.message));
  });

  await t.test("an account RBAC refuses: 403 with the API server's message; a CA that did not sign the server: refused", async (tt) => {
    const token = await kubectl(c, ['create', 'token', 'default', '--duration=10m']);
    assert.equal(token.code, 0, token.stderr);
    const weak = new KubeApi({ server: admin.server, ...(admin.ca ? { ca: admin.ca } : {}), token: token.stdout.trim() }, c.namespace);
    tt.after(() => weak.close());
    await assert.rejects(execInPod(weak, pod, CONTAINER, ['true']), (e) => {
      assert.ok(e instanceof BrigError && e.code === 'jail_failed', String(e));
      assert.equal((e.data as { status?: number }).status, 403);
      assert.match(e.message, /403 .*forbidden.*pods\/exec/);
      assert.match(e.hint, /pods\/exec/);
      tt.diagnostic(e.message);
      return true;
    });
    // Without the kubeconfig's CA the server's certificate does not verify: never an unverified connection.
    const { ca: _ca, ...noCa } = admin;
    const unverified = new KubeApi(noCa, c.namespace);
    tt.after(() => unverified.close());
    await assert.rejects(execInPod(unverified, pod, CONTAINER, ['true']), (e) => e instanceof BrigError && e.code === 'engine_unavailable' && /certificate/.test(e.message));
  });

  await t.test('after close() — mid-run, stdin open, or after the end — nothing keeps the process alive', async () => {
    const script = `
      import { PassThrough } from 'node:stream';
      import { KubeApi, readKubeconfig } from ${JSON.stringify(path.join(ROOT, 'src/jail/k8s/kube-api.ts'))};
      import { execInPod, execText } from ${JSON.stringify(path.join(ROOT, 'src/jail/k8s/kube-exec.ts'))};
      const [kc, ns, pod, container] = process.argv.slice(1);
      const api = new KubeApi(readKubeconfig(kc), ns);
      const ended = await execText(api, pod, container, ['echo', 'ended']);
      const running = await execInPod(api, pod, container, ['sleep', '300']);
      running.close();
      const relay = await execInPod(api, pod, container, ['cat'], { stdin: new PassThrough() });
      relay.stdout.resume();
      relay.close();
      const why = await Promise.all([running.done, relay.done].map((d) => d.then(() => 'resolved', (e) => e.code)));
      await api.close();
      console.log(ended.stdout.trim(), why.join(' '));
    `;
    const t0 = Date.now();
    const out = await new Promise<{ code: number | null; stdout: string; stderr: string }>((resolve) => {
      const p = spawn(process.execPath, ['--import', 'tsx', '--input-type=module', '-e', script, c.kubeconfig, c.namespace, pod, CONTAINER], { cwd: ROOT, stdio: ['ignore', 'pipe', 'pipe'] });
      let stdout = '';
      let stderr = '';
      p.stdout.on('data', (d: Buffer) => (stdout += d.toString()));
      p.stderr.on('data', (d: Buffer) => (stderr += d.toString()));
      const kill = setTimeout(() => p.kill('SIGKILL'), 30_000);
      p.on('close', (code) => {
        clearTimeout(kill);
        resolve({ code, stdout, stderr });
      });
    });
    assert.equal(out.code, 0, `the process did not end by itself: ${out.stderr.slice(-2000)}`);
    assert.equal(out.stdout.trim(), 'ended jail_failed jail_failed');
    assert.ok(Date.now() - t0 < 20_000, `it ended in ${Date.now() - t0} ms`);
    // The closed `sleep 300` may be left running in the container: Kubernetes' behaviour, not a leak of ours.
  });
});

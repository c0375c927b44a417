#!/usr/bin/env node
// Serves brig's metrics, and nothing else, over TCP for Prometheus: GET /metrics on
// METRICS_ADDR (default 127.0.0.1:9464) is GET /v1/metrics on the daemon's unix socket; every
// other method or path is 404. The socket is the daemon's whole API (spawn, kill, steer), so a
// generic relay (socat) would expose all of it: this one forwards one fixed request. Run it as
// brig's user (the socket is 0600). When the daemon is down it answers 502: the scrape fails
// (`up` 0), brig_build_info goes stale, and the BrigDown rule fires.
//   BRIG_SOCK=$BRIG_HOME/brig.sock METRICS_ADDR=127.0.0.1:9464 node metrics-relay.mjs
import http from 'node:http';
import os from 'node:os';
import path from 'node:path';

const socketPath = process.env.BRIG_SOCK ?? path.join(process.env.BRIG_HOME ?? path.join(os.homedir(), '.brig'), 'brig.sock');
const [host, port] = (process.env.METRICS_ADDR ?? '127.0.0.1:9464').split(/:(?=\d+$)/);

http
  .createServer((req, res) => {
    if (req.method !== 'GET' || req.url !== '/metrics') return void res.writeHead(404).end();
    const up = http.get({ socketPath, path: '/v1/metrics', timeout: 10_000 }, (r) => {
      res.writeHead(r.statusCode ?? 502, { 'content-type': r.headers['content-type'] ?? 'text/plain; version=0.0.4' });
      r.pipe(res);
    });
    up.on('timeout', () => up.destroy(new Error('timeout')));
    up.on('error', () => {
      if (!res.headersSent) res.writeHead(502);
      res.end();
    });
  })
  .listen(Number(port), host, () => console.error(`brig metrics on http://${host}:${port}/metrics from ${socketPath}`));

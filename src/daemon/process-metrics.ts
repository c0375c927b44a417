/**
 * The daemon process's own health, read at scrape time from Node's built-ins: CPU, memory, file
 * descriptors, start time and event-loop delay. The names and meanings are prom-client's
 * default metrics (process_*, nodejs_*), so a stock Node.js dashboard reads them; they are
 * written here rather than imported because brig's registry is its own (util/metrics.ts: one
 * per supervisor, no global) and these are a dozen reads of `process` and `/proc`.
 */
import fs from 'node:fs';
import { monitorEventLoopDelay } from 'node:perf_hooks';
import type { Metrics } from '../util/metrics.js';

/** Declared with the daemon's other families (metrics-feed.ts declareFamilies). */
export function declareProcess(m: Metrics): void {
  m.declare('process_cpu_user_seconds_total', 'User CPU time spent by the daemon process, in seconds.', 'counter');
  m.declare('process_cpu_system_seconds_total', 'System CPU time spent by the daemon process, in seconds.', 'counter');
  m.declare('process_cpu_seconds_total', 'User and system CPU time spent by the daemon process, in seconds.', 'counter');
  m.declare('process_start_time_seconds', 'Start time of the daemon process since the Unix epoch, in seconds.', 'gauge');
  m.declare('process_resident_memory_bytes', 'Resident memory size of the daemon process, in bytes.', 'gauge');
  m.declare('process_open_fds', 'Open file descriptors of the daemon process (Linux: /proc/self/fd).', 'gauge');
  m.declare('process_max_fds', 'The soft limit on open file descriptors (Linux: /proc/self/limits).', 'gauge');
  m.declare('nodejs_heap_size_total_bytes', 'V8 heap size, in bytes.', 'gauge');
  m.declare('nodejs_heap_size_used_bytes', 'V8 heap in use, in bytes.', 'gauge');
  m.declare('nodejs_external_memory_bytes', 'Memory of C++ objects bound to JavaScript objects (buffers included), in bytes.', 'gauge');
  m.declare('nodejs_eventloop_lag_seconds', 'Event-loop lag when scraped: how late a setImmediate callback ran, in seconds.', 'gauge');
  m.declare('nodejs_eventloop_lag_p99_seconds', 'The 99th percentile of event-loop delay since the previous scrape, in seconds.', 'gauge');
  m.declare('nodejs_eventloop_lag_max_seconds', 'The largest event-loop delay since the previous scrape, in seconds.', 'gauge');
}

/** Reads the process at each scrape; the returned stop() ends the event-loop delay sampling. */
export function collectProcess(m: Metrics): () => void {
  declareProcess(m);
  const delay = monitorEventLoopDelay({ resolution: 20 });
  delay.enable();
  const startSeconds = Math.round((Date.now() / 1000 - process.uptime()) * 1000) / 1000;
  m.collect(async () => {
    const cpu = process.cpuUsage();
    m.set('process_cpu_user_seconds_total', {}, cpu.user / 1e6);
    m.set('process_cpu_system_seconds_total', {}, cpu.system / 1e6);
    m.set('process_cpu_seconds_total', {}, (cpu.user + cpu.system) / 1e6);
    m.set('process_start_time_seconds', {}, startSeconds);
    const mem = process.memoryUsage();
    m.set('process_resident_memory_bytes', {}, mem.rss);
    m.set('nodejs_heap_size_total_bytes', {}, mem.heapTotal);
    m.set('nodejs_heap_size_used_bytes', {}, mem.heapUsed);
    m.set('nodejs_external_memory_bytes', {}, mem.external);
    const fds = openFds();
    if (fds !== undefined) m.set('process_open_fds', {}, fds);
    const max = maxFds();
    if (max !== undefined) m.set('process_max_fds', {}, max);
    // The histogram's values are nanoseconds; a window with no sample reads 0, not its NaN mean.
    m.set('nodejs_eventloop_lag_p99_seconds', {}, delay.count > 0 ? delay.percentile(99) / 1e9 : 0);
    m.set('nodejs_eventloop_lag_max_seconds', {}, delay.count > 0 ? delay.max / 1e9 : 0);
    delay.reset();
    m.set('nodejs_eventloop_lag_seconds', {}, await immediateLag());
  });
  return () => delay.disable();
}

function immediateLag(): Promise<number> {
  const t0 = process.hrtime.bigint();
  return new Promise((resolve) => setImmediate(() => resolve(Number(process.hrtime.bigint() - t0) / 1e9)));
}

/** Open descriptors where /proc says (Linux); elsewhere the family has no series. */
function openFds(): number | undefined {
  try {
    return fs.readdirSync('/proc/self/fd').length - 1; // the readdir's own descriptor
  } catch {
    return undefined;
  }
}

function maxFds(): number | undefined {
  try {
    const line = /^Max open files\s+(\d+)/m.exec(fs.readFileSync('/proc/self/limits', 'utf8'));
    return line ? Number(line[1]) : undefined;
  } catch {
    return undefined;
  }
}

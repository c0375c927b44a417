/**
 * openBrig: the one way every face — the library, the CLI, MCP, the console — gets a Brig.
 *
 *   auto   (default) the daemon on $BRIG_HOME/brig.sock when one answers, else `fallback`
 *   daemon only the daemon (daemon_unavailable otherwise)
 *   local  a supervisor in this process over the home's parts (daemon/open.ts)
 *   read   the run records on disk, read-only; drill-in and the operator over the home's files
 *
 * Light on purpose: the daemon's Brig is client/ (protocol types and node:net); the local and
 * read parts load only when chosen, and the read view loads its drill-in and operator parts
 * on their first use — `brig list` on disk reads JSON and nothing else.
 */
import { daemonBrig, ApiClient, readOnlyBrig } from './client/index.js';
import { envOrProcess, homeFrom, runsDirFor, socketPathFor } from './config/paths.js';
import { BrigError, type ApiCaller, type Brig, type OperatorSurface, type RefSurface } from './protocol/index.js';
import type { LocalOptions } from './daemon/index.js';
import { mark } from './util/timing.js';

export interface OpenBrigOptions extends LocalOptions {
  mode?: 'auto' | 'daemon' | 'local' | 'read';
  /** What `auto` falls back to when no daemon answers (default `local`). */
  fallback?: 'local' | 'read';
  /** The face calling, named to the daemon on each request (default `library`). */
  caller?: ApiCaller;
}

export async function openBrig(o: OpenBrigOptions = {}): Promise<Brig> {
  const env = envOrProcess(o.env);
  const home = o.home ?? homeFrom(env);
  const mode = o.mode ?? 'auto';
  if (mode === 'auto' || mode === 'daemon') {
    const api = new ApiClient(socketPathFor(home), o.caller);
    const up = await api.probe();
    mark(up ? 'open: daemon answers' : 'open: no daemon');
    if (up) return daemonBrig(api);
    if (mode === 'daemon') throw new BrigError('daemon_unavailable', `no daemon answers on ${socketPathFor(home)}`);
  }
  const local = mode === 'local' || (mode === 'auto' && (o.fallback ?? 'local') === 'local');
  if (local) {
    // The disk tools' helper (util/spawner.ts) starts now, while this process is small (a fork
    // costs by its size) and while the supervisor's modules load: a one-shot's first disk does
    // not wait for node to start. One the composition does not use ends with this process.
    // Imported here, not at the top: the thin path (light.ts) loads no child_process.
    (await import('./util/spawner.js')).spawner.prestart();
    const m = await import('./daemon/index.js');
    mark('open: supervisor modules loaded');
    const b = await m.openLocal({ ...o, env, home });
    mark('open: local supervisor started');
    return b;
  }
  return readBrig(env, home);
}

/** The records on disk; the drill-in and operator parts are composed on their first use. */
function readBrig(env: NodeJS.ProcessEnv, home: string): Brig {
  let parts: Promise<{ refs: RefSurface; operator: OperatorSurface; close(): Promise<void> }> | undefined;
  const load = () => (parts ??= import('./daemon/index.js').then((m) => m.openReadParts({ env, home })));
  const refs: RefSurface = {
    list: async (...a) => (await load()).refs.list(...a),
    manifest: async (...a) => (await load()).refs.manifest(...a),
    read: async (...a) => (await load()).refs.read(...a),
    grep: async (...a) => (await load()).refs.grep(...a),
    jq: async (...a) => (await load()).refs.jq(...a),
    sql: async (...a) => (await load()).refs.sql(...a),
    jsonpath: async (...a) => (await load()).refs.jsonpath(...a),
    result: async (...a) => (await load()).refs.result(...a),
    peek: async (...a) => (await load()).refs.peek(...a),
  };
  const operator: OperatorSurface = {
    leases: {
      list: async () => (await load()).operator.leases.list(),
      show: async (id) => (await load()).operator.leases.show(id),
      revoke: async (id, reason) => (await load()).operator.leases.revoke(id, reason),
    },
    audit: {
      verify: async () => (await load()).operator.audit.verify(),
      query: async (sql, maxRows) => (await load()).operator.audit.query(sql, maxRows),
    },
    doctor: async (d) => (await load()).operator.doctor(d),
    fleet: async (f) => (await load()).operator.fleet(f),
    admission: {
      status: async () => (await load()).operator.admission.status(),
      pause: async (c) => (await load()).operator.admission.pause(c),
      resume: async (c) => (await load()).operator.admission.resume(c),
    },
  };
  return readOnlyBrig(runsDirFor(home), refs, operator, async () => {
    if (parts) await (await parts).close();
  });
}

/**
 * The operator surface over the daemon's API: the daemon's own lease store (a revoke ends
 * its runs at once), its ledger, its doctor and its fleet roll-up. Refusals arrive as the
 * BrigError the daemon decided.
 */
import { ok, type OperatorSurface, type Result } from '../protocol/index.js';
import type { ApiClient } from './api-client.js';

function value<T>(r: Result<T>): T {
  if (!r.ok) throw r.error;
  return r.value;
}

export function apiOperator(api: ApiClient): OperatorSurface {
  return {
    leases: {
      list: async () => value(await api.route('listLeases')),
      show: (id) => api.route('getLease', { params: { lease: id } }),
      async revoke(id, reason) {
        const r = await api.route('revokeLease', { params: { lease: id }, input: { confirm: true, ...(reason !== undefined ? { reason } : {}) } });
        return r.ok ? ok(r.value.revoked) : r;
      },
    },
    audit: {
      verify: async () => value(await api.route('auditVerify')),
      query: (sql, maxRows) => api.route('auditQuery', { input: { sql, ...(maxRows !== undefined ? { maxRows } : {}) } }),
    },
    doctor: async (o = {}) => value(await api.route('doctor', { input: o.build ? { build: true } : {} })).checks,
    admission: {
      status: async () => value(await api.route('admissionStatus')).admission,
      async pause(c = {}) {
        const r = await api.route('admissionPause', { input: c });
        return r.ok ? ok(r.value.admission) : r;
      },
      async resume(c = {}) {
        const r = await api.route('admissionResume', { input: c });
        return r.ok ? ok(r.value.admission) : r;
      },
    },
    fleet: async (o) => value(await api.route('fleet', { input: { since: `${o.sinceMinutes}m`, ...(o.top !== undefined ? { top: o.top } : {}) } })).fleet,
  };
}

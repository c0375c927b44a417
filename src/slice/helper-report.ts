/**
 * What a DuckDB helper actually runs with, for `brig doctor`: one helper is started the way
 * the pool starts them and read back from the kernel (/proc/<pid>/status and limits), not
 * from the pool's settings.
 */
import fs from 'node:fs';
import { DuckdbHelperPool } from './duckdb-pool.js';
import { privilegeLeft } from './helper-isolation.js';

export interface HelperReport {
  isolated: boolean;
  /** Why its credentials are not an isolated helper's (uid, gid, a capability), or null. */
  privilegeLeft: string | null;
  uid: number;
  capEff: string;
  /** RLIMIT_AS and RLIMIT_CPU as /proc/<pid>/limits shows them (soft), or null when unlimited. */
  addressSpaceBytes: number | null;
  cpuSeconds: number | null;
}

function softLimit(limits: string, name: string): number | null {
  const line = limits.split('\n').find((l) => l.startsWith(name));
  const soft = line?.slice(name.length).trim().split(/\s+/)[0];
  return soft === undefined || soft === 'unlimited' ? null : Number(soft);
}

export async function reportHelper(): Promise<HelperReport> {
  const pool = new DuckdbHelperPool({ size: 1 });
  try {
    await pool.warm();
    const h = pool.helpers()[0];
    if (!h) throw new Error('the helper did not start');
    const limits = fs.readFileSync(`/proc/${h.pid}/limits`, 'utf8');
    return {
      isolated: h.isolated,
      privilegeLeft: h.isolated ? (privilegeLeft(h.self) ?? null) : 'not isolated',
      uid: h.self.uid[1] ?? h.self.uid[0] ?? -1,
      capEff: h.self.capEff,
      addressSpaceBytes: softLimit(limits, 'Max address space'),
      cpuSeconds: softLimit(limits, 'Max cpu time'),
    };
  } finally {
    await pool.close();
  }
}

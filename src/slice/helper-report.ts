/**
 * What a DuckDB helper and grep/jq actually run with, for `brig doctor`: one helper is started
 * the way the pool starts them and read back from the kernel (/proc/<pid>/status and limits),
 * and grep is run through the tools' own wrapper reading its /proc/self — not the settings.
 */
import fs from 'node:fs';
import type { HelperFacts, ToolFacts } from '../protocol/index.js';
import { DuckdbHelperPool } from './duckdb-pool.js';
import { privilegeLeft } from './helper-isolation.js';
import { SLICE_DEFAULTS } from './slicer.js';
import { ToolRunner } from './tool-runner.js';

function softLimit(limits: string, name: string): number | null {
  const line = limits.split('\n').find((l) => l.startsWith(name));
  const soft = line?.slice(name.length).trim().split(/\s+/)[0];
  return soft === undefined || soft === 'unlimited' ? null : Number(soft);
}

export async function reportHelper(): Promise<HelperFacts> {
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

export async function reportTools(): Promise<ToolFacts> {
  const runner = new ToolRunner();
  try {
    const p = await runner.probe(SLICE_DEFAULTS.toolMemoryBytes);
    const left = !p.isolated
      ? 'not isolated'
      : (privilegeLeft(p.self) ?? (/^0+$/.test(p.self.capBnd) ? undefined : `CapBnd ${p.self.capBnd}`) ?? (p.interfaces.some((i) => i !== 'lo') ? `network ${p.interfaces.join(' ')}` : undefined) ?? (p.writable.length ? `${p.writable.join(' ')} writable` : undefined));
    return {
      isolated: p.isolated,
      privilegeLeft: left ?? null,
      uid: p.self.uid[1] ?? p.self.uid[0] ?? -1,
      capEff: p.self.capEff,
      interfaces: p.interfaces,
      addressSpaceBytes: p.addressSpaceBytes,
      fallback: runner.lastStartError ?? null,
    };
  } finally {
    await runner.close();
  }
}

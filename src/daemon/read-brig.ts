/**
 * A Brig on the run records on disk, read-only, for a CLI command with no daemon to talk to:
 * list, get and wait read the records (no engine, no ledger, nothing heavy loaded); the
 * drill-in surface loads the result store and the slicer on its first use only.
 */
import { runsDirFor, homeFrom } from '../config/paths.js';
import { rollUpSavings } from '../results/savings.js';
import { ReadOnlyRuns } from '../runs/read-only.js';
import { brigOf } from '../runs/brig.js';
import type { Brig, RefSurface } from '../runs/index.js';

export function readBrig(env: NodeJS.ProcessEnv): Brig {
  const runs = new ReadOnlyRuns(runsDirFor(homeFrom(env)));
  let full: Promise<Brig> | undefined;
  const heavy = () => (full ??= import('./create-brig.js').then((m) => m.createBrig({ env, mode: 'read' })));
  const refs: RefSurface = {
    list: async (...a) => (await heavy()).refs.list(...a),
    manifest: async (...a) => (await heavy()).refs.manifest(...a),
    read: async (...a) => (await heavy()).refs.read(...a),
    grep: async (...a) => (await heavy()).refs.grep(...a),
    jq: async (...a) => (await heavy()).refs.jq(...a),
    sql: async (...a) => (await heavy()).refs.sql(...a),
    jsonpath: async (...a) => (await heavy()).refs.jsonpath(...a),
    result: async (...a) => (await heavy()).refs.result(...a),
    peek: async (...a) => (await heavy()).refs.peek(...a),
    rollUp: (list) => rollUpSavings(list),
  };
  // Closing it closes the records view and, when a slice loaded one, the full read view.
  return brigOf(runs, 'read', refs, async () => {
    if (full) await (await full).close();
  });
}

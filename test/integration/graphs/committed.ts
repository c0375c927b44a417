/** A graph node's committed out/ on disk, for tests that look at what a node wrote from inside its jail. */
import assert from 'node:assert/strict';
import fs from 'node:fs';
import path from 'node:path';
import type { GraphRecord } from '../../../src/protocol/index.js';

/** The committed out/ of a node (an operator graph's nodes are root runs: results/<runId>/<runId>/out). */
export function outOf(home: string, rec: GraphRecord, node: string): string {
  const runId = rec.nodes.find((n) => n.id === node)!.committedRunId!;
  assert.ok(runId, `${node} committed`);
  return path.join(home, 'results', runId, runId, 'out');
}

export const read = (dir: string, f: string) => fs.readFileSync(path.join(dir, f), 'utf8');

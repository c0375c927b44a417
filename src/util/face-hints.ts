/**
 * A hint in the language of the face that shows it. The catalog's hints and most hints written
 * where an error is raised speak the CLI's words (`brig list`, `--confirm`); an MCP client
 * cannot run `brig list` and an HTTP client has no flags. Each face other than the CLI swaps
 * such a hint for its own, by code (its kind's when the code has none) — the message, the code
 * and the data stay as they were.
 */
import type { BrigError, ErrorCode, ErrorKind } from '../protocol/index.js';

export type HintFace = 'cli' | 'http' | 'mcp';

/** A hint that names a brig command or a command-line flag. */
const CLI_WORDS = /`brig [a-z]|(?:^|[\s`(])--[a-z][a-z-]+/;

const HTTP: Partial<Record<ErrorCode, string>> = {
  invalid_input: 'Check the request against GET /v1/openapi.json.',
  invalid_policy: 'Fix the policy file; the message names the key and the line.',
  not_running: 'The run is not running; GET /v1/runs/{run} shows its status.',
  run_not_found: 'A run id looks like r-…; GET /v1/runs lists the known runs.',
  lease_not_found: 'GET /v1/leases lists the known leases.',
  ref_not_found: 'A ref id looks like ref_…; GET /v1/runs/{run}/refs lists the refs of a run.',
  graph_not_found: 'A graph id looks like g-…; GET /v1/graphs lists the known graphs.',
  daemon_running: 'A daemon already serves this BRIG_HOME: use its socket, or stop it first.',
  child_failed: 'The child exited non-zero or ran out of memory; its stderr tail (GET /v1/runs/{run}/result) says why.',
  replay_unavailable: 'Only an ended agent run whose recorded model replies are still on disk can be replayed.',
  resume_unavailable: 'Only a timed-out run with a checkpoint and its pinned script can be resumed.',
  storage_full: "Free space on the file system of the daemon's home (GET /v1/doctor shows it); it admits runs again once it has more than its reserve free, and writes what it held meanwhile.",
  internal: "This is a bug in brig; the daemon's log holds the details (X-Request-Id names the request), POST /v1/audit/query the events around it.",
};

const MCP: Partial<Record<ErrorCode, string>> = {
  invalid_input: "Check the call against the tool's input schema (tools/list).",
  not_running: 'Call `status` to see where the run is, or `wait` for it to end.',
  run_not_found: 'A run id looks like r-…; call `list` to see the known runs.',
  ref_not_found: 'A ref id looks like ref_…; call `ref_list` with the run id to see its refs.',
  lease_not_found: 'Call `explain` with the run id to see its lease.',
  daemon_unavailable: "The operator starts the daemon on this host; this server's tools answer without one too.",
  child_failed: 'The child exited non-zero or ran out of memory; `result` with its run id shows its stderr tail.',
  storage_full: "The daemon's home is out of space: tell the operator; it admits runs again once space returns.",
  internal: "This is a bug in brig; the operator finds the details in the daemon's log.",
};

/** Where a face has no words for a code: its kind's. */
const BY_KIND: Record<Exclude<HintFace, 'cli'>, Record<ErrorKind, string>> = {
  http: {
    invalid: 'Check the request against GET /v1/openapi.json.',
    denied: 'The lease or a policy refuses this; the message says which.',
    not_found: 'Check the id; the list routes (GET /v1/runs, /v1/leases, /v1/graphs) name the known ones.',
    conflict: 'The thing is in the wrong state for this; GET it to see its state.',
    limit: 'A limit was hit; the message names it.',
    unavailable: 'A dependency cannot serve now; GET /v1/doctor checks the host.',
    corrupt: 'Stored state failed its integrity check; GET /v1/audit/verify names the first bad line.',
    internal: HTTP.internal!,
  },
  mcp: {
    invalid: "Check the call against the tool's input schema.",
    denied: 'The lease or a policy refuses this; the message says which.',
    not_found: 'Check the id: `list` and `ref_list` name the known ones.',
    conflict: 'Call `status` to see the state it is in.',
    limit: 'A limit was hit; the message names it.',
    unavailable: 'A dependency cannot serve now; tell the operator.',
    corrupt: 'Stored state failed its integrity check; tell the operator.',
    internal: MCP.internal!,
  },
};

/** The hint `e` shows on `face`: its own when it speaks no CLI words, else the face's. */
export function hintFor(e: BrigError, face: HintFace): string {
  if (face === 'cli' || !CLI_WORDS.test(e.hint)) return e.hint;
  return (face === 'http' ? HTTP : MCP)[e.code] ?? BY_KIND[face][e.kind];
}

/** True when a hint names a brig command or flag (what only the CLI face may show). */
export function speaksCli(hint: string): boolean {
  return CLI_WORDS.test(hint);
}

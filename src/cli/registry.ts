import type { Command, CommandTable, Entry, Section } from './command.js';

export { SECTIONS, groupMembers, type Entry, type Section } from './command.js';

/** Groups: a word that only prefixes subcommands (`brig ref --help` lists them). */
export const GROUPS: Record<string, { summary: string; section: Section }> = {
  agents: { summary: 'The agent specs `brig spawn --agent` runs: list them, show one and the tools it would get.', section: 'runs' },
  ref: { summary: "Drill into a run's ResultRefs: list, read, grep, jq, sql, jsonpath.", section: 'results' },
  graph: { summary: 'Execution graphs: define, run, status, wait, cancel, approve, reject (each node attempt an ordinary jailed run).', section: 'runs' },
  lease: { summary: 'Inspect and revoke leases: what each run may do.', section: 'host' },
  admission: { summary: 'Pause and resume admission (running children go on, new spawns queue), and see its state.', section: 'host' },
  audit: { summary: 'Verify and query the hash-chained ledger.', section: 'host' },
  policy: { summary: 'Validate lease policy files and explain their profiles.', section: 'host' },
  image: { summary: 'Build the child image and the toolbox image.', section: 'host' },
  model: { summary: 'The local model brig serves itself: pull (or register) a GGUF.', section: 'host' },
};

/**
 * Every command, loaded lazily so `brig --help` does not load dockerode or DuckDB.
 * Add a line per command; the key is what the user types (`lease list`).
 */
export const COMMANDS: Record<string, Entry> = {
  spawn: {
    section: 'runs',
    summary: 'Run a child (a command, a script or an agent) in a fresh hardened jail through the supervisor.',
    load: async () => (await import('./commands/spawn.js')).default,
  },
  list: { section: 'runs', summary: 'List runs: status, end reason, depth, steps, elapsed, parent.', load: async () => (await import('./commands/list.js')).default },
  wait: { section: 'runs', summary: 'Wait for runs to end; shows live progress on a terminal.', load: async () => (await import('./commands/wait.js')).default },
  kill: { section: 'runs', summary: 'Kill a running child (ends `killed` by operator; its in-flight work is discarded).', load: async () => (await import('./commands/kill.js')).default },
  steer: { section: 'runs', summary: 'Send a steering message to a running child (inject at its next step, or kill + respawn).', load: async () => (await import('./commands/steer.js')).default },
  send: { section: 'runs', summary: 'Send a message to a running agent child; --mode wait prints its next reply, ping-pong one round of a conversation.', load: async () => (await import('./commands/send.js')).default },
  history: { section: 'runs', summary: "A bounded page of a run's transcript: what its model was sent and answered (on explicit request only).", load: async () => (await import('./commands/history.js')).default },
  replay: { section: 'runs', summary: 'Re-run an ended agent run against its recorded model replies in a fresh jail; say where it diverges.', load: async () => (await import('./commands/replay.js')).default },
  resume: { section: 'runs', summary: 'Continue an ended run in a new one: a timed-out script from its checkpoint, a cut-short agent from its conversation.', load: async () => (await import('./commands/resume.js')).default },
  events: {
    section: 'runs',
    summary: "Follow the daemon's content-free event stream (spawned, progress, completed, failed, lifecycle_ended).",
    load: async () => (await import('./commands/events.js')).default,
  },
  'graph define': {
    section: 'runs',
    summary: 'Check a graph spec (YAML or JSON) without running it: its topological order and nodes, or every refusal with its line.',
    load: async () => (await import('./commands/graph-define.js')).default,
  },
  'graph run': {
    section: 'runs',
    summary: 'Run a graph: each node attempt an ordinary jailed run; prints its id and order at once, then (with --wait, or without a daemon) its end envelope.',
    load: async () => (await import('./commands/graph-run.js')).default,
  },
  'graph status': {
    section: 'runs',
    summary: 'A graph: each node, its state, attempts and run; once ended its envelope. Without GRAPH: every graph on record.',
    load: async () => (await import('./commands/graph-status.js')).default,
  },
  'graph wait': { section: 'runs', summary: 'Wait for a graph to end; print its envelope (≤ 4 KiB: a line per node, the manifest ref).', load: async () => (await import('./commands/graph-wait.js')).default },
  'graph approve': { section: 'runs', summary: "Approve a waiting gate of a running graph (an operator decision, ledgered with who, when and the note's hash).", load: async () => (await import('./commands/graph-approve.js')).default },
  'graph reject': { section: 'runs', summary: "Reject a waiting gate of a running graph (an operator decision, ledgered with who, when and the note's hash).", load: async () => (await import('./commands/graph-reject.js')).default },
  'graph explain': { section: 'runs', summary: 'A graph for an operator: per node its attempts and end reasons, why it was skipped (which when failed), why it waited (dependencies, a slot, a gate), its retries and the lease each attempt got.', load: async () => (await import('./commands/graph-explain.js')).default },
  'graph cancel': { section: 'runs', summary: "Cancel a running graph: its running nodes are killed (by operator), the rest end skipped.", load: async () => (await import('./commands/graph-cancel.js')).default },
  'agents list': {
    section: 'runs',
    summary: "List the agent specs `brig spawn --agent` can run: name, role, source (this home's or shipped), description.",
    load: async () => (await import('./commands/agents-list.js')).default,
  },
  'agents show': {
    section: 'runs',
    summary: "Show one agent spec: its frontmatter, its instructions, and the tools it would be offered under this home's policy.",
    load: async () => (await import('./commands/agents-show.js')).default,
  },
  result: {
    section: 'results',
    summary: 'The envelope a coordinator receives for a run (cast once, then kept): condensed result, metrics, one line per ResultRef.',
    load: async () => (await import('./commands/result.js')).default,
  },
  apply: { section: 'results', summary: "Write a run's change to its repository (--repo) as a new branch; the working tree and every existing branch are left as they are.", load: async () => (await import('./commands/apply.js')).default },
  explain: { section: 'results', summary: 'A run, its lease decisions, its ResultRefs and its estimated context savings.', load: async () => (await import('./commands/result-explain.js')).default },
  'ref list': { section: 'results', summary: 'List the ResultRefs of a run: id, kind, size, rows, path.', load: async () => (await import('./commands/ref-list.js')).default },
  'ref read': {
    section: 'results',
    summary: 'Read a slice of a ref by line (1-based, a seek via the line index) or by byte offset.',
    load: async () => (await import('./commands/ref-read.js')).default,
  },
  'ref grep': { section: 'results', summary: 'Lines of a ref matching an extended regex (GNU grep, empty environment, timeout).', load: async () => (await import('./commands/ref-grep.js')).default },
  'ref jq': { section: 'results', summary: 'Run a jq filter over a json/jsonl ref (Debian jq, empty environment, timeout, output cap).', load: async () => (await import('./commands/ref-jq.js')).default },
  'ref sql': { section: 'results', summary: 'One SELECT over the view `ref` in the locked DuckDB helper.', load: async () => (await import('./commands/ref-sql.js')).default },
  'ref jsonpath': {
    section: 'results',
    summary: "Extract with a strict JSONPath ($, .name, ['name'], [n], [*]) compiled to DuckDB json_extract.",
    load: async () => (await import('./commands/ref-jsonpath.js')).default,
  },
  mcp: { section: 'host', summary: 'Serve brig to an MCP client (Claude Code, …) over stdio: spawn, wait, result and ref_* tools; ResultRefs as resources.', load: async () => (await import('./commands/mcp.js')).default },
  serve: { section: 'host', summary: 'Run the supervisor as a daemon on $BRIG_HOME/brig.sock (HTTP API /v1, SSE events).', load: async () => (await import('./commands/serve.js')).default },
  doctor: {
    section: 'host',
    summary: 'Check that this host can give the hardened jail: engine, limits, child image, and a probe from inside a real jail.',
    load: async () => (await import('./commands/doctor.js')).default,
  },
  'image build': {
    section: 'host',
    summary: 'Build the child image FROM scratch (node + its libraries, busybox-static, the child runtime); a present tag is kept.',
    load: async () => (await import('./commands/image-build.js')).default,
  },
  'image toolbox': {
    section: 'host',
    summary: "Build the toolbox image (Debian 12 with git, python3, build-essential, node, ripgrep, jq, …) from Debian's packages with mmdebstrap; a present tag is kept.",
    load: async () => (await import('./commands/image-toolbox.js')).default,
  },
  'model pull': {
    section: 'host',
    summary: 'Get the default local model (SmolLM2-135M-Instruct, sha256-checked) into $BRIG_HOME/models/ and register it, or register a GGUF you have.',
    load: async () => (await import('./commands/model-pull.js')).default,
  },
  'lease list': { section: 'host', summary: 'List lease records: id, run, parent, depth, profile, caps, state.', load: async () => (await import('./commands/lease-list.js')).default },
  'lease show': { section: 'host', summary: 'Show one lease: caps, limits, requested vs granted vs refused, lineage up to the root.', load: async () => (await import('./commands/lease-show.js')).default },
  'lease revoke': { section: 'host', summary: 'Revoke a lease and its whole subtree (their broker calls are refused from now on).', load: async () => (await import('./commands/lease-revoke.js')).default },
  'admission pause': {
    section: 'host',
    summary: "Pause admission: running children go on, new spawns wait in the queue (refused `admission_paused` when it is full); kept across a daemon restart, ledgered with who, when and the reason's hash.",
    load: async () => (await import('./commands/admission-pause.js')).default,
  },
  'admission resume': { section: 'host', summary: "Resume admission: the runs queued while paused start in order; ledgered with who, when and the reason's hash.", load: async () => (await import('./commands/admission-resume.js')).default },
  'admission status': { section: 'host', summary: 'Whether admission is paused, since when and by whom, and how many spawns wait in the queue.', load: async () => (await import('./commands/admission-status.js')).default },
  'audit verify': { section: 'host', summary: 'Check the hash chain of every ledger segment; names the first bad line.', load: async () => (await import('./commands/audit-verify.js')).default },
  'audit query': {
    section: 'host',
    summary: 'Run one read-only SQL SELECT over the ledger (view `ledger`), locked down like the slicer.',
    load: async () => (await import('./commands/audit-query.js')).default,
  },
  'policy check': {
    section: 'host',
    summary: 'Validate policy files and explain what each profile may do (default: every file in policies/).',
    load: async () => (await import('./commands/policy-check.js')).default,
  },
  help: { section: 'cli', summary: 'Show help for brig, a command or a group (`brig help lease list`).', load: async () => (await import('./commands/help.js')).helpCommand(TABLE) },
  fleet: { section: 'host', summary: 'Roll up a window across every run tree: ends, kills, refusals, egress, tokens and cost, what stayed out of context, top trees.', load: async () => (await import('./commands/fleet.js')).default },
  version: { section: 'cli', summary: "Print brig's version.", load: async () => (await import('./commands/version.js')).default },
  completion: { section: 'cli', summary: 'Print a shell completion script (bash, zsh or fish) for every command, flag and id.', load: async () => (await import('./commands/completion.js')).completionCommand(TABLE) },
};

/** The table help and completion are handed (they list it; they do not import it). */
export const TABLE: CommandTable = { commands: COMMANDS, groups: GROUPS };

/** Loads every command (for completion and the help tests; `brig --help` needs none). */
export async function loadAll(): Promise<Command[]> {
  return Promise.all(Object.values(COMMANDS).map((e) => e.load()));
}

/**
 * The requirement ids: each invariant of docs/architecture.md (INV-1 … INV-9) split into its
 * clauses, one line each. A test that proves a clause says so on the line right above it:
 *
 *   // req: jail:network-none jail:read-only-root
 *   test('[INV-2] from inside a real jail: …', …)
 *
 * and carries the clause's `[INV-n]` in its name. test/arch/requirements.test.ts fails when an
 * id here is cited by no test, when a test cites an id not here, or when a citation is not on
 * a test of its invariant. Cite a clause only in a test whose assertions prove it.
 */

export type Inv = `INV-${1 | 2 | 3 | 4 | 5 | 6 | 7 | 8 | 9}`;

export const REQUIREMENTS: Readonly<Record<string, { inv: Inv; text: string }>> = {
  // INV-1 — a lease only narrows.
  'lease:caps-intersect': { inv: 'INV-1', text: "a child's capabilities are its parent's ∩ what it asked for (∩ its profile); the rest is refused with a reason" },
  'lease:limits-min': { inv: 'INV-1', text: 'every numeric limit of a child is the smaller of its parent’s and what it asked for; limits never grow down a chain' },
  'lease:posture-never-loosens': { inv: 'INV-1', text: 'network, filesystem and user posture never loosen from parent to child; a looser request is refused' },
  'lease:steer-not-grant': { inv: 'INV-1', text: 'a steer is a message, never a grant: the steered (or respawned) run keeps the lease it had' },
  'lease:graph-nodes-within-caller': { inv: 'INV-1', text: "a graph an agent runs (graph_run, capability `graph`) is one child of it: each node's lease is the caller's ∩ the node's request at its depth + 1, running nodes ≤ its children cap; no graph without `graph`" },
  'lease:egress-narrows': { inv: 'INV-1', text: 'egress only narrows: each granted rule fits inside one parent rule, budgets never grow, and every connection a child is allowed its ancestors are allowed' },
  'lease:egress-never-inherited': { inv: 'INV-1', text: 'egress is never inherited: a child without an egress ask holds no rule, no net.egress and posture network none' },
  'lease:enforced': { inv: 'INV-1', text: 'what a lease does not grant is refused where it would be used: each broker method, agent tool, child kind and jail input' },
  'lease:tool-surface-binds': { inv: 'INV-1', text: "an agent run's bearer calls only its loop's methods and its offered tools' methods: any other is refused tool_not_offered, though its lease (the same with or without the spec's tools) would allow it" },

  // INV-2 — one fresh hardened container per child.
  'jail:network-none': { inv: 'INV-2', text: 'no network: loopback only, no route out, the host (its loopback and its own addresses) unreachable' },
  'jail:egress-gated': { inv: 'INV-2', text: "a lease with egress rules keeps NetworkMode none: its only way out is the run's egress socket, where the gate reaches the hosts its rules name before any DNS and refuses everything else (other names, IP literals, private/metadata answers, another SNI, a redirect's private target)" },
  'jail:egress-inspect': { inv: 'INV-2', text: "an inspect rule's TLS is terminated by the gate with a leaf of the run's own CA (its key only in the supervisor's memory, ALPN http/1.1 only), every request on it is decided (Host, method, path prefix) before it is re-originated over TLS verified to the host" },
  'jail:egress-credentials': { inv: 'INV-2', text: "an operator's credential reaches only its binding's hosts and paths: the secret never enters the jail, the ledger, a log or a record, and nothing bound is carried to another host" },
  'jail:read-only-root': { inv: 'INV-2', text: 'the root filesystem is read-only (a write to / fails EROFS)' },
  'jail:no-caps': { inv: 'INV-2', text: 'no capabilities: CapEff and CapBnd are zero' },
  'jail:runtime-unreadable': { inv: 'INV-2', text: "nothing an agent's tools start can read the in-jail runtime: its memory, environment and fds refuse (EACCES), the bearer file is gone before a tool runs" },
  'cluster:pod-hardened': { inv: 'INV-2', text: "on brig's test cluster a pod is admitted only under PodSecurity restricted, and the hardened pod runs with CapEff 0, NoNewPrivs 1, seccomp filtering, a read-only root, uid 65534 and no service-account token" },
  'kube:pod-verified': { inv: 'INV-2', text: "on the kubernetes driver a run's pod starts only after its read-back verified (gated until then); its inputs, a run's token among them, go in by exec and never into the pod object; its end is the kubelet's account of the child's container, whose PID namespace ends with it" },
  'kube:egress-gated': { inv: 'INV-2', text: "on the kubernetes driver a pod reaches a host only through the run's egress gate — the in-pod relay on the pod's loopback, the pod's egress.sock relayed over the exec stream to the run's host socket — which decides every connection; a tls: inspect rule's run CA is in the pod before its program starts" },
  'kube:policy-enforced': { inv: 'INV-2', text: "on brig's test cluster NetworkPolicy is enforced (kube-router): where nothing else holds pods apart, a pod reaches another only where a policy allows it and brig's default-deny holds the rest; brig doctor refuses a cluster whose network ignores NetworkPolicy, or whose namespace holds a policy beside brig's" },
  'kube:pool-claimed': { inv: 'INV-2', text: "on the kubernetes driver a warm-pool pod holds nothing of any run (argv, environment, inputs, processes) until a run claims it, is verified again at claim (a changed pod is refused), serves one run, and its end is its whole process tree's: nothing the child left runs after it" },
  'cluster:no-route-out': { inv: 'INV-2', text: "on brig's test cluster a pod reaches nothing but itself: not the node address, a Service VIP, another pod (isolated bridge ports) or the host over IPv6 link-local" },
  'jail:no-new-privs': { inv: 'INV-2', text: 'no-new-privileges is set (NoNewPrivs 1): a set-uid binary gains nothing' },
  'jail:non-root': { inv: 'INV-2', text: 'the child runs as a non-root user and group' },
  'jail:pids-limit': { inv: 'INV-2', text: 'a pids limit is set in the cgroup and forks past it fail' },
  'jail:memory-limit': { inv: 'INV-2', text: 'a memory limit (and no swap past it) is set in the cgroup and enforced by the kernel' },
  'jail:cpu-limit': { inv: 'INV-2', text: 'a CPU quota is set in the cgroup' },
  'jail:seccomp': { inv: 'INV-2', text: "brig's seccomp filter is on: the syscalls it removes (io_uring, …) fail inside, what children use works" },
  'jail:no-engine-socket': { inv: 'INV-2', text: 'no engine socket inside the jail' },
  'jail:no-host-paths': { inv: 'INV-2', text: "no host path but the run's own broker socket directory and its artifacts, read-only; /workspace nosuid,nodev" },
  'jail:fresh': { inv: 'INV-2', text: 'one fresh container and workspace per child: nothing is reused (a leftover workspace of the same run is refused)' },
  'jail:verified': { inv: 'INV-2', text: "the engine's effective settings are read back and compared with the profile; any drift removes the container and refuses the run, never weakens it" },

  // INV-3 — only the envelope crosses back.
  'envelope:bounded': { inv: 'INV-3', text: 'what reaches the coordinator of a run is a bounded summary plus ResultRef handles (body, footer and slices all capped)' },
  'envelope:no-transcript': { inv: 'INV-3', text: "a child's transcript and whole outputs stay on disk behind handles: the coordinator's context grows by one bounded envelope per child" },
  'envelope:history-opt-in': { inv: 'INV-3', text: "a parent's history reaches a child only when asked for, bounded (none by default)" },

  // INV-4 — a child's output cannot land outside its ResultRefs.
  'results:no-symlink': { inv: 'INV-4', text: 'only regular files are collected: symbolic and hard links, devices and fifos are skipped, never followed' },
  'results:no-escape': { inv: 'INV-4', text: "no name lands outside the run's ref directory: `..`, absolute names, other roots and unsafe names are refused" },
  'results:caps-refuse': { inv: 'INV-4', text: 'per-file and per-run caps: what is over a cap is refused whole, never cut' },
  'results:atomic': { inv: 'INV-4', text: 'every write is temp + rename: a crash or a refusal leaves no half ref and no temp file' },
  'results:journal': { inv: 'INV-4', text: "a run's and its results' state files go through the home's journal: a write acknowledged durable is never older after a crash, a removal never comes back, a torn line is never replayed" },

  // INV-5 — slicing reads one ref and nothing else.
  'slice:one-ref': { inv: 'INV-5', text: 'a slice reads the one ref it names: no other file, no glob over its siblings' },
  'slice:descendants-only': { inv: 'INV-5', text: "through the broker a run slices only its descendants' refs; any other is answered as missing" },
  'slice:helper-locked': { inv: 'INV-5', text: 'the DuckDB helper: no external access, no extensions, configuration locked, its own namespaces and an empty environment' },
  'slice:helper-bounded': { inv: 'INV-5', text: 'a query is bounded in time: an over-time query is interrupted and its helper recycled' },
  'slice:select-only': { inv: 'INV-5', text: 'untrusted SQL runs only as one SELECT over the allowed table functions; anything else is refused' },
  'slice:jsonpath-compiled': { inv: 'INV-5', text: 'jsonpath goes through a closed grammar and compiles to json_extract' },
  'slice:tools-empty-env': { inv: 'INV-5', text: 'jq and grep run with an empty environment, a timeout and an output cap, isolated like the DuckDB helper where the host allows it' },

  // INV-6 — no secret enters a jail.
  'secrets:keys-stay': { inv: 'INV-6', text: 'model keys stay in the supervisor: never inside a jail, in an error, a log or a printed config; model calls go through the broker' },
  'secrets:env-from-nothing': { inv: 'INV-6', text: "a child's environment is built from nothing, not filtered from the supervisor's" },

  // INV-7 — events carry no content.
  'events:ledger-no-content': { inv: 'INV-7', text: 'the ledger holds ids, counts, enums and durations: never task text, model output, params or file contents' },
  'events:bus-no-content': { inv: 'INV-7', text: 'the event bus (progress, lifecycle, hooks) carries no content either' },

  // INV-8 — exactly one end reason per run.
  'end:one-reason': { inv: 'INV-8', text: 'every run ends exactly once, with one reason of the closed set (killed with killedBy); a second end is refused' },
  'end:released': { inv: 'INV-8', text: "after its end a run's container, volume, disk and socket are gone, on every path (crash and restart included)" },
  'end:output-kept': { inv: 'INV-8', text: 'what a run produced before its end (outputs, stdio, its value) is kept, killed or timed out included' },

  // INV-9 — limits are enforced, not only written down.
  'limits:within-parent': { inv: 'INV-9', text: "every rendered limit is positive and within the parent's: one below its floor is refused, never raised" },
  'limits:kernel-enforced': { inv: 'INV-9', text: 'the kernel enforces the rendered limits: the CPU quota, the workspace disk cap' },
  'limits:helper-os-caps': { inv: 'INV-9', text: 'the helpers (DuckDB, jq, grep) run under OS caps of their own: address space, CPU time, how many at once' },
  'limits:no-stall': { inv: 'INV-9', text: "one child's flood cannot stall the supervisor for the others: it is bounded, charged and cut" },
};

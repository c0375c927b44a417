#!/usr/bin/env bash
# `make demo` (after build, engine and images): check the host, then run one real child in a
# fresh hardened jail and show what came back. Later issues extend this into the full main job:
# each step is a function, so a step can be added or replaced without touching the others.
set -euo pipefail
cd "$(dirname "$0")/.."

BRIG=(node dist/cli/main.js)
export BRIG_HOME="${BRIG_HOME:-$(mktemp -d "${TMPDIR:-/tmp}/brig-demo.XXXXXX")}"

step() { printf '\n\033[1m== %s\033[0m\n' "$*"; }

# Step 1: can this host give the jail brig promises? (exits non-zero, and the demo stops, if not)
demo_doctor() {
  step "brig doctor — engine, image, and a probe from inside a real jail"
  "${BRIG[@]}" doctor
}

# Step 2: one child. It sees no network and a read-only root; it writes /workspace/out.
CHILD_JS='
const fs = require("node:fs"), os = require("node:os");
const report = { uid: process.getuid(), interfaces: Object.keys(os.networkInterfaces()), node: process.version };
try { fs.writeFileSync("/etc/x", "x"); report.rootWritable = true; } catch (e) { report.rootWritable = e.code; }
fs.writeFileSync("out/report.json", JSON.stringify(report, null, 2) + "\n");
fs.writeFileSync("out/squares.csv", "n,square\n" + [1, 2, 3, 4, 5].map((n) => n + "," + n * n).join("\n") + "\n");
console.log("child: wrote 2 files");
'
demo_child() {
  step "brig spawn --json -- node -e CHILD_JS   (a fresh jail: no network, read-only root, no caps)"
  local out
  out=$("${BRIG[@]}" spawn --json --memory 256 --timeout 60 -- node -e "$CHILD_JS")
  jq '{runId, exitCode, endReason, stdoutTail, stderrTail, outputs, outputDir}' <<<"$out"
  local dir
  dir=$(jq -r .outputDir <<<"$out")
  step "what came back, materialized on the host in $dir"
  for f in "$dir"/*; do
    printf -- '--- %s\n' "${f#"$dir"/}"
    cat "$f"
  done
}

# Step 3, the main job: a coordinator fans out script children over data each generates
# deterministically, receives only envelopes + ResultRef handles, answers a question by
# drilling in with sql and grep, and prints the context economy.
demo_main_job() {
  step "the main job — fan out, drill in, answer (examples/demo/coordinator.ts)"
  node --import tsx examples/demo/coordinator.ts
}

# Step 4: reference 000's worked example, Atlas: a coordinator agent delegating to two agents
# (a collector, a researcher handed the collector's file as a ResultRef), each tool loop in
# its own jail. By default a real 135M model brig serves itself (`make model` pulled it) first
# drives one agent child, and Atlas runs with a scripted stand-in on loopback (a model that
# small cannot coordinate); with BRIG_MODEL_BASE_URL set, that model drives Atlas; with
# BRIG_DEMO_MODEL=scripted, the stand-in alone. The screen says which.
demo_agent() {
  step "Atlas — a coordinator agent delegates to two agents, each in its own jail; model calls through the broker (examples/demo/agent.ts)"
  node --import tsx examples/demo/agent.ts
}

demo_doctor
case "${DEMO_STEPS:-main}" in
  all) demo_child; demo_main_job; demo_agent ;;
  child) demo_child ;;
  agent) demo_agent ;;
  main-only) demo_main_job ;;
  *) demo_main_job; demo_agent ;;
esac
step "done (BRIG_HOME=$BRIG_HOME)"

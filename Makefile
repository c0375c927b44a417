# brig — every target does its own set-up on a fresh Debian 12 machine (as root).
SHELL := /bin/bash
.DEFAULT_GOAL := help
NODE ?= node
BRIG := $(NODE) dist/cli/main.js
TEST_FILES = $(shell find test -name '*.test.ts' | sort)

.PHONY: help deps build engine images test test-unit demo bench soak typecheck clean

help:
	@echo "make demo   - set up everything, then run the main job"
	@echo "make test   - set up everything, then run all tests (real engine, real DuckDB)"
	@echo "make bench  - benchmarks against the raw floor"
	@echo "make soak   - a daemon under load, kills, steers and SIGKILL restarts; checks nothing was lost"

node_modules/.package-lock.json: package-lock.json
	npm ci --no-audit --no-fund
	@touch $@

deps: node_modules/.package-lock.json
	@bash scripts/host-deps.sh

build: deps
	npx tsc -p tsconfig.json

typecheck: deps
	npx tsc -p tsconfig.test.json --noEmit

engine:
	@bash scripts/engine-up.sh

images: build engine
	$(BRIG) image build

test: build typecheck engine images
	$(NODE) --import tsx --test --test-concurrency=1 --test-timeout=600000 $(TEST_FILES)

# Unit and architecture tests only: no engine needed.
test-unit: build
	$(NODE) --import tsx --test $(shell find test/unit test/arch -name '*.test.ts' | sort)

demo: build engine images
	bash scripts/demo.sh

# Each bench/*.bench.ts measures brig against its raw floor in the same run and prints ratios.
bench: build engine images
	@set -e; for f in $(sort $(wildcard bench/*.bench.ts)); do echo "== $$f"; $(NODE) --import tsx $$f; done

# Not part of `test`: 200 mixed children against a real daemon killed 3 times (bench/soak.ts).
soak: build engine images
	$(NODE) --import tsx bench/soak.ts

clean:
	rm -rf dist

#!/usr/bin/env bash
# What only the tests need on the host: Debian's chromium, for the console test. The test
# installs it itself when missing (test/helpers/chromium.ts); doing it here, before the timed
# tiers, keeps a fresh machine's apt-get out of the long tier's budget. Installs only what is
# missing; without root it says so and leaves the test to skip (or, in CI, fail) with why.
set -euo pipefail
[ -x /usr/bin/chromium ] && exit 0
if [ "$(id -u)" != 0 ]; then
  echo "test-deps: chromium is missing (apt-get install chromium, as root); the console test will say so" >&2
  exit 0
fi
echo "test-deps: installing chromium (apt-get)" >&2
export DEBIAN_FRONTEND=noninteractive
apt-get install -y -qq chromium >/dev/null 2>&1 || { apt-get update -qq >/dev/null && apt-get install -y -qq chromium >/dev/null; }

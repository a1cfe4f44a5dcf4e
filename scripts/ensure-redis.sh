#!/bin/sh
# The tests start their own redis-server processes: make sure redis-server and redis-cli are on
# PATH. On Debian or Ubuntu as root this installs them (as CI does); otherwise it says how.
set -eu
if command -v redis-server >/dev/null 2>&1 && command -v redis-cli >/dev/null 2>&1; then exit 0; fi
if [ "$(id -u)" = 0 ] && command -v apt-get >/dev/null 2>&1; then
  echo 'redis-server is missing: installing redis-server and redis-tools with apt-get' >&2
  export DEBIAN_FRONTEND=noninteractive
  apt-get update -qq
  apt-get install -y -qq --no-install-recommends redis-server redis-tools >/dev/null
  # The package starts a system redis on 6379; the tests start their own on free ports.
  (service redis-server stop || true) >/dev/null 2>&1
  exit 0
fi
cat >&2 <<'HOW'
The tests need redis-server and redis-cli (Redis 7 or newer) on PATH. Install them, then run the
tests again:
  Debian/Ubuntu: sudo apt-get install redis-server redis-tools && sudo service redis-server stop
  macOS:         brew install redis
HOW
exit 1

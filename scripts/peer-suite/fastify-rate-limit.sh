#!/bin/sh
# Runs @fastify/rate-limit's own test suite against @sluice/fastify's fromFastifyRateLimit, and
# against itself for the baseline. Contains none of their code: it takes a checkout of their
# repository (fetched by you, its dependencies installed with `npm install`), copies its tests to
# test-sluice/ with the one import that creates the plugin (`require('../index')`) swapped for a
# shim over this worktree's built packages, and runs both with `node --test`.
#
#   git -C <mirror of fastify/fastify-rate-limit> archive v11.2.0 | tar -x -C /tmp/frl
#   (cd /tmp/frl && npm install)
#   pnpm --filter @sluice/core --filter @sluice/redis --filter @sluice/fastify build
#   sh scripts/peer-suite/fastify-rate-limit.sh /tmp/frl
#
# Their Redis tests connect to 127.0.0.1:6379; a redis-server is started there for the run
# (and stopped after) when none answers.
set -eu
PEER=$(cd "${1:?usage: fastify-rate-limit.sh <checkout of fastify-rate-limit>}" && pwd)
ROOT=$(cd "$(dirname "$0")/../.." && pwd)
DIST="$ROOT/packages/fastify/dist/index.cjs"
[ -f "$DIST" ] || { echo "build @sluice/fastify first: $DIST is missing" >&2; exit 1; }

STARTED=''
if ! redis-cli -h 127.0.0.1 -p 6379 ping >/dev/null 2>&1; then
  redis-server --port 6379 --bind 127.0.0.1 --save '' --appendonly no --daemonize yes \
    --pidfile /tmp/peer-suite-redis.pid >/dev/null
  STARTED=1
  sleep 1
fi
stop() { [ -n "$STARTED" ] && redis-cli -h 127.0.0.1 -p 6379 shutdown nosave >/dev/null 2>&1 || true; }
trap stop EXIT
trap "exit 130" INT TERM

# The shim: the peer's module shape (the plugin, .default, .fastifyRateLimit, .normalizeIP).
cat > "$PEER/sluice-shim.cjs" <<SHIM
'use strict'
const { fromFastifyRateLimit, normalizeFastifyRateLimitIP } = require('$DIST')
module.exports = fromFastifyRateLimit
module.exports.default = fromFastifyRateLimit
module.exports.fastifyRateLimit = fromFastifyRateLimit
module.exports.normalizeIP = normalizeFastifyRateLimitIP
SHIM

rm -rf "$PEER/test-sluice"
cp -R "$PEER/test" "$PEER/test-sluice"
find "$PEER/test-sluice" -name '*.test.js' | while read -r file; do
  sed -i "s#require('\(\.\./\)*index')#require('$PEER/sluice-shim.cjs')#" "$file"
  grep -q "sluice-shim" "$file" || { echo "no import swapped in $file" >&2; exit 1; }
done

cd "$PEER"
run() {
  # One file at a time, as their CI runs them (the Redis tests share one server); a failed test
  # leaves its Redis client open, so the process is ended when the tests are.
  node --test --test-force-exit --test-concurrency=1 $(find "$1" -name '*.test.js' | sort) > "$2" 2>&1 || true
  printf '%s: ' "$1"
  grep -E '^# (tests|pass|fail|skipped)' "$2" | tr '\n' ' '
  echo
}
run test /tmp/peer-suite-frl-self.tap
run test-sluice /tmp/peer-suite-frl-sluice.tap
echo "failing against sluice (a describe block holding a failing test is listed too):"
grep -E '^not ok|^    not ok|^  not ok' /tmp/peer-suite-frl-sluice.tap | sed 's/^ *//' || true

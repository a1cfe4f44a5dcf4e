#!/bin/sh
# `pnpm test:stress`: the whole suite, several times in a row, while CPU burners keep every core
# busy, as on a loaded CI runner or a developer's busy laptop. A test whose verdict depends on how
# fast the machine is fails here first.
#
#   pnpm test:stress                          3 runs of the whole suite, 3 burners per core
#   pnpm test:stress test/redis/faults.test.ts   the same for some files (any vitest arguments)
#   SLUICE_STRESS_RUNS=1 SLUICE_STRESS_BURNERS=8 pnpm test:stress
#
# The burners are busy loops started here, so they run at this script's priority (under `nice`,
# niced alike) and stop with it. On 2 cores, 6 burners and the suite's own processes hold the load
# average at about 8. Stops at the first failed run; prints the load average before each run.
set -eu
cd "$(dirname "$0")/.."
runs=${SLUICE_STRESS_RUNS:-3}
cores=$(getconf _NPROCESSORS_ONLN 2>/dev/null || echo 2)
burners=${SLUICE_STRESS_BURNERS:-$((3 * cores))}

sh scripts/ensure-test-tools.sh

pids=''
stop() {
  for pid in $pids; do kill "$pid" 2>/dev/null || true; done
}
trap stop EXIT
trap 'exit 130' INT TERM
i=0
while [ "$i" -lt "$burners" ]; do
  sh -c 'while :; do :; done' &
  pids="$pids $!"
  i=$((i + 1))
done
# Let the load average climb before the first run.
sleep 20

run=1
while [ "$run" -le "$runs" ]; do
  echo "== stress run $run of $runs: $burners burners on $cores cores, load average $(cut -d' ' -f1-3 /proc/loadavg 2>/dev/null || uptime)"
  pnpm exec vitest run "$@"
  run=$((run + 1))
done
echo "== $runs runs green under load; load average $(cut -d' ' -f1-3 /proc/loadavg 2>/dev/null || uptime)"

#!/bin/sh
# Runs @nestjs/throttler's own e2e suite with @sluice/nestjs's SluiceThrottlerStorage as its
# storage, and as it is for the baseline. Contains none of their code: it takes a checkout of
# their repository (fetched by you, its dependencies installed), copies it to <checkout>-sluice
# with the one line that creates the default storage (`new ThrottlerStorageService()` in
# src/throttler.providers.ts) swapped for a SluiceThrottlerStorage over a MemoryStore from this
# worktree's built packages, and runs `jest` on both, `runs` times (default 3).
#
#   git -C <mirror of nestjs/throttler> archive <the 6.5.1 commit> | tar -x -C /tmp/nt
#   (cd /tmp/nt && npm install --ignore-scripts --legacy-peer-deps)
#   pnpm --filter @sluice/core --filter @sluice/nestjs build
#   sh scripts/peer-suite/nestjs-throttler.sh /tmp/nt 3
set -eu
PEER=$(cd "${1:?usage: nestjs-throttler.sh <checkout of nestjs/throttler> [runs]}" && pwd)
RUNS=${2:-3}
ROOT=$(cd "$(dirname "$0")/../.." && pwd)
DIST="$ROOT/packages/nestjs/dist/index.cjs"
[ -f "$DIST" ] || { echo "build @sluice/nestjs first: $DIST is missing" >&2; exit 1; }

SLUICE="$PEER-sluice"
rm -rf "$SLUICE"
mkdir -p "$SLUICE"
# Everything but node_modules, which is linked (the same dependencies, installed once).
(cd "$PEER" && tar -c --exclude=./node_modules .) | tar -x -C "$SLUICE"
ln -s "$PEER/node_modules" "$SLUICE/node_modules"
# The built @sluice/core and @sluice/nestjs, installed beside their app as a user's would be, so
# that they load the app's own @nestjs/common (the workspace's is another major).
MODULES="$SLUICE/sluice_modules/node_modules/@sluice"
for pkg in core nestjs; do
  mkdir -p "$MODULES/$pkg"
  cp -R "$ROOT/packages/$pkg/package.json" "$ROOT/packages/$pkg/dist" "$MODULES/$pkg/"
done
SHIM="$MODULES/nestjs"
PROVIDERS="$SLUICE/src/throttler.providers.ts"
sed -i "s#new ThrottlerStorageService()#new (require('$SHIM').SluiceThrottlerStorage)({ store: new (require('$SHIM').MemoryStore)() })#" "$PROVIDERS"
grep -q "SluiceThrottlerStorage" "$PROVIDERS" || { echo "no storage swapped in $PROVIDERS" >&2; exit 1; }

run() {
  (cd "$1" && npx jest --config ./test/jest-e2e.json --forceExit > "$2" 2>&1) || true
  printf '%s: ' "$3"
  grep -E '^Tests:' "$2"
}
i=1
while [ "$i" -le "$RUNS" ]; do
  run "$PEER" "/tmp/peer-suite-nest-self-$i.log" "run $i, @nestjs/throttler's own storage"
  run "$SLUICE" "/tmp/peer-suite-nest-sluice-$i.log" "run $i, SluiceThrottlerStorage"
  grep -E '^  ● ' "/tmp/peer-suite-nest-sluice-$i.log" | sort -u || true
  i=$((i + 1))
done

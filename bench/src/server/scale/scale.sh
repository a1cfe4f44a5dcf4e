#!/usr/bin/env bash
# sluice-server past one core (issue 36): for each shard count in SHARDS and worker count in
# WORKERS, the server pinned to cores 0..W-1 with `--workers W --shards S` on a fresh directory
# (S `default`: no --shards; W `auto`: --workers auto on cores 0-7),
# then the load generators (resp-load.mjs, one per entry of GEN_CORES, each pinned there) send
# RL.REDUCE on 100,000 random keys: pipelined (16 in flight, 40 connections in all) and
# unpipelined (200 connections in all), SECONDS per point. Prints one line per point and the load
# before and after. Needs 16 cores for the defaults; on 2: WORKERS=1 GEN_CORES=0 SERVER_CORES=1.
# usage: scale.sh [the server's cli.js] [node]
set -u
HERE=$(cd "$(dirname "$0")" && pwd)
S=${1:-packages/server/dist/cli.js}; N=${2:-node}
WORKERS=${WORKERS:-1 2 4 8}; SHARDS=${SHARDS:-1 16}; SECONDS_PER=${SECONDS:-6}
GEN_CORES=${GEN_CORES:-8 9 10 11 12 13 14 15}
echo "cores $(nproc); node $($N --version); load $(cut -d' ' -f1-3 /proc/loadavg)"
gens=$(echo $GEN_CORES | wc -w)
for SH in $SHARDS; do
  for W in $WORKERS; do
    d=$(mktemp -d); port=$((26500 + RANDOM % 1000))
    # `auto` runs on cores 0-7 (it counts the cores it may use); `default` gives no --shards (the
    # directory gets what the server chooses for it).
    if [ "$W" = auto ]; then cores=${SERVER_CORES:-0-7}; else cores=${SERVER_CORES:-0-$((W-1))}; fi
    flags="--workers $W"; [ "$SH" != default ] && flags="$flags --shards $SH"
    taskset -c "$cores" $N "$S" --port $port --data "$d/db" $flags > "$d/log" 2>&1 &
    sp=$!
    for _ in $(seq 100); do $N -e "require('net').connect($port,'127.0.0.1').on('connect',()=>process.exit(0)).on('error',()=>process.exit(1))" 2>/dev/null && break; sleep 0.2; done
    sleep 1
    for mode in "16 40" "1 200"; do
      set -- $mode; P=$1; C=$2; pids=(); g=0
      for core in $GEN_CORES; do
        taskset -c "$core" $N "$HERE/resp-load.mjs" $port "$SECONDS_PER" $(( (C + gens - 1) / gens )) $P 100000 > "$d/g$g" 2>&1 & pids+=($!); g=$((g+1))
      done
      wait "${pids[@]}"
      tot=$(cat "$d"/g* | awk '{for(i=1;i<=NF;i++){if($i=="rate"){sub("/s","",$(i+1)); s+=$(i+1); g=g" "$(i+1)} if($i=="errors") e+=$(i+1)}} END {print s" req/s, errors "e", per generator"g}')
      echo "shards $SH workers $W pipeline $P conns $C: $tot"
    done
    kill $sp; wait $sp 2>/dev/null
    grep '"listening".*"workers"' "$d/log" | head -1 | sed 's/.*"dataDir":"[^"]*",/  listening: /'
    # Anything else the server said: LMDB's own lines on stderr (not JSON) and failed transactions.
    other=$(grep -v '^{' "$d/log" | sort | uniq -c | tr -s ' ' | tr '\n' ';')
    failed=$(grep -c '"transaction-failed"' "$d/log"); lost=$(grep -c '"persistence-error"' "$d/log")
    if [ -n "$other" ] || [ "$failed$lost" != 00 ]; then echo "  log: transaction-failed $failed, persistence-error $lost; other lines:$other"; fi
    rm -rf "$d"
  done
done
echo "load $(cut -d' ' -f1-3 /proc/loadavg)"

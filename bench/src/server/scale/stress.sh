#!/usr/bin/env bash
# sluice-server --workers 8 under both loads at once for 20 s (four generators pipelined 16 deep
# on 10 connections each, four unpipelined on 50 each), over one environment then 8 shards: the
# rates, and what LMDB and the server logged (failed transactions, LMDB's own stderr lines).
# Needs 16 cores. usage: stress.sh [the server's cli.js] [node]
set -u
HERE=$(cd "$(dirname "$0")" && pwd)
S=${1:-packages/server/dist/cli.js}; N=${2:-node}
echo "load $(cut -d' ' -f1-3 /proc/loadavg)"
for SH in 1 8; do
  d=$(mktemp -d); port=$((27000 + SH))
  taskset -c 0-7 $N "$S" --port $port --data $d/db --workers 8 --shards $SH > $d/log 2>&1 & sp=$!
  for _ in $(seq 100); do $N -e "require('net').connect($port,'127.0.0.1').on('connect',()=>process.exit(0)).on('error',()=>process.exit(1))" 2>/dev/null && break; sleep 0.2; done
  sleep 1
  for c in 8 9 10 11; do taskset -c $c $N "$HERE/resp-load.mjs" $port 20 10 16 100000 > $d/p$c & done
  for c in 12 13 14 15; do taskset -c $c $N "$HERE/resp-load.mjs" $port 20 50 1 100000 > $d/u$c & done
  wait $(jobs -p | grep -v "^$sp$") 2>/dev/null; sleep 0.5
  echo "shards $SH: pipelined $(cat $d/p* | awk '{s+=$6; e+=$4} END {print s"/s errors "e}'), unpipelined $(cat $d/u* | awk '{s+=$6; e+=$4} END {print s"/s errors "e}')"
  kill $sp; wait $sp
  echo "  transaction-failed $(grep -c '"transaction-failed"' $d/log), persistence-error $(grep -c '"persistence-error"' $d/log), other lines:"
  grep -v '^{' $d/log | sort | uniq -c | head
  grep '"transaction-failed"\|"persistence-error"' $d/log | head -3
  rm -rf $d
done
echo "load $(cut -d' ' -f1-3 /proc/loadavg)"

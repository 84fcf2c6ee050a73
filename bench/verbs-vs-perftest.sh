#!/bin/bash
# verbs-vs-perftest.sh - rocectl's verbs traffic against perftest on the same
# Soft-RoCE devices, in one lab boot; prints both side by side with the ratio.
#
# usage: bench/verbs-vs-perftest.sh
# env:   LAB_BENCH_BW_SIZE (65536) LAB_BENCH_BW_ITERS (1000)
#        LAB_BENCH_LAT_SIZE (2)    LAB_BENCH_LAT_ITERS (1000)  LAB_BENCH_ROUNDS (3, medians reported)
#        plus the lab's LAB_* variables (test/lab/run-lab.sh)
#
# perftest runs ib_write_bw / ib_write_lat / ib_send_lat with the server on
# rxe1 and the client on rxe0 toward LAB_IP1; rocectl runs Listen on rxe1 and
# Connect from rxe0 (the same path), and its same-port loopback on rxe0.
# Also reports the cost of one cgo call in the guest (BenchmarkCgoCall),
# which is why the traffic loops are written in C.
set -euo pipefail
ROOT=$(cd "$(dirname "$0")/.." && pwd)
cd "$ROOT"
RUNLAB=$ROOT/test/lab/run-lab.sh
[ -x "$RUNLAB" ] || RUNLAB=$ROOT/../shared/lab/run-lab.sh
BIN=$(mktemp -t verbs-bench.XXXXXX)
trap 'rm -f "$BIN"' EXIT
CGO_ENABLED=1 go test -tags "lab verbs" -c -o "$BIN" ./verify
env_pass=""
for v in LAB_BENCH_BW_SIZE LAB_BENCH_BW_ITERS LAB_BENCH_LAT_SIZE LAB_BENCH_LAT_ITERS LAB_BENCH_ROUNDS; do
  [ -n "${!v:-}" ] && env_pass="$env_pass $v=${!v}"
done
LAB_QUIET=${LAB_QUIET:-1} LAB_ENV="${LAB_ENV:-}$env_pass" "$RUNLAB" "$BIN" \
  -test.run '^$' -test.bench 'LabVerbsVsPerftest|CgoCall' -test.benchtime 1x -test.v

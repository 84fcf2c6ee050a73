#!/bin/bash
# storm-latency.sh - pause storm onset -> rollback complete, beside SONiC
# pfcwd's detection time and the target (issue "Real driver behaviour":
# ≤ 400 ms at 100 ms polling in the lab, median of 10).
#
# usage: bench/storm-latency.sh                (simulated; no root needed)
#        STORM_LAB=1 bench/storm-latency.sh    (also the Soft-RoCE lab: root,
#                                               Debian 12, `make lab-setup` done)
# env:   STORM_RUNS      storms per poll setting, simulated (20)
#        LAB_STORM_RUNS  storms in the lab (10)
#        SUMMARY         append rows to this file (run-all.sh sets it)
#
# Simulated: cli's BenchmarkStormRollback, `rocectl apply` of the ConnectX
# recipe in-process on a copy of the cx6dx-ofed-factory host with a
# simulated kernel; at a random moment of the soak priority 3 of ens1f0np0
# is paused without end, its counter carrying the lab's jitter (1.01 ×
# wall time, read up to 2 ms stale: 0.99-1.03 per poll); measured from that
# onset until apply returns with the host restored. Guard: detection_time
# 200 ms (SONiC's default), poll 100 ms and 200 ms (SONiC's default poll).
#
# Lab: cli's TestLabStormLatency in one lab boot (test/lab/run-go-tests.sh):
# the same apply through the real kernel (netdevsim's mlx5-named counters
# via the ethtool ioctl, dcbnl restored by the rollback), poll 100 ms,
# detection_time 200 ms, a writer making rx_prio4_pause_duration follow
# wall-clock time.
set -euo pipefail
ROOT=$(cd "$(dirname "$0")/.." && pwd)
cd "$ROOT"
. bench/lib.sh
RUNS=${STORM_RUNS:-20}
LAB_RUNS=${LAB_STORM_RUNS:-10}
OUT=$(mktemp -t storm-bench.XXXXXX)
LABOUT=$(mktemp -t storm-lab.XXXXXX)
trap 'rm -f "$OUT" "$LABOUT"' EXIT

go test -run '^$' -bench 'StormRollback' -benchtime 1x ./cli/ -args -storm.runs="$RUNS" | tee "$OUT" | grep -E '^(Benchmark|FAIL|---|ok|panic)' >&2 || true
grep -q '^ok' "$OUT" || { cat "$OUT"; exit 1; }

lab_med=- lab_worst=- lab_n=0
if [ "${STORM_LAB:-0}" = 1 ]; then
	LAB_GO_PKGS=./cli test/lab/run-go-tests.sh -test.run '^TestLabStormLatency$' -storm.lab -storm.runs="$LAB_RUNS" >"$LABOUT" 2>&1 || {
		cat "$LABOUT"; echo "storm-latency: the lab run failed" >&2; exit 1; }
	grep 'storm-latency:' "$LABOUT" >&2 || true
	read -r lab_med lab_worst lab_n < <(awk '/storm-latency: lab median/ { for (i = 1; i <= NF; i++) { if ($i == "median") m = $(i+1); if ($i == "worst") w = $(i+1); if ($i == "runs") n = $(i+1) } } END { print (m == "" ? "-" : m), (w == "" ? "-" : w), (n == "" ? 0 : n) }' "$LABOUT")
	[ "$lab_med" != - ] || { cat "$LABOUT"; echo "storm-latency: no lab figure in the output" >&2; exit 1; }
fi

echo
echo "pause storm onset -> rollback complete"
printf '  %-34s %-10s %12s %12s %16s %16s   %s\n' "where" "guard poll" "median" "worst" "detect (median)" "PFC off (median)" "target"
for poll in 100ms 200ms; do
	name=BenchmarkStormRollback/poll=$poll
	med=$(gometric "$OUT" "$name" rollback-median-ms)
	worst=$(gometric "$OUT" "$name" rollback-worst-ms)
	det=$(gometric "$OUT" "$name" detect-median-ms)
	pfc=$(gometric "$OUT" "$name" pfc-median-ms)
	target=-
	[ "$poll" = 100ms ] && target="<= 400 ms (lab)"
	printf '  %-34s %-10s %9.1f ms %9.1f ms %13.1f ms %13.1f ms   %s\n' "simulated kernel, $RUNS storms" "$poll" "$med" "$worst" "$det" "$pfc" "$target"
	summary "storm -> rollback, simulated, poll $poll (median / worst)|$(printf '%.0f / %.0f ms' "$med" "$worst")|SONiC pfcwd detects in 200-400 ms|$target"
done
if [ "$lab_med" != - ]; then
	printf '  %-34s %-10s %9.1f ms %9.1f ms %16s %16s   %s\n' "Soft-RoCE lab, $lab_n storms" 100ms "$lab_med" "$lab_worst" - - "<= 400 ms"
	summary "storm -> rollback, lab, poll 100ms (median / worst of $lab_n)|$(printf '%.0f / %.0f ms' "$lab_med" "$lab_worst")|SONiC pfcwd detects in 200-400 ms|<= 400 ms"
else
	printf '  %-34s %-10s %12s\n' "Soft-RoCE lab" 100ms "not run (STORM_LAB=1 bench/storm-latency.sh)"
fi
echo "  baseline: SONiC pfcwd detection_time 200 ms, poll 200 ms (paused ≥ 99 % of each poll for 200 ms):"
echo "  200-400 ms from onset to detection, before any restoration."
echo "  rocectl measures occupancy over the detection window (pause time growth / time since the newest"
echo "  sample at least detection_time old), so a poll that reads 0.98 in a storm does not restart the count."
echo "  The window must start after the onset: detection takes detection_time plus the rest of the poll"
echo "  in which the storm began, 200-300 ms at 100 ms polling, 200-400 ms at 200 ms."

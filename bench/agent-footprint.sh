#!/bin/bash
# agent-footprint.sh - steady-state memory and CPU of `rocectl-agent` with 8
# ports, against the budget of the issue "Operator experience" (§2):
# ≤ 20 MB RSS and ≤ 1 % of one core with counters polled every 200 ms.
#
# usage: bench/agent-footprint.sh
# env:   DURATION  seconds sampled per run (30)
#        WARMUP    seconds before sampling starts (5)
#        SCRAPE    seconds between /metrics scrapes while sampling (15,
#                  Prometheus' usual interval; the scrape cost is included)
#        SUMMARY   append rows to this file (run-all.sh sets it)
#
# The host: an 8-port ConnectX-6 Dx factory snapshot written by mkhosts
# (ens{1..4}f{0,1}np{0,1}, mlx5_0..7), read with --snapshot: ethtool -S
# answers come from the snapshot's kernel.json and hw_counters from its
# files, so the ioctls of a live mlx5 are not in the figure (a live Stats
# call costs tens of µs; 40 a second add well under 0.1 % of a core).
# The agent runs in audit mode with a drift check every second. Two runs:
#   1. --metrics-addr 127.0.0.1:0, --counter-interval 200ms: the budget's case;
#   2. no --metrics-addr: no metrics, no counter polling (the agent as it
#      was before client_golang, drift checks only), for comparison.
# Per run: VmRSS from /proc/PID/status each second (peak and last) and
# utime+stime from /proc/PID/stat over the sampled window.
set -euo pipefail
ROOT=$(cd "$(dirname "$0")/.." && pwd)
cd "$ROOT"
. bench/lib.sh
DURATION=${DURATION:-30}
WARMUP=${WARMUP:-5}
SCRAPE=${SCRAPE:-15}

TMP=$(mktemp -d -t agentbench.XXXXXX)
PID=
cleanup() {
	if [ -n "$PID" ]; then kill "$PID" 2>/dev/null || true; wait "$PID" 2>/dev/null || true; fi
	rm -rf "$TMP"
}
trap cleanup EXIT
CGO_ENABLED=0 go build -trimpath -o "$TMP/rocectl-agent" ./cmd/rocectl-agent
go run ./internal/tools/mkhosts -captures testdata/captures -ports 8 -o "$TMP/host"
TCK=$(getconf CLK_TCK)

# cputicks PID: utime+stime in clock ticks (fields 14 and 15 of
# /proc/PID/stat, counted after the command name's closing parenthesis).
cputicks() { sed 's/.*) //' "/proc/$1/stat" | awk '{ print $12 + $13 }'; }
rsskb() { awk '/^VmRSS:/ { print $2 }' "/proc/$1/status"; }

# measure NAME ARGS...: runs the agent with ARGS, prints one line and sets
# RSS_MB, CPU_PCT.
measure() {
	local name=$1
	shift
	mkdir -p "$TMP/state-$name"
	"$TMP/rocectl-agent" --snapshot "$TMP/host" --state-dir "$TMP/state-$name" --log-format json \
		-p profiles/connectx-lossless.toml --mode audit --interval 1s "$@" 2>"$TMP/$name.log" &
	PID=$!
	local url=
	if [[ " $* " == *" --metrics-addr "* ]]; then
		for _ in $(seq 100); do
			url=$(sed -n 's/.*"msg":"serving metrics","addr":"\([^"]*\)".*/http:\/\/\1\/metrics/p' "$TMP/$name.log")
			[ -n "$url" ] && break
			sleep 0.1
		done
		[ -n "$url" ] || { echo "agent-footprint.sh: the agent did not serve metrics:" >&2; cat "$TMP/$name.log" >&2; exit 1; }
	fi
	sleep "$WARMUP"
	kill -0 "$PID" 2>/dev/null || { echo "agent-footprint.sh: the agent exited:" >&2; cat "$TMP/$name.log" >&2; exit 1; }
	if [ -n "$url" ]; then
		curl -fsS "$url" >"$TMP/$name.prom"
		# The budget's case only counts if 8 ports are really polled.
		local ports
		ports=$(grep -c '^rocectl_global_pause_frames_total{.*direction="rx"' "$TMP/$name.prom" || true)
		[ "$ports" = 8 ] || { echo "agent-footprint.sh: /metrics has counters of $ports ports, want 8" >&2; exit 1; }
	fi
	local t0 c0 peak=0 last=0 i r
	t0=$(date +%s.%N)
	c0=$(cputicks "$PID")
	for ((i = 1; i <= DURATION; i++)); do
		sleep 1
		r=$(rsskb "$PID")
		last=$r
		((r > peak)) && peak=$r
		if [ -n "$url" ] && ((i % SCRAPE == 0)); then curl -fsS "$url" >/dev/null; fi
	done
	local c1 t1
	c1=$(cputicks "$PID")
	t1=$(date +%s.%N)
	kill "$PID"
	wait "$PID" 2>/dev/null || true
	PID=
	RSS_MB=$(awk -v k="$peak" 'BEGIN { printf "%.1f", k / 1024 }')
	LAST_MB=$(awk -v k="$last" 'BEGIN { printf "%.1f", k / 1024 }')
	CPU_PCT=$(awk -v c="$((c1 - c0))" -v tck="$TCK" -v t0="$t0" -v t1="$t1" 'BEGIN { printf "%.2f", 100 * c / tck / (t1 - t0) }')
}

echo "agent footprint: 8-port cx6dx factory snapshot, audit mode, drift check every 1 s, ${DURATION} s sampled after ${WARMUP} s, a scrape every ${SCRAPE} s"
printf '  %-52s %16s %14s   %s\n' "" "RSS peak (last)" "CPU, 1 core" "budget"
measure polled --metrics-addr 127.0.0.1:0 --counter-interval 200ms
POLL_RSS=$RSS_MB POLL_CPU=$CPU_PCT
printf '  %-52s %16s %14s   %s\n' "metrics, counters polled every 200 ms" "$RSS_MB MB ($LAST_MB)" "$CPU_PCT %" "≤ 20 MB, ≤ 1 % (issue \"Operator experience\" §2)"
measure plain
printf '  %-52s %16s %14s   %s\n' "no metrics, no polling (drift checks only)" "$RSS_MB MB ($LAST_MB)" "$CPU_PCT %" "before: 14 MB, 0.3 % (hand-written metrics, no polling)"
summary "agent 8 ports, counters every 200 ms: RSS|$POLL_RSS MB|14 MB (no polling)|≤ 20 MB"
summary "agent 8 ports, counters every 200 ms: CPU|$POLL_CPU %|0.3 % (no polling)|≤ 1 % of a core"
awk -v r="$POLL_RSS" -v c="$POLL_CPU" 'BEGIN { if (r > 20 || c > 1) { print "  over budget"; exit 1 } print "  within budget" }'

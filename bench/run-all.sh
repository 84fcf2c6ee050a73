#!/bin/bash
# run-all.sh - every rocectl benchmark with a baseline or a target, then one
# summary table. Full output goes to the terminal as it runs.
#
# usage: bench/run-all.sh        (as root: the live apply needs a namespace;
#                                 without root that part is skipped)
# env:   RUNS, STORM_RUNS, AUDIT_GOBENCH, REPORT_SIZES as the scripts it runs.
#
# Every step runs, whatever the one before it said: a step that fails or
# misses its budget (its script exits non-zero) is recorded and named
# under the summary, and run-all.sh exits 1 at the end when any did. The
# summary table always prints.
set -uo pipefail
ROOT=$(cd "$(dirname "$0")/.." && pwd)
cd "$ROOT"
. bench/lib.sh
export SUMMARY
SUMMARY=$(mktemp -t bench-summary.XXXXXX)
GO_OUT=$(mktemp -t bench-go.XXXXXX)
trap 'rm -f "$SUMMARY" "$GO_OUT"' EXIT

# step NAME COMMAND...: runs one benchmark step; a non-zero exit is
# recorded in MISSED (the step's own output says why), never the end.
MISSED=()
step() {
	local name=$1
	shift
	if ! "$@"; then
		MISSED+=("$name")
		echo "-- $name: failed or over its budget (see above)"
	fi
}

echo "== machine: $(nproc) CPUs, load average $(cut -d' ' -f1-3 /proc/loadavg) (other processes share these CPUs)"
echo
echo "== apply vs bash, audit (bench/apply-vs-shell.sh)"
if [ "$(id -u)" = 0 ]; then
	step "apply vs bash, audit" bench/apply-vs-shell.sh
else
	echo "skipped: needs root"
	summary "apply 8 ports (live, veth)|skipped (not root)|-|-"
fi

echo
echo "== journal and apply on a simulated kernel (apply benchmarks)"
apply_benchmarks() {
	go test -run '^$' -bench 'JournalSave|ApplyRecipe|StoreOpen' -benchmem ./apply/ | tee "$GO_OUT"
	grep -q '^ok' "$GO_OUT"
}
step "journal and apply benchmarks" apply_benchmarks
summary "journal save, 2-port plan (fsync)|$(ns2ms "$(gometric "$GO_OUT" BenchmarkJournalSave/save ns/op)")|-|-"
for p in 2 64; do
	n=BenchmarkApplyRecipe/ports=$p
	summary "apply Begin+Run, $p ports (Sim)|$(ns2ms "$(gometric "$GO_OUT" "$n" ns/op)"), journal $(gometric "$GO_OUT" "$n" journal-share-%) %|-|-"
	summary "link toggles per port in one apply of the recipe, $p ports (Sim)|$(gometric "$GO_OUT" "$n" link-toggles/port)|-|<= 1"
done
summary "find open journals, 200 finished (every apply start)|$(ns2us "$(gometric "$GO_OUT" BenchmarkStoreOpen/layout=done ns/op)")|$(ns2ms "$(gometric "$GO_OUT" BenchmarkStoreOpen/layout=flat ns/op)") (all in journal/, as before)|-"

echo
echo "== import of ethtool -S, 64 and 256 interfaces, taken in turn with its floor (nic/dump BenchmarkImportEthtoolS)"
import_benchmarks() {
	go test -run '^$' -bench 'ImportEthtoolS' -benchtime 5x ./nic/dump/ | tee "$GO_OUT"
	grep -q '^ok' "$GO_OUT" || return 1
	local n ratio over=0
	for n in 64 256; do
		ratio=$(gometric "$GO_OUT" "BenchmarkImportEthtoolS/interfaces=$n" "x-floor(target<=1.3)")
		summary "import, ethtool -S of $n interfaces ($(gometric "$GO_OUT" "BenchmarkImportEthtoolS/interfaces=$n" input-MiB) MiB)|$(gometric "$GO_OUT" "BenchmarkImportEthtoolS/interfaces=$n" import-ms) ms, ${ratio}x the floor|floor $(gometric "$GO_OUT" "BenchmarkImportEthtoolS/interfaces=$n" floor-ms) ms (parse to JSON, nothing else)|<= 1.3x"
		awk -v r="$ratio" 'BEGIN { exit !(r == "" || r > 1.3) }' && over=1
	done
	return $over
}
step "import benchmarks" import_benchmarks

echo
echo "== fleet report over 10,000 and 100,000 documents (bench/report-fleet.sh)"
step "fleet report" bench/report-fleet.sh
report_benchmarks() {
	go test -run '^$' -bench 'Fold' -benchtime 3x ./report/ | tee "$GO_OUT"
	grep -q '^ok' "$GO_OUT"
}
step "fleet report fold benchmark" report_benchmarks
summary "report fold, decode + fold of one document (fleet / factory host audit / nccl: audit and nccl-env), one goroutine|$(gometric "$GO_OUT" BenchmarkFold/fleet ns/doc) / $(gometric "$GO_OUT" BenchmarkFold/factory ns/doc) / $(gometric "$GO_OUT" BenchmarkFold/nccl ns/doc) ns|-|-"

echo
echo "== agent memory and CPU, 8 ports polled every 200 ms (bench/agent-footprint.sh)"
step "agent footprint" bench/agent-footprint.sh

echo
echo "== pause storm -> rollback (bench/storm-latency.sh)"
step "pause storm -> rollback" bench/storm-latency.sh

echo
echo "== summary ($(date '+%F %T'), load average now $(cut -d' ' -f1-3 /proc/loadavg))"
{
	echo "benchmark|rocectl|baseline|target"
	cat "$SUMMARY"
} | awk -F'|' '
	{ for (i = 1; i <= 4; i++) { c[NR, i] = $i; if (length($i) > w[i]) w[i] = length($i) } }
	END {
		for (r = 1; r <= NR; r++) {
			line = ""
			for (i = 1; i <= 3; i++) line = line sprintf("%-" w[i] "s  ", c[r, i])
			line = line c[r, 4]
			print line
			if (r == 1) { for (i = 1; i <= 4; i++) printf "%s%s", sprintf("%" w[i] "s", ""), (i < 4 ? "  " : "\n") }
		}
	}' | sed '2s/ /-/g'

if [ ${#MISSED[@]} -gt 0 ]; then
	echo
	echo "failed or over budget (${#MISSED[@]}): $(printf '%s; ' "${MISSED[@]}" | sed 's/; $//')"
	exit 1
fi
echo
echo "every step ran within its budget"

#!/bin/bash
# slowest.sh passes `go test` output through and, at the end, prints the
# slowest packages: the suite's time budget (≤ 15 minutes on 2 busy cores,
# lab included) is kept by knowing where the time goes, in every CI log.
#
#   go test ./... 2>&1 | test/timing/slowest.sh [N]
#
# It exits with 0; the caller takes go test's status from PIPESTATUS.
n=${1:-8}
log=$(mktemp)
trap 'rm -f "$log"' EXIT
tee "$log"
echo "test: the $n slowest packages (seconds, from go test's own lines):"
# "ok  <pkg>  12.345s" and "FAIL  <pkg>  12.345s": the package's wall time.
awk '($1 == "ok" || $1 == "FAIL") && $3 ~ /^[0-9.]+s$/ { t = $3; sub(/s$/, "", t); printf "%8.1f  %s %s\n", t, $1, $2 }' "$log" |
	sort -rn | head -n "$n"
exit 0

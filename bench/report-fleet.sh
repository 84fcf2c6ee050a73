#!/bin/bash
# report-fleet.sh - `rocectl report` over 10,000 and 100,000 generated
# documents made from real command outputs, wall time and peak RSS of the
# process per output format, beside the targets of issue 39 ("Performance
# at fleet scale"): 10k < 2 s and < 200 MB, 100k < 10 s and < 300 MB.
#
# usage: bench/report-fleet.sh
# env:   REPORT_SIZES  the fleet sizes, in files ("10000 100000")
#        REPORT_FACTORY files of the all-factory-hosts fleet (10000; 0 skips)
#        REPORT_DIR    where the corpora are written (a directory made under
#                      $TMPDIR, removed at the end; 100k files ≈ 0.75 GB)
#        SUMMARY       append rows to this file (run-all.sh sets it)
#
# The documents: bench/cmd/reportcorpus writes racks of hosts from the
# real documents of report/testdata/corpus (what rocectl printed for the
# shipped hosts) and from `rocectl audit -o json` of an 8-port ConnectX-6
# Dx factory host written here by mkhosts (36 KB, every setting drifted),
# host names and times changed; verify, peer and fact cache files among
# them; truncated (1 in 200), malformed (1 in 500) and duplicated (1 in 150)
# documents mixed in, which the report must count and name (exit 1: it
# lists unreadable files). Each run is timed as a process with GNU time
# (elapsed, maximum resident set size); the corpus is freshly written, so
# it is read from the page cache, as a report over a results directory
# gathered a moment before would be.
set -euo pipefail
ROOT=$(cd "$(dirname "$0")/.." && pwd)
cd "$ROOT"
. bench/lib.sh
SIZES=${REPORT_SIZES:-10000 100000}
TMP=$(mktemp -d "${REPORT_DIR:-${TMPDIR:-/tmp}}/report-bench.XXXXXX")
trap 'rm -rf "$TMP"' EXIT
[ -x /usr/bin/time ] || { echo "report-fleet.sh: needs GNU time (/usr/bin/time; apt-get install time)" >&2; exit 1; }

CGO_ENABLED=0 go build -trimpath -o "$TMP/rocectl" ./cmd/rocectl
go build -o "$TMP/reportcorpus" ./bench/cmd/reportcorpus
go run ./internal/tools/mkhosts -captures testdata/captures -ports 8 -o "$TMP/host8"
rc=0
"$TMP/rocectl" audit -o json -p profiles/connectx-lossless.toml --snapshot "$TMP/host8" >"$TMP/factory8.audit.json" || rc=$?
[ "$rc" = 2 ] || { echo "report-fleet.sh: audit of the 8-port factory host: exit $rc, want 2 (drift)" >&2; exit 1; }

over=0
echo "rocectl report, $(nproc) CPUs, load average $(cut -d' ' -f1-3 /proc/loadavg)"
printf '  %-8s %-6s %9s %10s   %s\n' files format seconds "peak RSS" target
for n in $SIZES; do
	case $n in
	10000) tsec=2 tmb=200 ;;
	100000) tsec=10 tmb=300 ;;
	*) tsec= tmb= ;;
	esac
	dir="$TMP/fleet-$n"
	gen=$("$TMP/reportcorpus" -n "$n" -o "$dir" -extra "$TMP/factory8.audit.json")
	bytes=$(du -sb "$dir" | cut -f1)
	echo "  corpus: $gen" | sed "s|$dir|DIR|"
	echo "  $(awk -v b="$bytes" -v n="$n" 'BEGIN { printf "%.0f MB, %.1f KB a file on average", b / 1e6, b / n / 1e3 }')"
	for fmt in text json html; do
		rc=0
		/usr/bin/time -o "$TMP/time" -f '%e %M' "$TMP/rocectl" report -o "$fmt" "$dir" >"$TMP/out.$fmt" 2>"$TMP/err" || rc=$?
		# Exit 1 and the unreadable files named: the corpus has bad ones.
		if [ "$rc" != 1 ] || ! grep -q 'could not be read' "$TMP/err"; then
			echo "report-fleet.sh: rocectl report -o $fmt: exit $rc, want 1 (unreadable files listed):" >&2
			cat "$TMP/err" >&2
			exit 1
		fi
		# GNU time says "Command exited with non-zero status 1" first.
		read -r sec kb < <(tail -n 1 "$TMP/time")
		mb=$(awk -v k="$kb" 'BEGIN { printf "%.0f", k / 1024 }')
		verdict=
		if [ -n "$tsec" ]; then
			if awk -v s="$sec" -v m="$mb" -v ts="$tsec" -v tm="$tmb" 'BEGIN { exit !(s < ts && m < tm) }'; then
				verdict="< $tsec s, < $tmb MB: within"
			else
				verdict="< $tsec s, < $tmb MB: OVER"
				over=1
			fi
		fi
		printf '  %-8s %-6s %7s s %7s MB   %s\n' "$n" "$fmt" "$sec" "$mb" "$verdict"
		summary "report, $n documents, -o $fmt|$sec s, $mb MB|before: 10k 2.4-3.75 s, 127-181 MiB; 100k 24-29 s, 1.25 GB|${tsec:+< $tsec s, < $tmb MB}"
	done
	# The bad documents are counted and named in the report itself.
	grep -q '^Unreadable files:' "$TMP/out.text" && grep -q '^Duplicate documents (' "$TMP/out.text" ||
		{ echo "report-fleet.sh: the text report does not list the unreadable and duplicate documents" >&2; exit 1; }
	grep -E '^  … and [0-9]+ more \(|^Duplicate documents \(' "$TMP/out.text" | sed 's/^/  report says: /'
	rm -rf "$dir"
done
# A fleet audited before its first apply: every host a factory host, its
# audit 36 KB with 184 changes (the mixed corpus has one rack in four of
# them). The same 10k target; no bad documents, so exit 0.
if [ "${REPORT_FACTORY:-10000}" != 0 ]; then
	n=${REPORT_FACTORY:-10000}
	dir="$TMP/factory-$n"
	gen=$("$TMP/reportcorpus" -n "$n" -o "$dir" -extra "$TMP/factory8.audit.json" -factory-only)
	echo "  corpus: $gen" | sed "s|$dir|DIR|"
	for fmt in text json html; do
		rc=0
		/usr/bin/time -o "$TMP/time" -f '%e %M' "$TMP/rocectl" report -o "$fmt" "$dir" >"$TMP/out.$fmt" 2>"$TMP/err" || rc=$?
		if [ "$rc" != 0 ]; then
			echo "report-fleet.sh: rocectl report -o $fmt over $n factory hosts: exit $rc, want 0:" >&2
			cat "$TMP/err" >&2
			exit 1
		fi
		read -r sec kb < <(tail -n 1 "$TMP/time")
		mb=$(awk -v k="$kb" 'BEGIN { printf "%.0f", k / 1024 }')
		if awk -v s="$sec" -v m="$mb" 'BEGIN { exit !(s < 2 && m < 200) }'; then
			verdict="< 2 s, < 200 MB: within"
		else
			verdict="< 2 s, < 200 MB: OVER"
			over=1
		fi
		printf '  %-8s %-6s %7s s %7s MB   %s (all factory hosts)\n' "$n" "$fmt" "$sec" "$mb" "$verdict"
		summary "report, $n factory hosts (36 KB each), -o $fmt|$sec s, $mb MB|before: 2.2-4.4 s (one decode per document by encoding/json)|< 2 s, < 200 MB"
	done
	rm -rf "$dir"
fi
echo "  (MB: MiB of peak resident memory, GNU time's maximum RSS)"
exit $over

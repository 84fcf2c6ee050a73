# lib.sh - helpers the bench scripts source (not run on its own).

# gometric FILE NAME UNIT: the value reported in UNIT by the benchmark whose
# name starts with NAME (without the -GOMAXPROCS suffix) in `go test -bench`
# output FILE; empty when absent.
gometric() {
	awk -v name="$2" -v unit="$3" '
		index($1, name) == 1 && (length($1) == length(name) || substr($1, length(name) + 1, 1) == "-") {
			for (i = 3; i <= NF; i++) if ($i == unit) { print $(i - 1); exit }
		}' "$1"
}

# ns2ms NS: nanoseconds as milliseconds with two decimals.
ns2ms() { awk -v n="$1" 'BEGIN { if (n == "") print "?"; else printf "%.2f ms", n / 1e6 }'; }

# ns2us NS: nanoseconds as microseconds with one decimal.
ns2us() { awk -v n="$1" 'BEGIN { if (n == "") print "?"; else printf "%.1f µs", n / 1e3 }'; }

# summary NAME|VALUE|BASELINE|TARGET: one row for run-all.sh's table, when
# it asked for one (SUMMARY names the file); nothing otherwise.
summary() {
	if [ -n "${SUMMARY:-}" ]; then printf '%s\n' "$1" >>"$SUMMARY"; fi
}

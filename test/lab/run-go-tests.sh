#!/bin/bash
# run-go-tests.sh - build every Go package's lab tests and run them all in ONE
# lab boot; print their -test.v output; exit non-zero if any build or test fails.
#
# usage: test/lab/run-go-tests.sh [TEST-BINARY-FLAGS...]     e.g. -test.run 'TestPFC'
#
# Discovery (no list to maintain): a package takes part when `go list -tags lab`
# shows test files that a build without the tag does not. Those are built with
# CGO_ENABLED=0 -tags lab (static). A package whose `-tags "lab verbs"` file set
# (CGO_ENABLED=1) adds files again is built with cgo and -tags "lab verbs" instead
# (a superset: its plain lab tests run too); the guest has glibc, libibverbs and
# the rxe provider. In the guest each binary runs only the top-level tests
# defined in the files the tags bring in (-test.run); its untagged unit tests
# belong to the host's `go test` (LAB_GO_ALL=1 runs everything). Flags given
# here come after that -test.run, so a -test.run of yours replaces it.
# ./cmd/rocectl, when it exists, is built too and lands on the guest's PATH
# (LAB_ROCECTL), once static and once with verbs (cgo, -tags verbs:
# LAB_ROCECTL_VERBS, bin/rocectl-verbs). A package's testdata/ goes along
# (the binary runs from its own folder). The pinned mlnx_qos revisions of
# setup (mlnx-tools.sh), when $LAB/out/mlnx-tools has them, go along as
# /lab/share/mlnx-tools (LAB_MLNX_TOOLS).
#
# env: LAB (work dir)  LAB_GO_PKGS="./nic/... ./verify" (default ./...)
#      LAB_GO_TIMEOUT (per binary, default 5m)  LAB_MEM (default 1024)
#      LAB_GO_KEEP=DIR (also copy the built share folder into DIR)  LAB_GO_ALL=1
#      plus run-lab.sh's LAB_* variables
set -euo pipefail
SRC=$(cd "$(dirname "$0")" && pwd)
LAB_TAG=lab-go
# shellcheck source=lib.sh
. "$SRC/lib.sh"
ROOT=$(cd "$SRC/../.." && pwd)
cd "$ROOT"
command -v go >/dev/null || die "go is not on PATH"
MOD=$(go list -m)
PKGS=${LAB_GO_PKGS:-./...}

SHARE=$(mktemp -d -t lab-go.XXXXXX)
trap 'rm -rf "$SHARE"' EXIT
mkdir -p "$SHARE/tests" "$SHARE/bin"

# testfiles ENV TAGS: "importpath dir file,file,..." for each package (go list -e
# keeps going past packages that do not compile: they fail later, at build time).
testfiles() {
  # shellcheck disable=SC2086
  env $1 go list -e -tags "$2" -f '{{.ImportPath}} {{.Dir}} {{join .TestGoFiles ","}},{{join .XTestGoFiles ","}}' $PKGS 2>/dev/null
}
# added A B: "importpath dir file,..." for packages where list B has test files
# that list A lacks (the files the extra tags bring in)
added() {
  awk 'NR==FNR { a[$1] = "," $3 ","; next }
       { n = split($3, f, ","); out = ""
         for (i = 1; i <= n; i++) if (f[i] != "" && index(a[$1], "," f[i] ",") == 0) out = out "," f[i]
         if (out != "") print $1, $2, substr(out, 2) }' "$1" "$2"
}
t0=$(date +%s%N)
testfiles CGO_ENABLED=0 "" > "$SHARE/l0"
testfiles CGO_ENABLED=0 lab > "$SHARE/l1"
testfiles CGO_ENABLED=1 "" > "$SHARE/l0c"
testfiles CGO_ENABLED=1 lab > "$SHARE/l1c"
testfiles CGO_ENABLED=1 "lab verbs" > "$SHARE/l2"
added "$SHARE/l0" "$SHARE/l1" > "$SHARE/lab.pkgs"
# verbs packages: "lab verbs" adds files to "lab"; they run every file the tags add
added "$SHARE/l1c" "$SHARE/l2" | cut -d' ' -f1 > "$SHARE/verbs.ips"
added "$SHARE/l0c" "$SHARE/l2" | awk 'NR==FNR { v[$1] = 1; next } v[$1]' "$SHARE/verbs.ips" - > "$SHARE/verbs.pkgs"
rm -f "$SHARE"/l0 "$SHARE"/l1 "$SHARE"/l0c "$SHARE"/l1c "$SHARE"/l2 "$SHARE/verbs.ips"
ts "discovered $(cut -d' ' -f1 "$SHARE/lab.pkgs" "$SHARE/verbs.pkgs" | sort -u | wc -l) package(s) with lab tests, $(wc -l < "$SHARE/verbs.pkgs") of them with verbs tests ($(elapsed "$t0")s)"

if [ -s "$SHARE/verbs.pkgs" ]; then
  ensure_pkgs gcc libibverbs-dev
fi

# name: import path below the module, '/' -> '_' (nic/dcb -> nic_dcb)
pkgname() { local p=${1#"$MOD"}; p=${p#/}; p=${p:-root}; echo "${p//\//_}"; }
buildfail=""
# build NAME IMPORTPATH DIR FILES CGO TAGS: the test binary, the -test.run
# pattern of the top-level tests in FILES (the tagged files: the package's
# plain unit tests run on the host and may read files outside the package),
# and the package's testdata/.
build() {
  local name=$1 ip=$2 dir=$3 files=$4 cgo=$5 tags=$6 d=$SHARE/tests/$1 funcs
  funcs=$(cd "$dir" && grep -hoE '^func (Test|Fuzz|Example)[A-Za-z0-9_]*\(' ${files//,/ } | sed -E 's/^func //; s/\($//' | sort -u | paste -sd'|' || true)
  if [ -z "$funcs" ]; then
    ts "skip $ip: no Test/Fuzz/Example functions in its lab files ($files)"; return 0
  fi
  mkdir -p "$d"
  ts "build $ip (-tags \"$tags\", CGO_ENABLED=$cgo): $(echo "$funcs" | tr '|' '\n' | wc -l) top-level test(s) from $files"
  if ! CGO_ENABLED=$cgo go test -tags "$tags" -c -ldflags=-s -o "$d/$name.test" "$ip"; then
    buildfail="$buildfail $ip"; rm -rf "$d"; return 0
  fi
  echo "$ip ($tags)" > "$d/PKG"
  [ "${LAB_GO_ALL:-0}" = 1 ] || echo "^($funcs)\$" > "$d/RUN"
  if [ -d "$dir/testdata" ]; then
    cp -a "$dir/testdata" "$d/testdata"
    local kb; kb=$(du -sk "$d/testdata" | cut -f1)
    if [ "$kb" -gt 20480 ]; then ts "warning: $ip testdata is $((kb / 1024)) MiB; it all goes into guest RAM"; fi
  fi
}
t1=$(date +%s%N)
while read -r ip dir files; do
  grep -q "^$ip " "$SHARE/verbs.pkgs" && continue    # built below, with verbs
  build "$(pkgname "$ip")" "$ip" "$dir" "$files" 0 lab
done < "$SHARE/lab.pkgs"
while read -r ip dir files; do
  build "$(pkgname "$ip")" "$ip" "$dir" "$files" 1 "lab verbs"
done < "$SHARE/verbs.pkgs"
if [ -d cmd/rocectl ] && [ -n "$(go list -e -f '{{if eq .Name "main"}}main{{end}}' ./cmd/rocectl 2>/dev/null)" ]; then
  ts "build ./cmd/rocectl, static and with verbs"
  CGO_ENABLED=0 go build -ldflags=-s -o "$SHARE/bin/rocectl" ./cmd/rocectl || buildfail="$buildfail ./cmd/rocectl"
  # The shipped verbs build (make build-verbs): tests that run rocectl
  # verify --peer/--listen as a command need traffic, not the stub.
  ensure_pkgs gcc libibverbs-dev
  CGO_ENABLED=1 go build -tags verbs -ldflags=-s -o "$SHARE/bin/rocectl-verbs" ./cmd/rocectl ||
    buildfail="$buildfail ./cmd/rocectl(verbs)"
fi
if [ -n "$(ls "$LAB/out/mlnx-tools" 2>/dev/null)" ]; then
  cp -a "$LAB/out/mlnx-tools" "$SHARE/mlnx-tools"
  ts "mlnx_qos revisions: $(ls "$SHARE/mlnx-tools" | xargs)"
fi
nbin=$(find "$SHARE/tests" -name '*.test' | wc -l)
ts "built $nbin test binaries ($(du -sh "$SHARE" | cut -f1)) in $(elapsed "$t1")s${buildfail:+; BUILD FAILED:$buildfail}"
if [ -n "${LAB_GO_KEEP:-}" ]; then mkdir -p "$LAB_GO_KEEP" && cp -a "$SHARE/." "$LAB_GO_KEEP/"; fi

rc=0
if [ "$nbin" -eq 0 ]; then
  ts "no Go lab tests found (files with //go:build lab); nothing to boot"
else
  cp "$SRC/guest-go-tests.sh" "$SHARE/run.sh"
  t2=$(date +%s%N)
  set +e
  LAB_MEM=${LAB_MEM:-1024} LAB_ENV="${LAB_ENV:-} LAB_GO_TIMEOUT=${LAB_GO_TIMEOUT:-5m}" \
    "$SRC/run-lab.sh" -s "$SHARE" "$SHARE/run.sh" "$@"
  rc=$?
  set -e
  ts "guest run: exit $rc in $(elapsed "$t2")s"
fi
ts "total $(elapsed "$t0")s"
if [ -n "$buildfail" ]; then
  echo "lab-go: build failed:$buildfail" >&2
  [ $rc -eq 0 ] && rc=1
fi
exit $rc

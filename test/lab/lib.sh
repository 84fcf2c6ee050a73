# lib.sh - shell helpers shared by the lab's host-side scripts (sourced, not run).
# Needs bash. Callers set LAB_TAG (prefix of log lines) before sourcing.

LAB=${LAB:-/var/tmp/roce-lab}
lab_t0=${lab_t0:-$(date +%s%N)}

# ts MSG: log line with the seconds since the script started.
ts() {
  local d=$(( ($(date +%s%N) - lab_t0) / 100000000 ))
  printf '[%s %4d.%ds] %s\n' "${LAB_TAG:-lab}" $((d / 10)) $((d % 10)) "$*"
}

die() { printf '%s: ERROR: %s\n' "${LAB_TAG:-lab}" "$*" >&2; exit 1; }

# elapsed T0_NS: seconds since T0_NS (from date +%s%N), one decimal.
elapsed() { awk -v a="$1" -v b="$(date +%s%N)" 'BEGIN{printf "%.1f", (b-a)/1e9}'; }

# apt_update: refresh the package lists at most once per script run.
lab_apt_updated=0
apt_update() {
  [ "$lab_apt_updated" = 1 ] && return 0
  ts "apt-get update"
  apt-get update -qq || true
  lab_apt_updated=1
}

# ensure_pkgs PKG...: install the Debian packages that are missing. The lists
# are refreshed only when something is missing and the first install attempt
# fails (a fresh CI image has empty lists; a warm machine needs no update).
ensure_pkgs() {
  local p missing=""
  for p in "$@"; do dpkg -s "$p" >/dev/null 2>&1 || missing="$missing $p"; done
  [ -z "$missing" ] && return 0
  [ "$(id -u)" = 0 ] || die "missing packages:$missing (run as root or install them)"
  export DEBIAN_FRONTEND=noninteractive
  ts "apt-get install:$missing"
  # shellcheck disable=SC2086
  if ! apt-get install -y -qq --no-install-recommends $missing >/dev/null 2>&1; then
    apt_update
    apt-get install -y -qq --no-install-recommends $missing >/dev/null ||
      die "cannot install:$missing (check /etc/apt/sources.list and the network)"
  fi
}

# hash_files FILE...: one sha256 over the contents of the given files.
hash_files() { cat "$@" | sha256sum | cut -c1-16; }

#!/bin/sh
# guest-go-tests.sh - runs INSIDE the lab guest (as /lab/test, started by
# run-go-tests.sh). Runs every Go test binary under /lab/share/tests/<name>/
# in name order, each from its own folder (so testdata/ resolves) and each from
# a clean slate (below), prints its -test.v output, and exits with the number
# of binaries that failed (0 = all passed).
#
# Arguments are passed to every binary (e.g. -test.run TestX). Env (LAB_ENV):
#   LAB_GO_TIMEOUT  per-binary -test.timeout (default 5m)
#
# Every binary starts from a clean slate: netdevsim loaded with NO devices
# (tests create their own, any id, e.g. with labenv.NewNetdevsim), no rxe link
# but rxe0/rxe1, no rdma_cm configfs entries, LAB_IF0/1 up with MTU 1500.
# LAB_ROCECTL=/lab/share/bin/rocectl when it was built (also on PATH),
# LAB_ROCECTL_VERBS=/lab/share/bin/rocectl-verbs, the same with verbs (cgo);
# LAB_MLNX_TOOLS=/lab/share/mlnx-tools when setup could fetch mlnx_qos.
TESTS=/lab/share/tests
TMO=${LAB_GO_TIMEOUT:-5m}
up() { cut -d' ' -f1 /proc/uptime; }
log() { echo "LAB-GO: $*"; }

# reset_state: undo what a previous binary may have left behind.
reset_state() {
  # extra rxe links first: an rxe on a netdevsim port pins that netdev
  for l in $(rdma link show 2>/dev/null | awk '{print $2}' | cut -d/ -f1 | sort -u); do
    case $l in rxe0|rxe1) ;; *) rdma link del "$l" 2>/dev/null ;; esac
  done
  if [ -d /sys/bus/netdevsim ]; then
    for d in /sys/bus/netdevsim/devices/netdevsim*; do
      [ -e "$d" ] && echo "${d##*netdevsim}" > /sys/bus/netdevsim/del_device
    done
  else
    modprobe netdevsim || { log "modprobe netdevsim failed"; return 1; }
  fi
  if [ -n "$(ls /sys/bus/netdevsim/devices/ 2>/dev/null)" ]; then
    log "netdevsim devices left over: $(ls /sys/bus/netdevsim/devices/ | xargs)"; return 1
  fi
  for d in /sys/kernel/config/rdma_cm/*; do [ -d "$d" ] && rmdir "$d" 2>/dev/null; done
  for i in $LAB_IF0 $LAB_IF1; do ip link set "$i" mtu 1500 up || return 1; done
}

[ -x /lab/share/bin/rocectl ] && export LAB_ROCECTL=/lab/share/bin/rocectl
[ -d /lab/share/mlnx-tools ] && export LAB_MLNX_TOOLS=/lab/share/mlnx-tools
[ -x /lab/share/bin/rocectl-verbs ] && export LAB_ROCECTL_VERBS=/lab/share/bin/rocectl-verbs
pass=0; fail=0; failed=""
for dir in "$TESTS"/*/; do
  [ -d "$dir" ] || continue
  name=$(basename "$dir")
  bin=$dir$name.test
  [ -x "$bin" ] || continue
  if ! reset_state; then
    log "--- FAIL $name (lab reset failed)"; fail=$((fail + 1)); failed="$failed $name"; continue
  fi
  log "=== RUN $name ($(cat "$dir/PKG" 2>/dev/null)) t=$(up)s"
  t0=$(up)
  # RUN: the -test.run pattern of the package's lab tests (absent with LAB_GO_ALL=1)
  if [ -s "$dir/RUN" ]; then
    (cd "$dir" && "$bin" -test.v -test.timeout "$TMO" -test.run "$(cat RUN)" "$@")
  else
    (cd "$dir" && "$bin" -test.v -test.timeout "$TMO" "$@")
  fi
  rc=$?
  dt=$(awk -v a="$t0" -v b="$(up)" 'BEGIN{printf "%.1f", b-a}')
  if [ $rc -eq 0 ]; then
    log "--- PASS $name (${dt}s)"; pass=$((pass + 1))
  else
    log "--- FAIL $name (rc=$rc, ${dt}s)"; fail=$((fail + 1)); failed="$failed $name"
  fi
done
log "SUMMARY pass=$pass fail=$fail${failed:+ failed:$failed}"
[ $fail -gt 100 ] && fail=100
exit $fail

#!/bin/sh
# suite.sh - the lab self-test in ONE boot: runs each script named here from
# /lab/share (run-lab.sh -s tests tests/suite.sh), exits with the number that failed.
up() { cut -d' ' -f1 /proc/uptime; }
failed=""
for t in selftest.sh nsim-dcb.sh nsim-stats.sh; do
  echo "LAB-SUITE: === $t t=$(up)s"
  t0=$(up)
  sh /lab/share/$t
  rc=$?
  dt=$(awk -v a="$t0" -v b="$(up)" 'BEGIN{printf "%.1f", b-a}')
  if [ $rc -eq 0 ]; then echo "LAB-SUITE: --- PASS $t (${dt}s)"; else echo "LAB-SUITE: --- FAIL $t (rc=$rc, ${dt}s)"; failed="$failed $t"; fi
done
echo "LAB-SUITE: SUMMARY${failed:+ failed:$failed}${failed:- all passed}"
[ -z "$failed" ]

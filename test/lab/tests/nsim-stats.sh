#!/bin/sh
# mlx5-like counters, PFC storm-prevention tunable and global pause on a
# netdevsim port (lab patch nsim-dcb/netdevsim-stats.patch), all through the
# real ethtool ioctl/netlink paths of the guest kernel. Exits with the number of
# failed checks. Run: run-lab.sh tests/nsim-stats.sh
fails=0
ok() { echo "ok   $*"; }
bad() { echo "FAIL $*"; fails=$((fails + 1)); }
# expect WHAT GOT WANT
expect() { if [ "$2" = "$3" ]; then ok "$1"; else bad "$1: got [$2] want [$3]"; fi; }

ID=21   # own device id: never collides with the go-test runner's netdevsim1
modprobe netdevsim || exit 100
echo "$ID 1" > /sys/bus/netdevsim/new_device || exit 101
i=0; while [ -z "$(ls /sys/bus/netdevsim/devices/netdevsim$ID/net/ 2>/dev/null)" ] && [ $i -lt 50 ]; do sleep 0.1; i=$((i + 1)); done
NS=$(ls /sys/bus/netdevsim/devices/netdevsim$ID/net/)
D=/sys/kernel/debug/netdevsim/netdevsim$ID/ports/0
echo "netdevsim$ID port 0 = $NS, debugfs $D"

names() { ethtool -S "$NS" | sed -n 's/^ *\([a-z0-9_]*\): .*/\1/p' | tr '\n' ' ' | sed 's/ $//'; }
val() { ethtool -S "$NS" | awk -v n="$1:" '$1 == n { print $2 }'; }
tout() { ethtool --get-tunable "$NS" pfc-prevention-tout | awk '{ print $2 }'; }
pfc5() { for c in rx_prio$1_pause rx_prio$1_pause_duration tx_prio$1_pause tx_prio$1_pause_duration rx_prio$1_pause_transition; do printf '%s ' $c; done; }
BUF="rx_prio0_buf_discard rx_prio1_buf_discard rx_prio2_buf_discard rx_prio3_buf_discard rx_prio4_buf_discard rx_prio5_buf_discard rx_prio6_buf_discard rx_prio7_buf_discard"
STALL="tx_pause_storm_warning_events tx_pause_storm_error_events"
GLOBAL="rx_global_pause rx_global_pause_duration tx_global_pause tx_global_pause_duration rx_global_pause_transition"

echo "== string set follows PFC and global pause, in mlx5's order"
ethtool -S "$NS"
expect "PFC off, pause off" "$(names)" "rx_discards_phy $STALL $BUF"
expect "debugfs has every counter (1+40+5+2+8)" "$(ls $D/stats | wc -l)" 56
dcb pfc set dev "$NS" prio-pfc 3:on 5:on || bad "dcb pfc set"
expect "PFC on 3,5" "$(names)" "rx_discards_phy $(pfc5 3)$(pfc5 5)$STALL $BUF"
ethtool -A "$NS" rx on tx off || bad "ethtool -A rx on"
expect "ethtool -a after rx on" "$(ethtool -a "$NS" | awk '/^RX:/{r=$2} /^TX:/{t=$2} END{print r, t}')" "on off"
expect "PFC on 3,5 + global pause" "$(names)" "rx_discards_phy $(pfc5 3)$(pfc5 5)$GLOBAL $STALL $BUF"
echo 5 > $D/stats/rx_global_pause
expect "rx_global_pause from debugfs" "$(val rx_global_pause)" 5
ethtool -A "$NS" rx off tx off || bad "ethtool -A rx off tx off"
expect "ethtool -a remembers off" "$(ethtool -a "$NS" | awk '/^RX:/{r=$2} /^TX:/{t=$2} END{print r, t}')" "off off"
ethtool -A "$NS" autoneg on 2>/dev/null && bad "pause autoneg on must be rejected (EINVAL)" || ok "pause autoneg on rejected"
dcb pfc set dev "$NS" prio-pfc all:off prio-pfc 3:on || bad "dcb pfc set 3"
expect "PFC on 3 only" "$(names)" "rx_discards_phy $(pfc5 3)$STALL $BUF"

echo "== values come from debugfs; dcbnl requests/indications = tx/rx pause (as mlx5)"
echo 7 > $D/stats/tx_prio3_pause
echo 1000 > $D/stats/rx_prio3_pause
echo 3 > $D/stats/rx_prio5_pause
echo 11 > $D/stats/rx_prio6_buf_discard
echo 9 > $D/stats/rx_discards_phy
expect "tx_prio3_pause" "$(val tx_prio3_pause)" 7
expect "rx_prio3_pause" "$(val rx_prio3_pause)" 1000
expect "rx_prio6_buf_discard" "$(val rx_prio6_buf_discard)" 11
expect "rx_discards_phy" "$(val rx_discards_phy)" 9
expect "prio5 hidden while its PFC is off" "$(val rx_prio5_pause)" ""
dcb -s pfc show dev "$NS" requests indications
expect "dcb requests" "$(dcb -s pfc show dev "$NS" requests | tr -s ' ' | sed 's/ $//')" "requests 0:0 1:0 2:0 3:7 4:0 5:0 6:0 7:0"
expect "dcb indications" "$(dcb -s pfc show dev "$NS" indications | tr -s ' ' | sed 's/ $//')" "indications 0:0 1:0 2:0 3:1000 4:0 5:3 6:0 7:0"

echo "== a scripted storm: prio 3 paused ~100 % of each 200 ms step"
dur=0; pause=1000; prev=-1; mono=1
for step in 1 2 3 4 5; do
  dur=$((dur + 200000)); pause=$((pause + 400))   # duration counters are in microseconds
  echo $dur > $D/stats/rx_prio3_pause_duration
  echo $pause > $D/stats/rx_prio3_pause
  echo $step > $D/stats/tx_pause_storm_warning_events
  got=$(val rx_prio3_pause_duration)
  [ "$got" -gt "$prev" ] 2>/dev/null || mono=0
  prev=$got
done
expect "storm: duration rose monotonically to 1000000 us" "$mono $prev" "1 1000000"
expect "storm: warning events" "$(val tx_pause_storm_warning_events)" 5
expect "storm: rx_prio3_pause" "$(val rx_prio3_pause)" 3000

echo "== pfc-prevention-tout tunable (ETHTOOL_PFC_PREVENTION_TOUT, u16) like mlx5"
expect "default (lab: off)" "$(tout)" 0
for v in 0:0:80 65535:100:85 80:80:80 8000:8000:6800 500:500:425; do
  set -- $(echo $v | tr : ' ')
  ethtool --set-tunable "$NS" pfc-prevention-tout "$1" || bad "set $1"
  expect "set $1 -> get" "$(tout)" "$2"
  expect "set $1 -> minor watermark" "$(cat $D/ethtool/pfc_prevention_minor)" "$3"
done
for v in 1 79 8001 65534; do
  ethtool --set-tunable "$NS" pfc-prevention-tout "$v" 2>/dev/null && bad "set $v must fail (EINVAL)" || ok "set $v rejected"
done
expect "rejected sets keep the value" "$(tout)" 500
echo 8000 > $D/ethtool/pfc_prevention_tout
expect "debugfs preset (a 'firmware default')" "$(tout)" 8000
ethtool --get-tunable "$LAB_IF0" pfc-prevention-tout 2>/dev/null && bad "veth must not have the tunable" || ok "veth: tunable unsupported"

echo "== cleanup"
echo "$ID" > /sys/bus/netdevsim/del_device
echo "nsim-stats: $fails failed"
exit $fails

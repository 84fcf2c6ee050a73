#!/bin/sh
# DCB netlink against netdevsim + lab dcbnl patch (PFC/ETS/APP/buffer/maxrate/DCBX):
# the real kernel dcbnl code validates, stores and reports. Exits non-zero on
# the first broken step. Run: run-lab.sh tests/nsim-dcb.sh
set -x
ID=22   # own device id
modprobe netdevsim || exit 1
echo "$ID 1" > /sys/bus/netdevsim/new_device; sleep 0.3
NS=$(ls /sys/bus/netdevsim/devices/netdevsim$ID/net/)
D=/sys/kernel/debug/netdevsim/netdevsim$ID/ports/0
dcb dcbx show dev $NS | grep -q 'host ieee' || exit 2
dcb pfc set dev $NS prio-pfc 3:on 4:on delay 4096 || exit 3
dcb pfc show dev $NS | grep -q 'prio-pfc 0:off 1:off 2:off 3:on 4:on 5:off' || exit 4
echo 42 > $D/stats/tx_prio3_pause      # dcbnl PFC requests = tx pause frames (mlx5)
dcb -s pfc show dev $NS requests | grep -q ' 3:42 ' || exit 5
dcb ets set dev $NS tc-tsa all:ets tc-bw 0:10 1:10 2:10 3:50 4:5 5:5 6:5 7:5 prio-tc 3:3 4:4 || exit 6
dcb ets show dev $NS
dcb ets set dev $NS tc-tsa all:ets tc-bw all:10 && exit 7   # sum 80: dcb itself refuses it
dcb app add dev $NS dscp-prio 26:3 48:6 || exit 8
dcb -N app show dev $NS dscp-prio | grep -q '26:3 48:6' || exit 9
dcb buffer set dev $NS prio-buffer all:0 3:1 buffer-size 0:64K 1:128K || exit 10
dcb buffer show dev $NS
# > 256K in total: the driver op returns -EINVAL, which dcbnl reports in-band;
# iproute2 6.1's dcb still exits 0 here, so check that nothing changed instead
dcb buffer set dev $NS buffer-size 0:200K 1:100K
dcb buffer show dev $NS | grep -q 'buffer-size 0:64Kb 1:128Kb' || exit 11
dcb maxrate set dev $NS tc-maxrate 3:25Gbit || exit 12
dcb maxrate show dev $NS
dcb -j pfc show dev $NS
echo "$ID" > /sys/bus/netdevsim/del_device
exit 0

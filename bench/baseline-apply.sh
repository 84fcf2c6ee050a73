#!/bin/bash
# baseline-apply.sh - the ConnectX lossless recipe (profiles/connectx-lossless.toml)
# as the shell script people write by hand (doRoCE.sh / mlnx_qos style): the
# baseline bench/apply-vs-shell.sh times rocectl apply against.
#
# usage: bench/baseline-apply.sh ROOT
#
# ROOT is the prefix of /sys (a fixture host root; "/" on a real host). Every
# RoCE netdev under ROOT/sys/class/net (one with device/infiniband/*) gets:
#   MTU 9000                      ip link set mtu
#   global pause off              ethtool -A
#   DCBX host, IEEE               dcb dcbx set
#   trust DSCP, map DSCP>>3       dcb app replace dscp-prio (64 entries)
#   PFC on priority 3, cable 7 m  dcb pfc set prio-pfc ... delay 7
#   PFC storm prevention auto     ethtool --set-tunable pfc-prevention-tout 65535
#   ECN NP and RP on priority 3   echo > ecn/roce_{np,rp}/enable/<prio>
#   RoCE TOS 106                  echo > rdma_cm/<ibdev>/ports/1/default_roce_tos
#   verbs traffic class 106       echo > infiniband/<ibdev>/tc/1/traffic_class
#
# On veth links the ethtool and dcb calls fail (no pause, no DCB, no
# tunable), exactly as rocectl's calls are unsupported there; their errors
# are ignored, so both sides do the same work. Like a typical hand-written
# script it reads nothing back, journals nothing and cannot roll back.
set -u
ROOT=${1:?usage: $0 ROOT}
ROOT=${ROOT%/}
CM=$ROOT/sys/kernel/config/rdma_cm

# The firmware's default DSCP map, priority = DSCP >> 3.
map=""
for d in $(seq 0 63); do map="$map $d:$((d >> 3))"; done

for ifdir in "$ROOT"/sys/class/net/*; do
	dev=${ifdir##*/}
	ibdevs=("$ifdir"/device/infiniband/*)
	[ -e "${ibdevs[0]}" ] || continue # not a RoCE port
	ibdev=${ibdevs[0]##*/}

	ip link set dev "$dev" mtu 9000
	ethtool -A "$dev" autoneg off rx off tx off 2>/dev/null
	dcb dcbx set dev "$dev" host ieee 2>/dev/null
	# shellcheck disable=SC2086 # $map is a list of DSCP:PRIO words
	dcb app replace dev "$dev" dscp-prio $map 2>/dev/null
	dcb pfc set dev "$dev" prio-pfc all:off 3:on delay 7 2>/dev/null
	ethtool --set-tunable "$dev" pfc-prevention-tout 65535 2>/dev/null

	for side in np rp; do
		for p in 0 1 2 3 4 5 6 7; do
			v=0
			[ "$p" = 3 ] && v=1
			echo "$v" >"$ifdir/ecn/roce_$side/enable/$p"
		done
	done
	[ -d "$CM/$ibdev" ] || mkdir "$CM/$ibdev"
	echo 106 >"$CM/$ibdev/ports/1/default_roce_tos"
	echo 106 >"$ROOT/sys/class/infiniband/$ibdev/tc/1/traffic_class"
done

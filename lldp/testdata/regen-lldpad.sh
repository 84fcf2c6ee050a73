#!/bin/bash
# regen-lldpad.sh re-makes the lldpad-*.hex frames (see SOURCES.md): lldpad,
# set up as a switch port, sends IEEE 802.1Qaz DCBX with DSCP Application
# Priority entries on one end of a veth pair; tcpdump captures them on the
# other end. Everything happens in namespaces this script creates (network,
# mount, UTS): the host's interfaces, /run, /dev/shm and hostname are not
# touched, and the namespaces go away with the script's processes.
#
# Needs root, lldpad/lldptool (Debian package lldpad), tcpdump, gcc, and
# iproute2. Not part of the test suite: the tests read the .hex files.
#
#   sudo lldp/testdata/regen-lldpad.sh [OUTDIR]   (default: this directory)
#
# The CEE frame needs an lldpad newer than Debian's 1.1+git20221028, whose
# dcbx_gettlv clears the CEE state before every transmit (fixed upstream by
# 03cb011, 2023-08): it never sends CEE DCBX. Point LLDPAD_CEE_BUILD at a
# built intel/openlldp tree to make it, e.g. commit 00b3c78:
#   apt-get install autoconf automake libtool flex libconfig-dev libnl-genl-3-dev
#   git clone https://github.com/intel/openlldp && cd openlldp &&
#   git checkout 00b3c78 && ./bootstrap.sh && ./configure && make
#   sudo LLDPAD_CEE_BUILD=$PWD .../regen-lldpad.sh
set -euo pipefail

here=$(cd "$(dirname "$0")" && pwd)
out=${1:-$here}
out=$(cd "$out" && pwd)

if [[ "${REGEN_LLDPAD_INNER:-}" != 1 ]]; then
	[[ $(id -u) == 0 ]] || { echo "regen-lldpad.sh: needs root (namespaces, veth)" >&2; exit 1; }
	missing=()
	for t in lldpad lldptool tcpdump gcc ip unshare; do
		command -v "$t" >/dev/null || missing+=("$t")
	done
	if ((${#missing[@]})); then
		echo "regen-lldpad.sh: missing: ${missing[*]} (Debian: apt-get install lldpad tcpdump gcc iproute2)" >&2
		exit 1
	fi
	if [[ -n "${LLDPAD_CEE_BUILD:-}" && ! -x "$LLDPAD_CEE_BUILD/lldpad" ]]; then
		echo "regen-lldpad.sh: no lldpad built in LLDPAD_CEE_BUILD=$LLDPAD_CEE_BUILD" >&2
		exit 1
	fi
	# A private network namespace also gives lldpad its own abstract
	# client socket (@/com/intel/lldpad), so an lldpad on the host is
	# neither reached nor disturbed.
	exec env REGEN_LLDPAD_INNER=1 unshare --net --mount --uts --propagation private "$0" "$out"
fi

# Inside the namespaces. lldpad keeps its state in POSIX shared memory
# (/dev/shm/lldpad.state) and may write /run/lldpad.pid: both get private
# tmpfs mounts.
mount -t tmpfs tmpfs /dev/shm
mount -t tmpfs tmpfs /run
hostname lldpad-netns # the System Name TLV

work=$(mktemp -d)
tcpdump_pid=
lldpad_pid=
cleanup() {
	local p
	for p in $lldpad_pid $tcpdump_pid; do
		kill "$p" 2>/dev/null || true
		wait "$p" 2>/dev/null || true
	done
	rm -rf "$work"
}
trap cleanup EXIT

die() {
	echo "regen-lldpad.sh: $*" >&2
	echo "--- lldpad log (tail)" >&2
	tail -n 40 "$work/lldpad.log" >&2 || true
	exit 1
}

# A veth has no dcbnl_ops, so lldpad would refuse DCBX on it ("Device not
# capable"); the shim answers lldpad's dcbnl requests for sw0 as a
# host-DCBX NIC driver would (see the comment at its top).
gcc -O2 -Wall -shared -fPIC -o "$work/dcbnl-veth.so" "$here/lldpad/dcbnl-veth.c" -ldl

ip link set lo up
ip link add sw0 type veth peer name host0
# Locally administered addresses: no vendor's OUI.
ip link set sw0 address 02:dc:b0:00:00:01
ip link set host0 address 02:dc:b0:00:00:02
ip link set sw0 up
ip link set host0 up

tcpdump -i host0 -U -w "$work/cap.pcap" ether proto 0x88cc 2>"$work/tcpdump.log" &
tcpdump_pid=$!

# retry runs a command once a second until it succeeds, for up to $1 s.
retry() {
	local n=$1 i
	shift
	for ((i = 0; i < n; i++)); do
		if "$@" >"$work/last.out" 2>&1; then
			return 0
		fi
		sleep 1
	done
	cat "$work/last.out" >&2
	return 1
}

# The client tools of the lldpad that runs.
bindir=
lt() {
	echo "+ lldptool $*" >&2
	"${bindir}lldptool" "$@" >&2 || die "lldptool $* failed"
}
dt() {
	echo "+ dcbtool $*" >&2
	"${bindir}dcbtool" "$@" >"$work/dcbtool.out" 2>&1 && grep -q "Status:.*Successful" "$work/dcbtool.out" ||
		{ cat "$work/dcbtool.out" >&2; die "dcbtool $* failed"; }
}

# start_lldpad runs ${bindir}lldpad with the shim and config file $1 and
# waits until it answers.
start_lldpad() {
	DCBNL_VETH_IFNAMES=sw0 LD_PRELOAD="$work/dcbnl-veth.so" \
		"${bindir}lldpad" -p -t -f "$1" >>"$work/lldpad.log" 2>&1 &
	lldpad_pid=$!
	retry 20 "${bindir}lldptool" -l -i sw0 adminStatus || die "lldpad does not answer"
}

stop_lldpad() {
	kill "$lldpad_pid"
	wait "$lldpad_pid" || true
	lldpad_pid=
}

# The IEEE frames: Debian's lldpad.
start_lldpad "$work/lldpad.conf"
lt -L -i sw0 adminStatus=rxtx
lt -T -i sw0 -V sysName enableTx=yes
lt -T -i sw0 -V portDesc enableTx=yes
# lldpad keeps its 802.1Qaz module pending (refusing the settings) until the
# port has been up for DORMANT_DELAY (15) seconds.
echo "+ lldptool -T -i sw0 -V PFC enableTx=yes willing=no enabled=3 (until accepted)" >&2
retry 40 lldptool -T -i sw0 -V PFC enableTx=yes willing=no enabled=3 || die "802.1Qaz never became active on sw0"
# Priority 3 alone in TC 1, CNP priority 6 in strict TC 2, the rest in TC 0;
# TC 0 and TC 1 share the link 50/50.
lt -T -i sw0 -V ETS-CFG enableTx=yes willing=no \
	tsa=0:ets,1:ets,2:strict,3:strict,4:strict,5:strict,6:strict,7:strict \
	up2tc=0:0,1:0,2:0,3:1,4:0,5:0,6:2,7:0 tcbw=50,50,0,0,0,0,0,0
# Application Priority, selector 5 (DSCP): RoCE data DSCP 26 -> 3, CNP DSCP 48 -> 6.
lt -T -i sw0 -V APP app=3,5,26
lt -T -i sw0 -V APP app=6,5,48
lt -T -i sw0 -V APP enableTx=yes

# frames prints every captured frame as one line of hex.
frames() {
	tcpdump -r "$work/cap.pcap" -xx 2>/dev/null | awk '
		/^[^ \t]/ { if (f != "") print f; f = "" ; next }
		/^[ \t]+0x[0-9a-f]+:/ { for (i = 2; i <= NF; i++) f = f $i }
		END { if (f != "") print f }'
}

# save waits until three frames were sent after the last change and the
# last two are the same and hold the TLV bytes $2 (hex), and writes the last
# one to $out/$1.hex, 16 bytes a line.
save() {
	local name=$1 want=$2 n0 i all=()
	n0=$(frames | wc -l)
	for ((i = 0; i < 90; i++)); do
		mapfile -t all < <(frames)
		if ((${#all[@]} >= n0 + 3)) && [[ ${all[-1]} == "${all[-2]}" && ${all[-1]} == *"$want"* ]]; then
			echo "${all[-1]}" | sed 's/../& /g; s/ $//' | fold -w 48 | sed 's/ $//' >"$out/$name.hex"
			echo "wrote $out/$name.hex ($((${#all[-1]} / 2)) bytes, frame ${#all[@]} of the capture)" >&2
			return
		fi
		sleep 1
	done
	die "no stable frame with $want for $name"
}

save lldpad-ieee-dscp fe0b0080c20c00

# The same port with RoCE data DSCP 26 mapped to priority 4 instead.
lt -T -i sw0 -V APP -d app=3,5,26
lt -T -i sw0 -V APP app=4,5,26
save lldpad-ieee-dscp-differs fe0b0080c20c00

lt -t -i sw0 -V APP -c app
echo "lldpad: $(lldpad -v 2>&1 | head -n1); package: $(dpkg-query -W -f='${Package} ${Version}' lldpad 2>/dev/null || echo '?')" >&2
stop_lldpad

if [[ -z "${LLDPAD_CEE_BUILD:-}" ]]; then
	echo "LLDPAD_CEE_BUILD not set: lldpad-cee.hex not remade (see the top of this script)" >&2
else
	# The CEE frame: the lldpad built from source, forced to CEE DCBX
	# (a global setting read at start: set it, then restart).
	bindir=$LLDPAD_CEE_BUILD/
	rm -f /dev/shm/lldpad* # per-port DCBX mode the first lldpad left
	start_lldpad "$work/lldpad-cee.conf"
	dt sc dcbx v:force-cee
	stop_lldpad
	start_lldpad "$work/lldpad-cee.conf"
	lt -L -i sw0 adminStatus=rxtx
	lt -T -i sw0 -V sysName enableTx=yes
	lt -T -i sw0 -V portDesc enableTx=yes
	dt sc sw0 dcb on
	# PFC on priority 3, not willing; priority 3 alone in priority group
	# 1, the others in group 0, 50/50. The application feature keeps
	# lldpad's defaults (FCoE, iSCSI, FIP).
	dt sc sw0 pfc e:1 a:1 w:0 pfcup:00010000
	dt sc sw0 pg e:1 a:1 w:0 pgid:00010000 pgpct:50,50,0,0,0,0,0,0
	save lldpad-cee 001b2102
	dt go dcbx
	sed -n 's/^DCBX Version:[[:space:]]*/DCBX version: /p' "$work/dcbtool.out" >&2
	echo "lldpad (CEE): $("${bindir}lldpad" -v 2>&1 | head -n1), $(git -C "$LLDPAD_CEE_BUILD" log -1 --format='%h %cs' 2>/dev/null || echo 'commit ?')" >&2
	stop_lldpad
fi
echo "kernel: $(uname -r); date: $(date -u +%Y-%m-%dT%H:%MZ)" >&2

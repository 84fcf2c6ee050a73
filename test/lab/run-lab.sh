#!/bin/bash
# run-lab.sh - boot a throw-away QEMU guest (Debian 6.1 kernel) with two
# Soft-RoCE devices (rxe0 <-> rxe1 over a veth or virtio wire), run one test
# binary/script inside it, print its output, exit with its exit code.
#
# usage: run-lab.sh [-s DIR] TEST [ARGS...]
#   TEST   static binary (e.g. `CGO_ENABLED=0 go test -c`) or #!/bin/sh script
#          (dynamic binaries also work if they only need glibc/libibverbs/librdmacm)
#   -s DIR copy DIR into the guest as /lab/share (one boot, any number of files)
# env: LAB (work dir, /var/tmp/roce-lab)  LAB_ACCEL=tcg|kvm|auto (auto: probe KVM once, else TCG)
#      LAB_MEM=MiB (512)  LAB_SMP (nproc)  LAB_TIMEOUT=sec (1800, whole VM)  LAB_TOPO=veth|virtio (veth)
#      LAB_ENV="K=V K2=V2" (exported in the guest)  LAB_QUIET=1 (hide kernel log)
#      LAB_LOG=FILE (also keep the console log there)
#      LAB_ANSIBLE=1 (add Python + ansible-core: ansible-layer.sh; slow under TCG)
# exit: the test's code; 124 test timed out in the guest; 125 guest died before reporting
set -euo pipefail
SRC=$(cd "$(dirname "$0")" && pwd)
LAB=${LAB:-/var/tmp/roce-lab}
SHARE=""
[ "${1:-}" = "-s" ] && { SHARE=$2; shift 2; }
[ $# -ge 1 ] || { sed -n '2,17p' "$0"; exit 2; }
TEST=$(readlink -f "$1"); shift
[ -f "$TEST" ] || { echo "run-lab: no such file: $TEST" >&2; exit 2; }
[ -f "$LAB/out/base.cpio.gz" ] || "$SRC/setup.sh"

ACCEL=${LAB_ACCEL:-auto}; MEM=${LAB_MEM:-512}; SMP=${LAB_SMP:-$(nproc)}
TMO=${LAB_TIMEOUT:-1800}; TOPO=${LAB_TOPO:-veth}
W=$(mktemp -d -t lab-run.XXXXXX); trap 'rm -rf "$W"' EXIT

# per-run overlay cpio: /init (current guest-init, so editing it needs no setup),
# /lab/test, /lab/args, /lab/env, /lab/share
mkdir -p "$W/root/lab"
cp "$SRC/guest-init" "$W/root/init"; chmod +x "$W/root/init"
cp "$TEST" "$W/root/lab/test"; chmod +x "$W/root/lab/test"
: > "$W/root/lab/args"; for a in "$@"; do printf '%s\n' "$a" >> "$W/root/lab/args"; done
: > "$W/root/lab/env"; for kv in ${LAB_ENV:-}; do printf 'export %q\n' "$kv" >> "$W/root/lab/env"; done
if [ -n "$SHARE" ]; then cp -a "$SHARE" "$W/root/lab/share"; fi
(cd "$W/root" && find . -print0 | cpio --null -o -H newc --quiet | gzip -1 > "$W/overlay.cpio.gz")
LAYERS=""
if [ "${LAB_ANSIBLE:-0}" = 1 ]; then
  "$SRC/ansible-layer.sh" >&2
  LAYERS=$LAB/out/ansible.cpio.gz
fi
# later archives win: the overlay (with /init) comes last
cat "$LAB/out/base.cpio.gz" $LAYERS "$W/overlay.cpio.gz" > "$W/initrd"

if [ "$ACCEL" = auto ]; then
  # /dev/kvm may exist but be unusable (e.g. kvm_pvm hosts: SeaBIOS runs, the stock
  # kernel hangs right after decompression). Probe once with a deadline, cache result.
  PROBE=$LAB/out/.accel-$(uname -r)
  if [ ! -f "$PROBE" ]; then
    ACCEL=tcg
    if [ -w /dev/kvm ] && timeout 25 qemu-system-x86_64 -accel kvm -cpu host -M q35 -m 256 -nographic \
         -no-reboot -nodefaults -serial stdio -monitor none -nic none -kernel "$LAB/out/vmlinuz" \
         -initrd "$LAB/out/base.cpio.gz" -append "console=ttyS0 quiet panic=-1" </dev/null 2>&1 \
         | grep -q '^LAB_EXIT='; then ACCEL=kvm; fi
    echo "$ACCEL" > "$PROBE"
  fi
  ACCEL=$(cat "$PROBE")
fi
case $ACCEL in
  kvm) ACC="-accel kvm -cpu host" ;;
  *)   ACC="-accel tcg,thread=multi,tb-size=256 -cpu max" ;;
esac
NET=""
[ "$TOPO" = virtio ] && NET="-netdev hubport,id=p0,hubid=0 -device virtio-net-pci,netdev=p0,mac=52:54:00:00:77:01
  -netdev hubport,id=p1,hubid=0 -device virtio-net-pci,netdev=p1,mac=52:54:00:00:77:02"
BIOS=""; [ -f /usr/share/qemu/qboot.rom ] && BIOS="-bios /usr/share/qemu/qboot.rom"  # ~1s faster than SeaBIOS
LOGLVL="loglevel=4"; [ "${LAB_QUIET:-0}" = 1 ] && LOGLVL="quiet loglevel=1"
GUEST_TMO=$((TMO - 60))

t0=$(date +%s%N)
set +e
timeout --foreground "$TMO" qemu-system-x86_64 $ACC -M q35 $BIOS ${LAB_QEMU_EXTRA:-} -smp "$SMP" -m "$MEM" \
  -nographic -no-reboot -nodefaults -serial stdio -monitor none -nic none $NET \
  -kernel "$LAB/out/vmlinuz" -initrd "$W/initrd" \
  -append "console=ttyS0 $LOGLVL panic=-1 oops=panic tsc=reliable mitigations=off lab.topo=$TOPO lab.timeout=$GUEST_TMO" \
  </dev/null 2>&1 | sed -u 's/\r$//' | tee "$W/console.log"
qrc=${PIPESTATUS[0]}
set -e
t1=$(date +%s%N)
rc=$(sed -n 's/^LAB_EXIT=\([0-9]*\).*/\1/p' "$W/console.log" | tail -1)
if [ -n "${LAB_LOG:-}" ]; then cp "$W/console.log" "$LAB_LOG"; fi
printf 'run-lab: qemu rc=%s, wall %.1fs, accel=%s mem=%sM smp=%s\n' "$qrc" "$(awk "BEGIN{print ($t1-$t0)/1e9}")" "$ACCEL" "$MEM" "$SMP" >&2
if [ -z "$rc" ]; then echo "run-lab: guest died or timed out before reporting an exit code" >&2; exit 125; fi
exit "$rc"

#!/bin/bash
# setup.sh - prepare the Soft-RoCE QEMU lab in the work dir $LAB
# (default /var/tmp/roce-lab). Needs root and Debian 12 (bookworm) apt.
#
# Produces (all a run needs; cache this folder between CI runs):
#   $LAB/out/vmlinuz        Debian 6.1 kernel (extracted, never installed on the host)
#   $LAB/out/base.cpio.gz   busybox + dash + modules (rdma_rxe, netdevsim with the
#                           lab patches) + rdma-core + perftest + iproute2 + ethtool
#                           + python3 (Debian's minimal interpreter and stdlib)
#   $LAB/out/mlnx-tools/    pinned mlnx_qos revisions, when they could be fetched
#                           (mlnx-tools.sh; not part of the image or its stamp)
#   $LAB/out/kver, stamp    kernel ABI used, hash of the inputs that built the above
#
# Idempotent: when out/stamp matches the inputs (this script, lib.sh, the netdevsim
# patches, the kernel ABI) it only checks that qemu is installed and exits; nothing
# is downloaded. Once out/ exists, the kernel ABI it recorded is kept (a Debian
# kernel update does not silently change the lab); LAB_REFRESH=1 follows
# linux-image-amd64 again, LAB_KVER=6.1.0-NN-amd64 pins one.
#
# env: LAB (work dir)  LAB_KVER  LAB_REFRESH=1  LAB_NSIM_DCB=0 (build netdevsim unpatched)
set -euo pipefail
SRC=$(cd "$(dirname "$0")" && pwd)
LAB_TAG=setup
# shellcheck source=lib.sh
. "$SRC/lib.sh"
mkdir -p "$LAB/out"
OUT=$LAB/out
cd "$LAB"
# One setup at a time per work dir; run-lab.sh may call us concurrently.
exec 9>"$LAB/.setup.lock"
flock 9

RUN_PKGS="qemu-system-x86 cpio gzip"
BUILD_PKGS="rdma-core ibverbs-utils ibverbs-providers rdmacm-utils perftest busybox-static ethtool
 iproute2 kmod gcc-12 make xz-utils libelf1 patch python3-minimal"
PATCHES=""
if [ "${LAB_NSIM_DCB:-1}" = 1 ]; then
  # order matters: the stats patch builds on the dcbnl one
  PATCHES="$SRC/nsim-dcb/netdevsim-dcbnl.patch $SRC/nsim-dcb/netdevsim-stats.patch"
fi

ensure_pkgs $RUN_PKGS
# pinned mlnx_qos revisions, beside the image (not in its stamp): without
# them only the mlnx_qos lab test skips
"$SRC/mlnx-tools.sh" || ts "mlnx-tools.sh failed: the mlnx_qos lab test will skip"

# ---- which kernel ------------------------------------------------------------
debian_kver() {
  local k
  k=$(apt-cache depends linux-image-amd64 2>/dev/null | awk '/Depends: linux-image-[0-9]/{sub("linux-image-","",$2); print $2; exit}')
  if [ -z "$k" ]; then
    apt_update >&2   # stdout is the answer
    k=$(apt-cache depends linux-image-amd64 2>/dev/null | awk '/Depends: linux-image-[0-9]/{sub("linux-image-","",$2); print $2; exit}')
  fi
  [ -n "$k" ] || die "apt cannot resolve linux-image-amd64: is this Debian 12 with deb.debian.org (or a mirror) in sources.list?"
  echo "$k"
}
if [ -n "${LAB_KVER:-}" ]; then
  KVER=$LAB_KVER
elif [ -s "$OUT/kver" ] && [ "${LAB_REFRESH:-0}" != 1 ]; then
  KVER=$(cat "$OUT/kver")
else
  KVER=$(debian_kver)
fi
case $KVER in
  6.1.*-amd64) ;;
  *) die "kernel ABI '$KVER' is not a Debian 6.1 amd64 kernel; the netdevsim patches target 6.1 (pin LAB_KVER=6.1.0-NN-amd64)" ;;
esac

STAMP=$(printf '%s\n' "$KVER" "${LAB_NSIM_DCB:-1}" "$(hash_files "$SRC/setup.sh" "$SRC/lib.sh" $PATCHES)" | sha256sum | cut -c1-16)
if [ -f "$OUT/vmlinuz" ] && [ -f "$OUT/base.cpio.gz" ] && [ "$(cat "$OUT/stamp" 2>/dev/null)" = "$STAMP" ]; then
  ts "up to date: kernel $KVER, stamp $STAMP ($OUT)"
  exit 0
fi
ts "building lab for kernel $KVER in $LAB (stamp $STAMP)"
ensure_pkgs $BUILD_PKGS
ts "packages ok"

# ---- kernel packages (.deb extracted, never installed on the host) -----------
KCOMMON=${KVER%-amd64}-common
have_debs() {
  ls debs/linux-image-"$KVER"_*.deb debs/linux-headers-"$KVER"_*.deb debs/linux-headers-"$KCOMMON"_*.deb \
     debs/linux-kbuild-6.1_*.deb debs/linux-source-6.1_*.deb >/dev/null 2>&1
}
fetch_debs() {
  local v
  v=$(apt-cache policy "linux-image-$KVER" 2>/dev/null | awk '/Candidate:/{print $2}')
  [ -n "$v" ] && [ "$v" != "(none)" ] || return 1
  ts "downloading linux-image-$KVER ($v) + headers/kbuild/source for netdevsim"
  rm -f debs/*.deb
  (cd debs && apt-get download -qq -o APT::Sandbox::User=root "linux-image-$KVER" "linux-headers-$KVER" "linux-headers-$KCOMMON" \
     "linux-kbuild-6.1=$v" "linux-source-6.1=$v")
}
mkdir -p debs
if ! have_debs; then
  # a stale package list points at files the mirror no longer has: refresh, retry once
  if ! fetch_debs; then
    ts "download failed; refreshing package lists and retrying once"
    lab_apt_updated=0; apt_update
    fetch_debs || die "cannot fetch the Debian kernel packages for $KVER (linux-image/headers/kbuild/source).
  Debian drops old kernel ABIs from its mirrors after point releases. Either
  - LAB_REFRESH=1 (follow the current linux-image-amd64), or unset LAB_KVER, or
  - restore a cached \$LAB/out (it holds everything a run needs), or
  - put the five .debs into $LAB/debs by hand (e.g. from snapshot.debian.org)."
  fi
fi
KSRCVER=$(dpkg-deb -f debs/linux-image-"$KVER"_*.deb Version)
ts "kernel packages ok ($KSRCVER)"

if [ "$(cat kroot/.kver 2>/dev/null)" != "$KVER" ]; then
  rm -rf kroot kb src; mkdir -p kroot
  dpkg -x debs/linux-image-"$KVER"_*.deb kroot
  depmod -b kroot "$KVER"
  echo "$KVER" > kroot/.kver
fi
cp kroot/boot/vmlinuz-"$KVER" "$OUT/vmlinuz.tmp" && mv "$OUT/vmlinuz.tmp" "$OUT/vmlinuz"
ts "kernel $KVER ok"

# ---- netdevsim: Debian does not ship it (CONFIG_NETDEVSIM unset) -> build OOT --
NSIM=$LAB/nsim-build/netdevsim.ko
NSIM_STAMP=$(printf '%s\n' "$KVER" "$(hash_files /dev/null $PATCHES)" | sha256sum | cut -c1-16)
if [ ! -f "$NSIM" ] || [ "$(cat "$LAB/nsim-build/.stamp" 2>/dev/null)" != "$NSIM_STAMP" ]; then
  ts "building netdevsim.ko out of tree (patches:$(for p in $PATCHES; do printf ' %s' "${p##*/}"; done))"
  KH=$LAB/kb/usr/src/linux-headers-$KVER
  if [ ! -d "$KH" ]; then
    mkdir -p kb
    for d in debs/linux-headers-*.deb debs/linux-kbuild-*.deb; do dpkg -x "$d" kb; done
    sed -i "s|include /usr/src/|include $LAB/kb/usr/src/|" "$KH/Makefile"
  fi
  if [ ! -d src/linux-source-6.1/drivers/net/netdevsim ]; then
    rm -rf src; mkdir -p src
    dpkg-deb --fsys-tarfile debs/linux-source-6.1_*.deb | tar -x -C src ./usr/src/linux-source-6.1.tar.xz
    tar -xJf src/usr/src/linux-source-6.1.tar.xz -C src linux-source-6.1/drivers/net/netdevsim
    rm -f src/usr/src/linux-source-6.1.tar.xz
  fi
  rm -rf nsim-build; cp -r src/linux-source-6.1/drivers/net/netdevsim nsim-build
  for p in $PATCHES; do (cd nsim-build && patch -s -p1 < "$p") || die "patch ${p##*/} does not apply"; done
  if ! make -s -C "$KH" M="$LAB/nsim-build" CONFIG_NETDEVSIM=m modules -j"$(nproc)" > nsim-build/build.log 2>&1; then
    tail -40 nsim-build/build.log >&2
    die "netdevsim build failed (full log: $LAB/nsim-build/build.log)"
  fi
  strip --strip-debug "$NSIM"
  echo "$NSIM_STAMP" > nsim-build/.stamp
fi
ts "netdevsim ok"

# ---- initramfs root --------------------------------------------------------
R=$LAB/rootfs
rm -rf "$R"; mkdir -p "$R"/{usr/bin,usr/sbin,usr/lib/x86_64-linux-gnu,usr/lib64,etc,proc,sys,dev,tmp,run,root,lab,mnt,var}
ln -s usr/bin "$R/bin"; ln -s usr/sbin "$R/sbin"; ln -s usr/lib "$R/lib"; ln -s usr/lib64 "$R/lib64"
ln -s ../run "$R/var/run"

BINS="/usr/bin/ibv_devinfo /usr/bin/ibv_devices /usr/bin/ibv_rc_pingpong /usr/bin/ibv_ud_pingpong
 /usr/bin/ibv_uc_pingpong /usr/bin/ibv_srq_pingpong /usr/bin/rping /usr/bin/ucmatose /usr/bin/udaddy
 /usr/bin/ib_write_bw /usr/bin/ib_write_lat /usr/bin/ib_read_bw /usr/bin/ib_send_bw /usr/bin/ib_send_lat
 /usr/bin/rdma /usr/sbin/ip /usr/sbin/bridge /usr/sbin/tc /usr/sbin/devlink /usr/sbin/dcb /usr/sbin/ethtool
 /usr/bin/kmod /usr/bin/dash /usr/bin/bash /usr/bin/timeout /usr/bin/env"
LIBS="/usr/lib/x86_64-linux-gnu/libibverbs/librxe-rdmav34.so"
# python3 runs NVIDIA's mlnx_qos (a Python script; see mlnx-tools.sh): the
# interpreter of python3-minimal, with the ldd loop below bringing its libs.
PY=$(readlink -f /usr/bin/python3); PYV=${PY##*/}
BINS="$BINS $PY"
for b in $BINS; do cp -L "$b" "$R$b"; done
ln -s dash "$R/usr/bin/sh"   # busybox-static's ash prefers applets over $PATH; use dash
mkdir -p "$R/usr/lib/x86_64-linux-gnu/libibverbs" "$R/etc/libibverbs.d"
cp $LIBS "$R/usr/lib/x86_64-linux-gnu/libibverbs/"
cp /etc/libibverbs.d/rxe.driver "$R/etc/libibverbs.d/"
# shared libs (transitively, via ldd)
for f in $BINS $LIBS; do ldd "$f" | awk '/=>/{print $3} /ld-linux/{print $1}'; done | sort -u | while read -r l; do
  [ -e "$l" ] || continue
  real=$(readlink -f "$l"); d=/usr${l#/usr}
  mkdir -p "$R$(dirname "$d")"; cp -L "$real" "$R$d"
done
cp -L /lib64/ld-linux-x86-64.so.2 "$R/usr/lib64/"
cp -L /lib/x86_64-linux-gnu/libgcc_s.so.1 "$R/usr/lib/x86_64-linux-gnu/"   # pthread_exit/cancel (rping, cgo)
cp -a /etc/ld.so.conf /etc/ld.so.conf.d "$R/etc/"; ldconfig -r "$R" 2>/dev/null || true
cp -a /etc/iproute2 "$R/etc/" 2>/dev/null || true   # rt_tables etc.
# Python's own modules: Debian's minimal set (libpython3.X-minimal, what
# python3-minimal promises to run), without _ssl/_hashlib (they need libssl).
dpkg -L "$PYV-minimal" "lib$PYV-minimal" | sed -n -E "s#^/((usr/lib|etc)/$PYV/.*)#\1#p" | grep -v '\.so$' |
  tar -C / -cf - --no-recursion -T - | tar -C "$R" -xf -
ln -s "$PYV" "$R/usr/bin/python3"
# busybox for everything else
cp /bin/busybox "$R/usr/bin/busybox"
for a in $("$R/usr/bin/busybox" --list); do
  [ -e "$R/usr/bin/$a" ] || [ -e "$R/usr/sbin/$a" ] || ln -s busybox "$R/usr/bin/$a"
done
for a in modprobe lsmod rmmod insmod modinfo depmod; do rm -f "$R/usr/bin/$a"; ln -s ../bin/kmod "$R/usr/sbin/$a"; done
echo 'root:x:0:0:root:/root:/bin/sh' > "$R/etc/passwd"; echo 'root:x:0:' > "$R/etc/group"
printf '127.0.0.1 localhost\n::1 localhost\n' > "$R/etc/hosts"

# kernel modules: only what we need (+deps from modules.dep)
MODS="crc32_generic crc32-pclmul rdma_rxe ib_uverbs ib_umad rdma_ucm veth virtio_net virtio_pci psample configfs
 sch_mqprio sch_ets 8021q vrf dummy bridge bonding sch_ingress cls_flower act_mirred act_gact"
MD=kroot/lib/modules/$KVER
need=$(for m in $MODS; do
  line=$(grep -E "/$m\.ko(\.[a-z]+)?:" "$MD/modules.dep" || true)
  [ -n "$line" ] && echo "$line" | tr -d ':' | tr ' ' '\n'
done | sort -u)
for p in $need; do mkdir -p "$R/lib/modules/$KVER/$(dirname "$p")"; cp "$MD/$p" "$R/lib/modules/$KVER/$p"; done
mkdir -p "$R/lib/modules/$KVER/extra"; cp "$NSIM" "$R/lib/modules/$KVER/extra/"
cp "$MD"/modules.{order,builtin,builtin.modinfo} "$R/lib/modules/$KVER/" 2>/dev/null || true
depmod -b "$R" "$KVER"

# run-lab.sh puts the current guest-init into every run's overlay; this copy
# only serves the KVM probe, so guest-init edits need no new setup.
cp "$SRC/guest-init" "$R/init"; chmod +x "$R/init"
(cd "$R" && find . -print0 | cpio --null -o -H newc --quiet | gzip -1 > "$OUT/base.cpio.gz.tmp")
mv "$OUT/base.cpio.gz.tmp" "$OUT/base.cpio.gz"
echo "$KVER" > "$OUT/kver"
echo "$STAMP" > "$OUT/stamp"
ts "initramfs: $(du -h "$OUT/base.cpio.gz" | cut -f1) compressed, $(du -sh "$R" | cut -f1) unpacked; done"

#!/bin/bash
# ansible-layer.sh - build $LAB/out/ansible.cpio.gz: Python 3 and ansible-core
# from this Debian 12 host, as an initramfs layer that run-lab.sh puts between
# the base image and a run's overlay when LAB_ANSIBLE=1, so that a lab test can
# run a real ansible-playbook in the guest (deploy/ansible's TestLabSweep).
#
# Optional and separate from setup.sh (its own output and stamp): the base
# image, and every boot that does not ask for Ansible, stay as they were.
# Under TCG Ansible is slow (measured in test/lab/README.md): this is for a
# deliberate run, not for every `make lab`.
#
# What goes in: the standard library without its tests, tkinter, idlelib,
# lib2to3, ensurepip and the static libpython (with its __pycache__: compiling
# at every boot would cost more than the copy); ansible-core and the modules it
# imports (jinja2, markupsafe, PyYAML with libyaml, packaging, resolvelib; not
# cryptography, only vault needs it); the shared libraries the interpreter and
# those extensions link; the C.UTF-8 locale, without which Ansible refuses to
# start.
#
# env: LAB (work dir)
set -euo pipefail
SRC=$(cd "$(dirname "$0")" && pwd)
LAB_TAG=ansible-layer
# shellcheck source=lib.sh
. "$SRC/lib.sh"
mkdir -p "$LAB/out"
exec 9>"$LAB/.ansible-layer.lock"
flock 9

ensure_pkgs ansible-core python3-yaml
PY=python3.11
DIST=/usr/lib/python3/dist-packages
PKGS="ansible ansible_core-*.dist-info jinja2 Jinja2-*.egg-info markupsafe MarkupSafe-*.egg-info yaml
 PyYAML-*.dist-info _yaml packaging packaging-*.dist-info resolvelib resolvelib-*.dist-info"
[ -x /usr/bin/$PY ] || die "/usr/bin/$PY missing: this layer takes Debian 12's Python"

OUT=$LAB/out/ansible.cpio.gz
STAMP=$(printf '%s\n' "$(hash_files "$SRC/ansible-layer.sh")" \
  "$(dpkg-query -W -f '${Package}=${Version}\n' ansible-core "lib$PY-stdlib" "lib$PY-minimal" python3-yaml python3-jinja2 2>/dev/null)" |
  sha256sum | cut -c1-16)
if [ -f "$OUT" ] && [ "$(cat "$OUT.stamp" 2>/dev/null)" = "$STAMP" ]; then
  ts "up to date ($OUT, stamp $STAMP)"
  exit 0
fi

R=$LAB/ansible-root
rm -rf "$R"; mkdir -p "$R/usr/bin" "$R/usr/lib/x86_64-linux-gnu" "$R$DIST" "$R/usr/lib/locale"
(cd /usr/lib && tar -c --exclude="$PY/test" --exclude="$PY/config-*" --exclude="$PY/idlelib" --exclude="$PY/tkinter" \
  --exclude="$PY/ensurepip" --exclude="$PY/lib2to3" --exclude="$PY/pydoc_data" --exclude="$PY/turtledemo" "$PY") |
  tar -x -C "$R/usr/lib"
# shellcheck disable=SC2086
(cd "$DIST" && cp -a $PKGS "$R$DIST/")
cp -L /usr/bin/$PY "$R/usr/bin/"; ln -s $PY "$R/usr/bin/python3"
cp /usr/bin/ansible-playbook "$R/usr/bin/"
cp -a /usr/lib/locale/C.utf8 "$R/usr/lib/locale/"
# Libraries: the base image has glibc (and the loader); a layer file that
# the base also has would replace it, so those are left out.
for f in /usr/bin/$PY /usr/lib/$PY/lib-dynload/*.so "$DIST"/yaml/*.so "$DIST"/markupsafe/*.so; do
  ldd "$f" | awk '/=>/{print $3}'
done | sort -u | while read -r l; do
  case ${l##*/} in libc.so.*|libm.so.*|libpthread.so.*|libdl.so.*|ld-linux*) continue ;; esac
  cp -L "$l" "$R/usr/lib/x86_64-linux-gnu/"
done
(cd "$R" && find . -print0 | cpio --null -o -H newc --quiet | gzip -1 > "$OUT.tmp")
mv "$OUT.tmp" "$OUT"
echo "$STAMP" > "$OUT.stamp"
ts "ansible layer: $(du -h "$OUT" | cut -f1) compressed, $(du -sh "$R" | cut -f1) unpacked ($OUT)"

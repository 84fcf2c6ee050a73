#!/bin/bash
# mlnx-tools.sh - put pinned revisions of NVIDIA's mlnx_qos (GitHub
# Mellanox/mlnx-tools: third-party code, never copied into this repository)
# into $LAB/out/mlnx-tools/<rev>/, for the lab test that imports their real
# output (cli/lab_mlnxqos_test.go). run-go-tests.sh carries that folder into
# the guest; without it the test skips and says how to get it.
#
# Each file is checked against its git blob id, so what runs is exactly the
# pinned revision whatever the source:
#   LAB_MLNX_TOOLS_GIT=DIR  a clone or mirror of Mellanox/mlnx-tools (git show)
#   otherwise               https://raw.githubusercontent.com (curl), when reachable
# Idempotent: present, verified revisions are not fetched again. Never fails
# the setup: a revision it cannot get is reported and left out.
#
# env: LAB (work dir)  LAB_MLNX_TOOLS_GIT
set -uo pipefail
SRC=$(cd "$(dirname "$0")" && pwd)
LAB_TAG=${LAB_TAG:-mlnx-tools}
# shellcheck source=lib.sh
. "$SRC/lib.sh"
DEST=$LAB/out/mlnx-tools
REPO_URL=https://raw.githubusercontent.com/Mellanox/mlnx-tools

# REVS: "dir commit" then the files of that revision, "path blob-id", that
# mlnx_qos needs (its dcbnl/netlink helpers). The dir names are the ones the
# Go test expects. Versions: the tag and mlnx-tools.spec's Version there.
#   v5.6       tag v5.6 (spec 5.2.0; MLNX_OFED 5.x era), prints total_size=
#   v23.10.0   tag v23.10.0 (spec 23.10), first tag with max_buffer_size= (b8c08c5)
#   v2607.0.6  tag v2607.0.6 (spec 26.07, branch mlnx_ofed), no "default priority:" line
REVS="
v5.6 97049d3796de5a80be5db661272f33a1c14da125
 python/mlnx_qos 1a596b39a4e3bc73be2c11ef977441b7f75809d3
 python/dcbnetlink.py 282d17a030a2c3f63511277f5f56968fd27689d7
 python/netlink.py 13ccb5202382755309982db446a3fbdfacbc08a1
v23.10.0 d3edfb102ad4c3103796192b3719a5f9cd24c7f9
 python/mlnx_qos 096b8a8f727597a562f80e03d2c910cf0cd151aa
 python/Python/dcbnetlink.py 15ecaa3f6046c91666e9653c7fdfb0d15bff5d1d
 python/Python/netlink.py 13ccb5202382755309982db446a3fbdfacbc08a1
v2607.0.6 8fbfd9cfff34e2d32f1dd5a115c42eb8bd3b66c8
 python/mlnx_qos bad5524d5057b5bb575736bdcd750c62ffdeb262
 python/Python/dcbnetlink.py aee821f9d06c9e3ac103695d3d9be99a953f8361
 python/Python/netlink.py 13ccb5202382755309982db446a3fbdfacbc08a1
"

# blob_id FILE: git's object id of FILE's content.
blob_id() { { printf 'blob %d\0' "$(stat -c %s "$1")"; cat "$1"; } | sha1sum | cut -d' ' -f1; }

# get COMMIT PATH OUT: the file from the git dir or from GitHub (after one
# failed download, no more tries: a machine without GitHub answers slowly).
net_failed=0
get() {
  if [ -n "${LAB_MLNX_TOOLS_GIT:-}" ]; then
    git -C "$LAB_MLNX_TOOLS_GIT" show "$1:$2" > "$3" 2>/dev/null
  else
    if [ "$net_failed" = 0 ] && ! command -v curl >/dev/null; then
      (ensure_pkgs curl) || { ts "no curl"; net_failed=1; }
    fi
    [ "$net_failed" = 0 ] && curl -fsSL --max-time 20 -o "$3" "$REPO_URL/$1/$2" 2>/dev/null && return 0
    net_failed=1; return 1
  fi
}

mkdir -p "$DEST"
have=0; missing=""
dir=""; commit=""; ok=1
finish() {   # the revision just read: move it into place when complete
  [ -n "$dir" ] || return 0
  if [ "$ok" = 1 ]; then
    echo "$commit" > "$DEST/.tmp-$dir/COMMIT"
    rm -rf "${DEST:?}/$dir"; mv "$DEST/.tmp-$dir" "$DEST/$dir"; have=$((have + 1))
  else
    rm -rf "${DEST:?}/.tmp-$dir"; missing="$missing $dir"
  fi
}
while read -r a b; do
  [ -n "$a" ] || continue
  case $a in
    python/*)
      [ "$ok" = 1 ] || continue
      f=$DEST/.tmp-$dir/$a
      if [ -f "$DEST/$dir/$a" ] && [ "$(blob_id "$DEST/$dir/$a")" = "$b" ]; then
        mkdir -p "$(dirname "$f")"; cp "$DEST/$dir/$a" "$f"; continue
      fi
      mkdir -p "$(dirname "$f")"
      if ! get "$commit" "$a" "$f"; then
        ts "cannot get $a at $commit (${LAB_MLNX_TOOLS_GIT:-$REPO_URL})"; ok=0
      elif [ "$(blob_id "$f")" != "$b" ]; then
        ts "$a at $commit: blob $(blob_id "$f"), want $b"; ok=0
      fi ;;
    *)
      finish; dir=$a; commit=$b; ok=1
      rm -rf "${DEST:?}/.tmp-$dir"; mkdir -p "$DEST/.tmp-$dir" ;;
  esac
done <<< "$REVS"
finish
if [ -n "$missing" ]; then
  ts "mlnx_qos revisions in $DEST: $have; missing:$missing (the mlnx_qos lab test skips them;" \
     "set LAB_MLNX_TOOLS_GIT to a clone of https://github.com/Mellanox/mlnx-tools when GitHub is not reachable)"
else
  ts "mlnx_qos revisions in $DEST: $have"
fi
exit 0

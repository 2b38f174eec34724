# The kernel cache across device calls (sourced by engine.sh, run.sh and ab.sh on the
# GPU machine). A fresh machine starts with an empty disk cache, and compiling every
# kernel takes minutes (round 34: 294 modules, about 150 MB of cubins, most of a
# 600 s call). So each call saves its cache to $OUT as xz parts of at most 15 MiB
# (files back from a call are at most 16 MiB each and 8 in all; the `00` sorts them
# before the logs), and scripts/gpu.sh packs the latest call's parts as
# .carry/kernels.txz for the next call to restore. Python's tarfile does the xz, so
# nothing beyond Python is needed on the machine.
#   kernels_restore DIR   unpack .carry/kernels.txz (or an older kernels.tgz) into DIR
#   kernels_save DIR      pack DIR into $OUT/00kernels.txz.0, .1, ...
kernels_restore() {
  local dir=$1 c=${C:-$PWD/.carry}
  mkdir -p "$dir"
  if [ -f "$c/kernels.txz" ]; then
    python3 -c 'import sys, tarfile; tarfile.open(sys.argv[1], "r:xz").extractall(sys.argv[2])' "$c/kernels.txz" "$dir" 2>/dev/null
  elif [ -f "$c/kernels.tgz" ]; then
    tar xzf "$c/kernels.tgz" -C "$dir" 2>/dev/null
  fi
  echo "kernel cache: $(ls "$dir" | wc -l) modules restored"
}
kernels_save() {
  local dir=$1
  [ -d "$dir" ] && [ -n "$(ls "$dir")" ] || return 0
  python3 - "$dir" /tmp/kernels.txz <<'PY' 2>/dev/null || return 0
import os, sys, tarfile
with tarfile.open(sys.argv[2], "w:xz", preset=6) as t:
    for name in sorted(os.listdir(sys.argv[1])):
        t.add(os.path.join(sys.argv[1], name), arcname=name)
PY
  rm -f "$OUT"/00kernels.txz.*
  split -b 15m -d -a 1 /tmp/kernels.txz "$OUT/00kernels.txz."
}

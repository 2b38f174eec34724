#!/usr/bin/env bash
# Round 27's last call (a lab script, kept for the record in docs/gpu-results.md): the
# landing build against main (.carry/lab.bin.tgz: fixlog-old, fixlog-new; env CASES,
# VARIANTS, T_AB), where SG's peak is, the CUDA backend's suites on it (SUITES, default
# backends real_data) and with CONFORMANCE=1 the conformance suite last.
C=$PWD/.carry; OUT=${OUT:-/tmp/out}; mkdir -p $OUT
export FIXLOG_KERNEL_CACHE=/tmp/fixlog-kernels; mkdir -p /tmp/fixlog-kernels
[ -f $C/kernels.tgz ] && tar xzf $C/kernels.tgz -C /tmp/fixlog-kernels 2>/dev/null
date -u; nvidia-smi --query-gpu=name,memory.total,driver_version --format=csv,noheader
tar xzf $C/bin.tgz -C $C
. $C/paths; if [ "$BUILD_ROOT" != "$PWD" ] && [ ! -e "$BUILD_ROOT" ]; then mkdir -p "$(dirname "$BUILD_ROOT")"; ln -s "$PWD" "$BUILD_ROOT"; fi
mkdir -p "$(dirname "$BUILD_BIN")"; cp "$C/fixlog" "$BUILD_BIN"; export FIXLOG_DATA=$C/data
echo "== A/B"
CASES=${CASES:-"TC:CA-HepTh TC:fe_body TC:usroads SG:CA-HepTh SG:fe_body"} \
REPS=1 VARIANTS=${VARIANTS:-"old new"} timeout ${T_AB:-80} bash $C/ab.sh 2> $OUT/ab.err | tee $OUT/ab.log
echo "== where SG's peak is"
W=/tmp/ab; timeout 20 $C/fixlog run $W/SG.dl -F $W/CA-HepTh --backend cuda --stats 2>&1 | grep -E 'sg|evaluation|peak' | head -5
echo "== tests (CUDA)"
for t in ${SUITES:-backends real_data}; do extra=""; lim=70; [ $t = real_data ] && { extra=--include-ignored; lim=50; }; [ $t = backends ] && lim=20
  FIXLOG_TEST_BACKEND=cuda timeout $lim $C/tests/$t $extra --test-threads 2 > $OUT/test-$t.log 2>&1
  echo "$t rc=$? $(grep -E '^test result' $OUT/test-$t.log | tail -1)"; grep -E 'panicked|FAILED' $OUT/test-$t.log | head -5
done
[ -n "${CONFORMANCE:-}" ] && echo "== conformance" && timeout 80 $C/cuda_conformance > $OUT/conf.log 2>&1; echo "conf rc=$?"
[ -n "${CONFORMANCE:-}" ] && { grep -E '^FAIL|conformance on' $OUT/conf.log | head; grep -c '^PASS' $OUT/conf.log; }
tar czf $OUT/kernels.tgz -C /tmp/fixlog-kernels . 2>/dev/null
date -u

#!/bin/bash
# Prepared for the Xeon host of the lent H200 and not run this session (no device time left):
# the `att` case of target/devrun/run.sh, the carry laid out as in
# docs/bench-runs/2026-12-03c/README.md (lectern.xz, model-test.xz = the lectern-model lib
# test binary, blas/, cv-ref.tgz, whl/, refbench/, bench/passage-132.txt, libasound.so.2).
# It runs the AVX-512 attention core's unit tests on that CPU, `bench --stage flow
# --breakdown-frames 1208` (both attention cores) beside upstream's DiT profile, then `smoke`
# f32 against upstream two jobs at a time (cores swapped between rounds) while time remains.
set -u
D=$(pwd)/target/devrun
W=/tmp/w; mkdir -p $W; cd $W
xz -dc $D/lectern.xz > lectern; chmod +x lectern
cp $D/libasound.so.2 $W/
TIME=""; [ -x /usr/bin/time ] && TIME="/usr/bin/time -f %e_wall_%U_user_%S_sys_%R_minflt"
tar xzf $D/cv-ref.tgz -C /tmp
PY=/opt/torch/.venv/bin/python; [ -x $PY ] || PY=python3
$PY -m pip install --no-index --no-deps --target /tmp/site $D/whl/*.whl > $OUT/pip.txt 2>&1
export PYTHONPATH=/tmp/site COSYVOICE_REF=/tmp/cv-ref
B=/tmp/blas; cp -r $D/blas $B; xz -d $B/*.xz; export LD_LIBRARY_PATH=$W:$B
pack() { (cd $OUT && tar czf all.tgz.new *.txt *.json *.err 2>/dev/null; mv all.tgz.new all.tgz); }
xz -dc $D/model-test.xz > mt; chmod +x mt
START=$(date +%s)
taskset -c 6,7 ./mt attention > $OUT/t-model-attention.txt 2>&1
taskset -c 2,3 ./lectern bench --stage flow --quick --threads 2 --breakdown-frames 1208 > $OUT/s-le-flow.txt 2>&1 &
taskset -c 4,5 $PY $D/refbench/upstream_dit_profile.py --frames 1208 --threads 2 > $OUT/s-up-dit-f32.txt 2>&1 &
wait; pack
for r in 1 2 3; do
  [ $(( $(date +%s) - START )) -gt 330 ] && break
  if [ $r = 2 ]; then A=4,5; U=2,3; else A=2,3; U=4,5; fi
  taskset -c $A $TIME ./lectern bench --workload smoke --threads 2 --json --no-lead-sentence > $OUT/r$r-le-f32.json 2> $OUT/r$r-le-f32.err &
  taskset -c $U $PY $D/refbench/upstream_bench.py --workload smoke --threads 2 > $OUT/r$r-up-f32.json 2> $OUT/r$r-up-f32.err &
  wait; pack
done

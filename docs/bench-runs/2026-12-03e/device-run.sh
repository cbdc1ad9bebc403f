#!/bin/bash
# usage: run.sh <experiment>
# The cases this session ran (docs/bench-runs/2026-12-03e/README.md), as they ran; the
# earlier cases of the same script are in the earlier sessions' bench-runs folders.
set -u
REPO=$(pwd); D=$(pwd)/target/devrun
W=/tmp/w; mkdir -p $W; cd $W
xz -dc $D/lectern.xz > lectern; chmod +x lectern
cp $D/libasound.so.2 $W/; export LD_LIBRARY_PATH=$W
lscpu > $OUT/lscpu.txt 2>&1
TIME=""; [ -x /usr/bin/time ] && TIME="/usr/bin/time -f %e_wall_%U_user_%S_sys_%R_minflt"
TUN=glibc.malloc.mmap_max=0:glibc.malloc.trim_threshold=1073741824:glibc.malloc.arena_max=1
le() { # cores name tunables? args...
  local cores=$1 name=$2 tun=$3; shift 3
  if [ $tun = 1 ]; then
    GLIBC_TUNABLES=$TUN taskset -c $cores $TIME ./lectern bench --workload smoke --threads 2 --json --no-lead-sentence "$@" > $OUT/$name.json 2> $OUT/$name.err
  else
    taskset -c $cores $TIME ./lectern bench --workload smoke --threads 2 --json --no-lead-sentence "$@" > $OUT/$name.json 2> $OUT/$name.err
  fi
}
case "$1" in
bf16one)
  tar xzf $D/cv-ref.tgz -C /tmp
  PY=/opt/torch/.venv/bin/python; [ -x $PY ] || PY=python3
  $PY -m pip install --no-index --no-deps --target /tmp/site $D/whl/*.whl > $OUT/pip.txt 2>&1
  export PYTHONPATH=/tmp/site COSYVOICE_REF=/tmp/cv-ref
  B=/tmp/blas; mkdir -p $B; cp $D/blas/* $B/; xz -df $B/*.xz; export LD_LIBRARY_PATH=$W:$B
  le 2,3 r1-le-bf16 0 --flow-matmul bf16 &
  taskset -c 4,5 $PY $D/refbench/upstream_bench.py --workload smoke --threads 2 > $OUT/r1-up-f32.json 2> $OUT/r1-up-f32.err &
  taskset -c 6,7 $PY $D/refbench/upstream_bench_bf16flow.py --workload smoke --threads 2 > $OUT/r1-up-bf16.json 2> $OUT/r1-up-bf16.err &
  wait
  ;;
bf16final)
  tar xzf $D/cv-ref.tgz -C /tmp
  PY=/opt/torch/.venv/bin/python; [ -x $PY ] || PY=python3
  $PY -m pip install --no-index --no-deps --target /tmp/site $D/whl/*.whl > $OUT/pip.txt 2>&1
  export PYTHONPATH=/tmp/site COSYVOICE_REF=/tmp/cv-ref
  B=/tmp/blas; cp -r $D/blas $B; xz -d $B/*.xz; export LD_LIBRARY_PATH=$W:$B
  pack() { (cd $OUT && tar czf all.tgz.new *.txt *.json *.err 2>/dev/null; mv all.tgz.new all.tgz); }
  START=$(date +%s)
  for r in 1 2; do
    [ $(( $(date +%s) - START )) -gt 200 ] && break
    if [ $r = 2 ]; then A=4,5; A2=8,9; U=2,3; U2=6,7; else A=2,3; A2=6,7; U=4,5; U2=8,9; fi
    le $A r$r-le-bf16-a 0 --flow-matmul bf16 &
    le $A2 r$r-le-bf16-b 0 --flow-matmul bf16 &
    taskset -c $U $PY $D/refbench/upstream_bench.py --workload smoke --threads 2 > $OUT/r$r-up-f32-a.json 2> $OUT/r$r-up-f32-a.err &
    taskset -c $U2 $PY $D/refbench/upstream_bench.py --workload smoke --threads 2 > $OUT/r$r-up-f32-b.json 2> $OUT/r$r-up-f32-b.err &
    taskset -c 10,11 $PY $D/refbench/upstream_bench_bf16flow.py --workload smoke --threads 2 > $OUT/r$r-up-bf16.json 2> $OUT/r$r-up-bf16.err &
    wait; pack
    echo "round $r done $(( $(date +%s) - START )) s" >> $OUT/timing.txt
  done
  pack
  ;;
final)
  tar xzf $D/cv-ref.tgz -C /tmp
  PY=/opt/torch/.venv/bin/python; [ -x $PY ] || PY=python3
  $PY -m pip install --no-index --no-deps --target /tmp/site $D/whl/*.whl > $OUT/pip.txt 2>&1
  export PYTHONPATH=/tmp/site COSYVOICE_REF=/tmp/cv-ref
  B=/tmp/blas; cp -r $D/blas $B; xz -d $B/*.xz; export LD_LIBRARY_PATH=$W:$B
  pack() { (cd $OUT && tar czf all.tgz.new *.txt *.json *.err 2>/dev/null; mv all.tgz.new all.tgz); }
  START=$(date +%s)
  taskset -c 2,3 ./lectern bench --stage flow --quick --threads 2 --breakdown-frames 1208 > $OUT/s-le-flow.txt 2>&1 &
  taskset -c 4,5 $PY $D/refbench/upstream_dit_profile.py --frames 1208 --threads 2 > $OUT/s-up-dit-f32.txt 2>&1 &
  taskset -c 6,7 ./lectern bench --stage hift --threads 2 > $OUT/s-le-hift.txt 2>&1 &
  taskset -c 8,9 $PY $D/refbench/upstream_hift_profile.py --threads 2 > $OUT/s-up-hift.json 2> $OUT/s-up-hift.err &
  wait; pack
  echo "stage phase $(( $(date +%s) - START )) s" > $OUT/timing.txt
  for r in 1 2 3; do
    [ $(( $(date +%s) - START )) -gt 360 ] && break
    if [ $r = 2 ]; then A=4,5; A2=8,9; U=2,3; U2=6,7; else A=2,3; A2=6,7; U=4,5; U2=8,9; fi
    le $A r$r-le-f32-a 0 &
    le $A2 r$r-le-f32-b 0 &
    taskset -c $U $PY $D/refbench/upstream_bench.py --workload smoke --threads 2 > $OUT/r$r-up-f32-a.json 2> $OUT/r$r-up-f32-a.err &
    taskset -c $U2 $PY $D/refbench/upstream_bench.py --workload smoke --threads 2 > $OUT/r$r-up-f32-b.json 2> $OUT/r$r-up-f32-b.err &
    wait; pack
    echo "round $r done $(( $(date +%s) - START )) s" >> $OUT/timing.txt
  done
  pack
  ;;
att)
  tar xzf $D/cv-ref.tgz -C /tmp
  PY=/opt/torch/.venv/bin/python; [ -x $PY ] || PY=python3
  $PY -m pip install --no-index --no-deps --target /tmp/site $D/whl/*.whl > $OUT/pip.txt 2>&1
  export PYTHONPATH=/tmp/site COSYVOICE_REF=/tmp/cv-ref
  B=/tmp/blas; cp -r $D/blas $B; xz -d $B/*.xz; export LD_LIBRARY_PATH=$W:$B
  env | grep -i openblas > $OUT/env-openblas.txt
  pack() { (cd $OUT && tar czf all.tgz.new *.txt *.json *.err 2>/dev/null; mv all.tgz.new all.tgz); }
  xz -dc $D/model-test.xz > mt; chmod +x mt
  START=$(date +%s)
  taskset -c 6,7 ./mt attention > $OUT/t-model-attention.txt 2>&1
  taskset -c 2,3 ./lectern bench --stage flow --quick --threads 2 --breakdown-frames 1208 > $OUT/s-le-flow.txt 2>&1 &
  taskset -c 4,5 $PY $D/refbench/upstream_dit_profile.py --frames 1208 --threads 2 > $OUT/s-up-dit-f32.txt 2>&1 &
  taskset -c 8,9 ./lectern bench --stage hift --threads 2 > $OUT/s-le-hift.txt 2>&1 &
  wait; pack
  for r in 1 2 3; do
    [ $(( $(date +%s) - START )) -gt 330 ] && break
    if [ $r = 2 ]; then A=4,5; U=2,3; else A=2,3; U=4,5; fi
    le $A r$r-le-f32 0 &
    taskset -c $U $PY $D/refbench/upstream_bench.py --workload smoke --threads 2 > $OUT/r$r-up-f32.json 2> $OUT/r$r-up-f32.err &
    wait
    pack
  done
  ;;
esac

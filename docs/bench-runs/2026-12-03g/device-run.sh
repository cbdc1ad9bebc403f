#!/bin/bash
# usage: run.sh <experiment>
set -u
REPO=$(pwd); D=$(pwd)/target/devrun
W=/tmp/w; mkdir -p $W; cd $W
cp $D/libasound.so.2 $W/; export LD_LIBRARY_PATH=$W
lscpu > $OUT/lscpu.txt 2>&1
TIME=""; [ -x /usr/bin/time ] && TIME="/usr/bin/time -f %e_wall_%U_user_%S_sys_%R_minflt"
pack() { (cd $OUT && tar czf all.tgz.new *.txt *.json *.err 2>/dev/null; mv all.tgz.new all.tgz); }
le() { # cores name args...
  local cores=$1 name=$2; shift 2
  taskset -c $cores $TIME ./lectern bench --workload smoke --threads 2 --json --no-lead-sentence "$@" > $OUT/$name.json 2> $OUT/$name.err
}
setup_py() {
  tar xzf $D/cv-ref.tgz -C /tmp
  PY=/opt/torch/.venv/bin/python; [ -x $PY ] || PY=python3
  $PY -m pip install --no-index --no-deps --target /tmp/site $D/whl/*.whl > $OUT/pip.txt 2>&1
  export PYTHONPATH=/tmp/site COSYVOICE_REF=/tmp/cv-ref
  B=/tmp/blas; mkdir -p $B; cp $D/blas/* $B/; xz -df $B/*.xz; export LD_LIBRARY_PATH=$W:$B
}
case "$1" in
smoke2)
  START=$(date +%s)
  [ -x lectern ] || { xz -dc $D/lectern.xz > lectern; chmod +x lectern; }
  setup_py
  le 4,5 r2-le-f32 &
  taskset -c 2,3 $PY $D/refbench/upstream_bench.py --workload smoke --threads 2 > $OUT/r2-up-f32.json 2> $OUT/r2-up-f32.err &
  wait
  echo "smoke $(( $(date +%s) - START )) s" >> $OUT/timing.txt
  pack
  ;;
smoke)
  START=$(date +%s)
  xz -dc $D/lectern.xz > lectern; chmod +x lectern
  setup_py
  taskset -c 2,3 ./lectern bench --stage hift --quick --threads 2 > $OUT/s-le-hift.txt 2>&1
  echo "hift $(( $(date +%s) - START )) s" >> $OUT/timing.txt
  pack
  le 2,3 r1-le-f32 &
  taskset -c 4,5 $PY $D/refbench/upstream_bench.py --workload smoke --threads 2 > $OUT/r1-up-f32.json 2> $OUT/r1-up-f32.err &
  wait
  echo "smoke $(( $(date +%s) - START )) s" >> $OUT/timing.txt
  pack
  ;;
voc2)
  START=$(date +%s)
  [ -x lectern ] || { xz -dc $D/lectern.xz > lectern; chmod +x lectern; }
  for r in 1 2 3; do
    taskset -c 2,3 ./lectern bench --stage hift --quick --threads 2 > $OUT/voc2-r$r-le.txt 2>&1
    echo "round $r $(( $(date +%s) - START )) s" >> $OUT/timing.txt
    pack
  done
  setup_py
  for r in 1 2; do
    REFBENCH_DIR=$D/refbench taskset -c 2,3 $PY $D/refbench/upstream_hift_profile.py --threads 2 --reps 2 --no-60s > $OUT/voc2-r$r-up.json 2> $OUT/voc2-r$r-up.err
  done
  echo "up $(( $(date +%s) - START )) s" >> $OUT/timing.txt
  pack
  ;;
voc)
  xz -dc $D/model-test.xz > mt; chmod +x mt
  START=$(date +%s)
  taskset -c 2,3 ./mt hift:: > $OUT/t-hift.txt 2>&1
  xz -dc $D/lectern.xz > lectern; chmod +x lectern
  setup_py
  echo "setup $(( $(date +%s) - START )) s" > $OUT/timing.txt
  for r in 1 2; do
    if [ $r = 1 ]; then L=2,3; U=4,5; else L=4,5; U=2,3; fi
    taskset -c $L ./lectern bench --stage hift --quick --threads 2 > $OUT/voc-r$r-le.txt 2>&1 &
    REFBENCH_DIR=$D/refbench taskset -c $U $PY $D/refbench/upstream_hift_profile.py --threads 2 --reps 2 --no-60s > $OUT/voc-r$r-up.json 2> $OUT/voc-r$r-up.err &
    wait; pack
    echo "round $r $(( $(date +%s) - START )) s" >> $OUT/timing.txt
  done
  pack
  ;;
prof)
  xz -dc $D/model-test.xz > mt; chmod +x mt
  START=$(date +%s)
  RAYON_NUM_THREADS=2 taskset -c 2,3 ./mt profile_bf16 --ignored --nocapture > $OUT/prof-1208.txt 2>&1
  RAYON_NUM_THREADS=2 PROF_T=600 taskset -c 2,3 ./mt profile_bf16 --ignored --nocapture > $OUT/prof-600.txt 2>&1
  pack
  taskset -c 2,3 ./mt bf16 > $OUT/t-bf16.txt 2>&1
  taskset -c 2,3 ./mt attention > $OUT/t-attention.txt 2>&1
  RAYON_NUM_THREADS=2 taskset -c 2,3 ./mt profile_bf16 --ignored --nocapture > $OUT/prof-1208-b.txt 2>&1
  echo "prof $(( $(date +%s) - START )) s" > $OUT/timing.txt
  pack
  xz -dc $D/lectern.xz > lectern; chmod +x lectern
  setup_py
  le 2,3 r1-le-bf16-base --flow-matmul bf16 &
  LECTERN_BF16_ATT=qkres,pv64,fexp le 4,5 r1-le-bf16-var --flow-matmul bf16 &
  taskset -c 6,7 $PY $D/refbench/upstream_bench.py --workload smoke --threads 2 > $OUT/r1-up-f32.json 2> $OUT/r1-up-f32.err &
  wait
  echo "smoke $(( $(date +%s) - START )) s" >> $OUT/timing.txt
  pack
  ;;
final)
  xz -dc $D/model-test.xz > mt; chmod +x mt; xz -dc $D/model-test-old.xz > mt-old; chmod +x mt-old
  START=$(date +%s)
  taskset -c 2,3 ./mt bf16 > $OUT/t-bf16.txt 2>&1
  taskset -c 2,3 ./mt attention > $OUT/t-attention.txt 2>&1
  for i in 1 2; do
    RAYON_NUM_THREADS=2 PROF_VARIANTS=base taskset -c 2,3 ./mt-old profile_bf16 --ignored --nocapture 2>&1 | grep variant >> $OUT/prof-old.txt
    RAYON_NUM_THREADS=2 PROF_VARIANTS=base PROF_T=600 taskset -c 2,3 ./mt-old profile_bf16 --ignored --nocapture 2>&1 | grep variant >> $OUT/prof-old.txt
    RAYON_NUM_THREADS=2 taskset -c 2,3 ./mt profile_bf16 --ignored --nocapture 2>&1 | grep variant >> $OUT/prof-new.txt
  done
  echo "tests+prof $(( $(date +%s) - START )) s" > $OUT/timing.txt
  pack
  xz -dc $D/lectern.xz > lectern; chmod +x lectern
  setup_py
  taskset -c 2,3 ./lectern bench --stage flow --quick --threads 2 --flow-matmul bf16 --breakdown-frames 1208 > $OUT/s-le-flow-bf16.txt 2>&1
  echo "stage $(( $(date +%s) - START )) s" >> $OUT/timing.txt
  pack
  for r in 1 2; do
    [ $(( $(date +%s) - START )) -gt 250 ] && break
    if [ $r = 2 ]; then A=4,5; A2=8,9; U=2,3; U2=6,7; else A=2,3; A2=6,7; U=4,5; U2=8,9; fi
    le $A r$r-le-bf16-a --flow-matmul bf16 &
    le $A2 r$r-le-bf16-b --flow-matmul bf16 &
    taskset -c $U $PY $D/refbench/upstream_bench.py --workload smoke --threads 2 > $OUT/r$r-up-f32-a.json 2> $OUT/r$r-up-f32-a.err &
    taskset -c $U2 $PY $D/refbench/upstream_bench.py --workload smoke --threads 2 > $OUT/r$r-up-f32-b.json 2> $OUT/r$r-up-f32-b.err &
    taskset -c 10,11 $PY $D/refbench/upstream_bench_bf16flow.py --workload smoke --threads 2 > $OUT/r$r-up-bf16.json 2> $OUT/r$r-up-bf16.err &
    wait; pack
    echo "round $r done $(( $(date +%s) - START )) s" >> $OUT/timing.txt
  done
  pack
  ;;
three)
  xz -dc $D/model-test.xz > mt; chmod +x mt
  START=$(date +%s)
  for i in 1 2; do
    RAYON_NUM_THREADS=2 taskset -c 2,3 ./mt profile_pack --ignored --nocapture 2>&1 | grep -E "pack|panic" >> $OUT/prof-pack.txt
    RAYON_NUM_THREADS=2 taskset -c 2,3 ./mt profile_weights --ignored --nocapture 2>&1 | grep -E "weights|panic" >> $OUT/prof-weights.txt
    RAYON_NUM_THREADS=2 taskset -c 2,3 ./mt profile_bf16 --ignored --nocapture 2>&1 | grep -E "variant|panic" >> $OUT/prof-new.txt
  done
  echo "prof $(( $(date +%s) - START )) s" >> $OUT/timing.txt
  pack
  xz -dc $D/lectern.xz > lectern; chmod +x lectern
  setup_py
  for r in 1 2; do
    [ $(( $(date +%s) - START )) -gt 100 ] && break
    if [ $r = 2 ]; then A=4,5; U=6,7; UB=2,3; else A=2,3; U=4,5; UB=6,7; fi
    le $A r$r-le-bf16 --flow-matmul bf16 &
    taskset -c $U $PY $D/refbench/upstream_bench.py --workload smoke --threads 2 > $OUT/r$r-up-f32.json 2> $OUT/r$r-up-f32.err &
    taskset -c $UB $PY $D/refbench/upstream_bench_bf16flow.py --workload smoke --threads 2 > $OUT/r$r-up-bf16.json 2> $OUT/r$r-up-bf16.err &
    wait; pack
    echo "round $r done $(( $(date +%s) - START )) s" >> $OUT/timing.txt
  done
  pack
  ;;
esac

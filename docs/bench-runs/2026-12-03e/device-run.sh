#!/bin/bash
# usage: run.sh <experiment>
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
blas3)
  tar xzf $D/cv-ref.tgz -C /tmp
  PY=/opt/torch/.venv/bin/python; [ -x $PY ] || PY=python3
  $PY -m pip install --no-index --no-deps --target /tmp/site $D/whl/*.whl > $OUT/pip.txt 2>&1
  export PYTHONPATH=/tmp/site COSYVOICE_REF=/tmp/cv-ref
  B=/tmp/blas; cp -r $D/blas $B; xz -d $B/*.xz; export LD_LIBRARY_PATH=$W:$B
  env | grep -i openblas > $OUT/env-openblas.txt; rm -f $OUT/*.json $OUT/*.err $OUT/*.txt; env | grep -i openblas > $OUT/env-openblas.txt
  pack() { (cd $OUT && tar czf all.tgz.new *.txt *.json *.err 2>/dev/null; mv all.tgz.new all.tgz); }
  for r in 2; do
    if [ $r = 1 ]; then A=2,3; B2=4,5; else A=4,5; B2=2,3; fi
    le $A r$r-le-f32 0 &
    ( export LECTERN_OPENBLAS=0; le $B2 r$r-le-f32-gemm 0 ) &
    le 6,7 r$r-le-bf16 0 --flow-matmul bf16 &
    taskset -c 10,11 $PY $D/refbench/upstream_bench.py --workload smoke --threads 2 > $OUT/r$r-up-f32.json 2> $OUT/r$r-up-f32.err &
    taskset -c 12,13 $PY $D/refbench/upstream_bench_bf16flow.py --workload smoke --threads 2 > $OUT/r$r-up-bf16.json 2> $OUT/r$r-up-bf16.err &
    wait
    pack
  done
  ;;
blas2)
  tar xzf $D/cv-ref.tgz -C /tmp
  PY=/opt/torch/.venv/bin/python; [ -x $PY ] || PY=python3
  $PY -m pip install --no-index --no-deps --target /tmp/site $D/whl/*.whl > $OUT/pip.txt 2>&1
  export PYTHONPATH=/tmp/site COSYVOICE_REF=/tmp/cv-ref
  B=/tmp/blas; cp -r $D/blas $B; xz -d $B/*.xz; export LD_LIBRARY_PATH=$W:$B
  env | grep -i openblas > $OUT/env-openblas.txt
  pack() { (cd $OUT && tar czf all.tgz.new *.txt *.json *.err 2>/dev/null; mv all.tgz.new all.tgz); }
  for r in 1 2; do
    if [ $r = 1 ]; then A=2,3; B2=4,5; else A=4,5; B2=2,3; fi
    le $A r$r-le-f32-blas 0 &
    ( export LECTERN_OPENBLAS=0; le $B2 r$r-le-f32-gemm 0 ) &
    le 6,7 r$r-le-bf16 0 --flow-matmul bf16 &
    taskset -c 10,11 $PY $D/refbench/upstream_bench.py --workload smoke --threads 2 > $OUT/r$r-up-f32.json 2> $OUT/r$r-up-f32.err &
    taskset -c 12,13 $PY $D/refbench/upstream_bench_bf16flow.py --workload smoke --threads 2 > $OUT/r$r-up-bf16.json 2> $OUT/r$r-up-bf16.err &
    wait
    pack
  done
  taskset -c 2,3 ./lectern bench --stage flow --quick --threads 2 --breakdown-frames 1208 > $OUT/s-le-flow-blas.txt 2>&1 &
  ( export LECTERN_OPENBLAS=0; taskset -c 4,5 ./lectern bench --stage flow --quick --threads 2 --breakdown-frames 1208 > $OUT/s-le-flow-gemm.txt 2>&1 ) &
  taskset -c 6,7 $PY $D/refbench/upstream_dit_profile.py --frames 1208 --threads 2 > $OUT/s-up-dit-f32.txt 2>&1 &
  taskset -c 8,9 ./lectern bench --stage gemm --threads 2 > $OUT/s-le-gemm.txt 2>&1 &
  taskset -c 10,11 $PY $B/torch_gemm.py --threads 2 > $OUT/s-torch-gemm.json 2>&1 &
  wait
  pack
  ;;
blas)
  PY=/opt/torch/.venv/bin/python; [ -x $PY ] || PY=python3
  B=/tmp/blas; cp -r $D/blas $B; xz -d $B/*.xz; export LD_LIBRARY_PATH=$W:$B
  pack() { (cd $OUT && tar czf all.tgz.new *.txt *.json *.err 2>/dev/null; mv all.tgz.new all.tgz); }
  for r in 1 2; do
    for core in default SkylakeX Cooperlake Haswell; do
      if [ $core = default ]; then unset OPENBLAS_CORETYPE; else export OPENBLAS_CORETYPE=$core; fi
      OPENBLAS_NUM_THREADS=2 taskset -c 2,3 $PY $B/blas_gemm.py $B/libopenblas.so.0 x 2416,3176 > $OUT/r$r-blas-$core.json 2> $OUT/r$r-blas-$core.err
    done
    unset OPENBLAS_CORETYPE
    taskset -c 2,3 ./lectern bench --stage gemm --threads 2 > $OUT/r$r-le-gemm.txt 2>&1
    taskset -c 2,3 $PY $B/torch_gemm.py --threads 2 > $OUT/r$r-torch-gemm.json 2> $OUT/r$r-torch-gemm.err
    pack
  done
  ;;
smoke)
  tar xzf $D/cv-ref.tgz -C /tmp
  PY=/opt/torch/.venv/bin/python; [ -x $PY ] || PY=python3
  $PY -m pip install --no-index --no-deps --target /tmp/site $D/whl/*.whl > $OUT/pip.txt 2>&1
  export PYTHONPATH=/tmp/site COSYVOICE_REF=/tmp/cv-ref
  for r in 1 2; do
    if [ $r = 1 ]; then A=2,3; B=4,5; C=6,7; E=8,9; else A=4,5; B=2,3; C=8,9; E=6,7; fi
    le $A r$r-le-bf16-base 0 --flow-matmul bf16 &
    le $B r$r-le-bf16-tun 1 --flow-matmul bf16 &
    le $C r$r-le-f32-base 0 &
    le $E r$r-le-f32-tun 1 &
    taskset -c 10,11 $PY $D/refbench/upstream_bench.py --workload smoke --threads 2 > $OUT/r$r-up-f32.json 2> $OUT/r$r-up-f32.err &
    taskset -c 12,13 $PY $D/refbench/upstream_bench_bf16flow.py --workload smoke --threads 2 > $OUT/r$r-up-bf16.json 2> $OUT/r$r-up-bf16.err &
    wait
  done
  ;;
verify)
  tar xzf $D/cv-ref.tgz -C /tmp
  PY=/opt/torch/.venv/bin/python; [ -x $PY ] || PY=python3
  $PY -m pip install --no-index --no-deps --target /tmp/site $D/whl/*.whl > $OUT/pip.txt 2>&1
  export PYTHONPATH=/tmp/site COSYVOICE_REF=/tmp/cv-ref
  pack() { (cd $OUT && tar czf all.tgz.new *.txt *.json *.err 2>/dev/null; mv all.tgz.new all.tgz); }
  # the AMX unit tests and the fixture bounds with the bf16 kernels the host has
  xz -dc $D/model-test.xz > mt; chmod +x mt
  xz -dc $D/model-it.xz > mit; chmod +x mit
  mkdir -p /work && ln -sfn $REPO /work/main && mkdir -p $REPO/fixtures && tar xzf $D/fix.tgz -C $REPO/fixtures
  taskset -c 2,3 ./mt bf16 > $OUT/t-model-bf16.txt 2>&1
  taskset -c 2,3 ./mit bf16 --nocapture > $OUT/t-model-it-flow.txt 2>&1
  pack
  for r in 1 2; do
    if [ $r = 1 ]; then A=2,3; B=4,5; else A=4,5; B=2,3; fi
    le $A f$r-le-bf16-a 0 --flow-matmul bf16 &
    le $B f$r-le-bf16-b 0 --flow-matmul bf16 &
    le 6,7 f$r-le-f32 0 &
    taskset -c 10,11 $PY $D/refbench/upstream_bench.py --workload smoke --threads 2 > $OUT/f$r-up-f32.json 2> $OUT/f$r-up-f32.err &
    taskset -c 12,13 $PY $D/refbench/upstream_bench_bf16flow.py --workload smoke --threads 2 > $OUT/f$r-up-bf16.json 2> $OUT/f$r-up-bf16.err &
    wait
    pack
  done
  ;;
round2)
  tar xzf $D/cv-ref.tgz -C /tmp
  PY=/opt/torch/.venv/bin/python; [ -x $PY ] || PY=python3
  $PY -m pip install --no-index --no-deps --target /tmp/site $D/whl/*.whl > $OUT/pip.txt 2>&1
  export PYTHONPATH=/tmp/site COSYVOICE_REF=/tmp/cv-ref
  pack() { (cd $OUT && tar czf all.tgz.new *.txt *.json *.err 2>/dev/null; mv all.tgz.new all.tgz); }
  S="bench --stage flow --threads 2 --quick --breakdown-frames 1208"
  taskset -c 2,3 ./lectern $S > $OUT/s-le-flow-f32.txt 2>&1 &
  taskset -c 4,5 ./lectern $S --flow-matmul bf16 > $OUT/s-le-flow-bf16.txt 2>&1 &
  taskset -c 6,7 $PY $D/refbench/upstream_dit_profile.py --frames 1208 --threads 2 > $OUT/s-up-dit-f32.txt 2>&1 &
  taskset -c 8,9 $PY $D/refbench/upstream_dit_profile.py --frames 1208 --threads 2 --bf16 > $OUT/s-up-dit-bf16.txt 2>&1 &
  wait
  pack
  for r in 1 2; do
    if [ $r = 1 ]; then A=2,3; B=4,5; else A=4,5; B=2,3; fi
    le $A f$r-le-bf16-a 0 --flow-matmul bf16 &
    le $B f$r-le-bf16-b 0 --flow-matmul bf16 &
    le 6,7 f$r-le-f32 0 &
    taskset -c 10,11 $PY $D/refbench/upstream_bench.py --workload smoke --threads 2 > $OUT/f$r-up-f32.json 2> $OUT/f$r-up-f32.err &
    taskset -c 12,13 $PY $D/refbench/upstream_bench_bf16flow.py --workload smoke --threads 2 > $OUT/f$r-up-bf16.json 2> $OUT/f$r-up-bf16.err &
    wait
    pack
  done
  ;;
ftz)
  tar xzf $D/cv-ref.tgz -C /tmp
  PY=/opt/torch/.venv/bin/python; [ -x $PY ] || PY=python3
  $PY -m pip install --no-index --no-deps --target /tmp/site $D/whl/*.whl > $OUT/pip.txt 2>&1
  export PYTHONPATH=/tmp/site COSYVOICE_REF=/tmp/cv-ref
  pack() { (cd $OUT && tar czf all.tgz.new *.txt *.json *.err 2>/dev/null; mv all.tgz.new all.tgz); }
  for r in 1 2; do
    if [ $r = 1 ]; then A=2,3; B=4,5; C=6,7; E=8,9; else A=4,5; B=2,3; C=8,9; E=6,7; fi
    le $A z$r-le-f32-base 0 &
    LX_FTZ=1 le $B z$r-le-f32-ftz 0 &
    le $C z$r-le-bf16-base 0 --flow-matmul bf16 &
    LX_FTZ=1 le $E z$r-le-bf16-ftz 0 --flow-matmul bf16 &
    taskset -c 10,11 $PY $D/refbench/upstream_bench.py --workload smoke --threads 2 > $OUT/z$r-up-f32.json 2> $OUT/z$r-up-f32.err &
    wait
    pack
  done
  ;;
stage3)
  tar xzf $D/cv-ref.tgz -C /tmp
  PY=/opt/torch/.venv/bin/python; [ -x $PY ] || PY=python3
  $PY -m pip install --no-index --no-deps --target /tmp/site $D/whl/*.whl > $OUT/pip.txt 2>&1
  export PYTHONPATH=/tmp/site COSYVOICE_REF=/tmp/cv-ref
  (which perf; ls /usr/bin/perf* /usr/lib/linux-tools* 2>&1; cat /proc/sys/kernel/perf_event_paranoid; uname -a) > $OUT/perf-avail.txt 2>&1
  S="bench --stage flow --threads 2 --quick --breakdown-frames 1208"
  taskset -c 2,3 ./lectern $S > $OUT/s-le-flow-f32.txt 2>&1 &
  taskset -c 4,5 ./lectern $S --flow-matmul bf16 > $OUT/s-le-flow-bf16.txt 2>&1 &
  taskset -c 6,7 $PY $D/refbench/upstream_dit_profile.py --frames 1208 --threads 2 > $OUT/s-up-dit-f32.txt 2>&1 &
  taskset -c 8,9 $PY $D/refbench/upstream_dit_profile.py --frames 1208 --threads 2 --bf16 > $OUT/s-up-dit-bf16.txt 2>&1 &
  taskset -c 10,11 ./lectern $S > $OUT/s-le-flow-f32-b.txt 2>&1 &
  wait
  ;;
final2)
  tar xzf $D/cv-ref.tgz -C /tmp
  PY=/opt/torch/.venv/bin/python; [ -x $PY ] || PY=python3
  $PY -m pip install --no-index --no-deps --target /tmp/site $D/whl/*.whl > $OUT/pip.txt 2>&1
  export PYTHONPATH=/tmp/site COSYVOICE_REF=/tmp/cv-ref
  pack() { (cd $OUT && tar czf all.tgz.new *.txt *.json *.err 2>/dev/null; mv all.tgz.new all.tgz); }
  xz -dc $D/model-test.xz > mt; chmod +x mt
  taskset -c 2,3 ./mt cpu_attention > $OUT/t-model-attention.txt 2>&1
  taskset -c 2,3 ./mt bf16 >> $OUT/t-model-attention.txt 2>&1
  pack
  for r in 1 2; do
    if [ $r = 1 ]; then A=2,3; B=4,5; else A=4,5; B=2,3; fi
    le $A g$r-le-bf16-a 0 --flow-matmul bf16 &
    le $B g$r-le-bf16-b 0 --flow-matmul bf16 &
    le 6,7 g$r-le-f32 0 &
    taskset -c 10,11 $PY $D/refbench/upstream_bench.py --workload smoke --threads 2 > $OUT/g$r-up-f32.json 2> $OUT/g$r-up-f32.err &
    taskset -c 12,13 $PY $D/refbench/upstream_bench_bf16flow.py --workload smoke --threads 2 > $OUT/g$r-up-bf16.json 2> $OUT/g$r-up-bf16.err &
    wait
    pack
  done
  ;;
esac
cd $OUT && tar czf all.tgz *.txt *.json *.err 2>/dev/null; rm -f *.txt *.json *.err

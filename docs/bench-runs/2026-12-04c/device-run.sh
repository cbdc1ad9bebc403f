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
unpack() {
  [ -x lectern ] || { xz -dc $D/lectern.xz > lectern; chmod +x lectern; }
  [ -x mt ] || { xz -dc $D/model-test.xz > mt; chmod +x mt; }
}
case "$1" in
gemm)
  START=$(date +%s)
  unpack; setup_py
  taskset -c 2,3 ./mt cpu_gemm > $OUT/t-cpu-gemm.txt 2>&1
  echo "tests $(( $(date +%s) - START )) s" >> $OUT/timing.txt; pack
  for r in 1 2; do
    taskset -c 2,3 ./lectern bench --stage gemm --threads 2 > $OUT/gemm-r$r-le.txt 2>&1
    taskset -c 2,3 $PY $D/refbench/torch_gemm.py --threads 2 > $OUT/gemm-r$r-torch.json 2>&1
    echo "gemm round $r $(( $(date +%s) - START )) s" >> $OUT/timing.txt; pack
  done
  TMP_OWN_GEMM=1 le 2,3 r1-le-own &
  le 4,5 r1-le-blas &
  taskset -c 6,7 $PY $D/refbench/upstream_bench.py --workload smoke --threads 2 > $OUT/r1-up-f32.json 2> $OUT/r1-up-f32.err &
  wait
  echo "smoke $(( $(date +%s) - START )) s" >> $OUT/timing.txt
  pack
  ;;
bf16)
  START=$(date +%s)
  unpack
  for v in "" "TMP_SCRATCH=1 TMP_KCHUNK=4"; do env $v taskset -c 2,3 ./mt bf16_gemm >> $OUT/t-bf16-gemm.txt 2>&1; done
  echo "tests $(( $(date +%s) - START )) s" >> $OUT/timing.txt; pack
  for r in 1 2; do
    i=0
    for v in "X=1" "TMP_SCRATCH=1" "TMP_KCHUNK=16" "TMP_SCRATCH=1 TMP_KCHUNK=16" "TMP_KCHUNK=64" "TMP_SCRATCH=1 TMP_KCHUNK=4"; do
      i=$((i+1))
      echo "$v" > $OUT/bf16-r$r-v$i.txt
      env $v taskset -c 2,3 ./lectern bench --stage gemm --threads 2 >> $OUT/bf16-r$r-v$i.txt 2>&1
      echo "r$r v$i $(( $(date +%s) - START )) s" >> $OUT/timing.txt; pack
      [ $(( $(date +%s) - START )) -gt 520 ] && break 2
    done
  done
  ;;
smoke)
  START=$(date +%s)
  unpack; setup_py
  taskset -c 2,3 ./mt cpu_gemm > $OUT/t-cpu-gemm.txt 2>&1
  taskset -c 2,3 ./lectern config > $OUT/config-default.txt 2>&1
  LECTERN_OPENBLAS=0 taskset -c 2,3 ./lectern config > $OUT/config-own.txt 2>&1
  le 2,3 a-le-blas &
  LECTERN_OPENBLAS=0 le 4,5 a-le-own &
  LECTERN_OPENBLAS=0 LECTERN_AVX2_GEMM=0 le 6,7 a-le-candle &
  taskset -c 8,9 $PY $D/refbench/upstream_bench.py --workload smoke --threads 2 > $OUT/a-up-f32.json 2> $OUT/a-up-f32.err &
  wait
  echo "round a $(( $(date +%s) - START )) s" >> $OUT/timing.txt; pack
  le 2,3 b-le-bf16 --flow-matmul bf16 &
  taskset -c 4,5 $PY $D/refbench/upstream_bench.py --workload smoke --threads 2 > $OUT/b-up-f32.json 2> $OUT/b-up-f32.err &
  taskset -c 6,7 $PY $D/refbench/upstream_bench_bf16flow.py --workload smoke --threads 2 > $OUT/b-up-bf16.json 2> $OUT/b-up-bf16.err &
  wait
  echo "round b $(( $(date +%s) - START )) s" >> $OUT/timing.txt; pack
  ;;
pair)
  # Only all.tgz comes back: the files live in /tmp/o.
  O=/tmp/o; mkdir -p $O; REAL_OUT=$OUT; OUT=$O
  pack() { (cd $O && tar czf $REAL_OUT/all.tgz.new * 2>/dev/null; mv $REAL_OUT/all.tgz.new $REAL_OUT/all.tgz); }
  START=$(date +%s)
  unpack; setup_py
  lscpu > $O/lscpu.txt
  for r in c d; do
    if [ $r = c ]; then A=2,3; B=4,5; C=6,7; E=8,9; else A=4,5; B=2,3; C=8,9; E=6,7; fi
    le $A $r-le-f32 &
    le $C $r-le-bf16 --flow-matmul bf16 &
    taskset -c $B $PY $D/refbench/upstream_bench.py --workload smoke --threads 2 > $O/$r-up-f32.json 2> $O/$r-up-f32.err &
    taskset -c $E $PY $D/refbench/upstream_bench_bf16flow.py --workload smoke --threads 2 > $O/$r-up-bf16.json 2> $O/$r-up-bf16.err &
    wait
    echo "round $r $(( $(date +%s) - START )) s" >> $O/timing.txt; pack
    [ $(( $(date +%s) - START )) -gt 380 ] && break
  done
  pack
  ;;
alone)
  # One job at a time on one pair: Lectern f32, then upstream f32. Only all.tgz comes back.
  O=/tmp/o; mkdir -p $O; REAL_OUT=$OUT; OUT=$O
  pack() { (cd $O && tar czf $REAL_OUT/all.tgz.new * 2>/dev/null; mv $REAL_OUT/all.tgz.new $REAL_OUT/all.tgz); }
  START=$(date +%s)
  unpack; setup_py
  lscpu > $O/lscpu.txt
  le 2,3 e-le-f32
  echo "lectern $(( $(date +%s) - START )) s" >> $O/timing.txt; pack
  taskset -c 2,3 $PY $D/refbench/upstream_bench.py --workload smoke --threads 2 > $O/e-up-f32.json 2> $O/e-up-f32.err
  echo "upstream $(( $(date +%s) - START )) s" >> $O/timing.txt; pack
  ;;
attn)
  # The attention core A/B. Only all.tgz comes back: the files live in /tmp/o.
  O=/tmp/o; mkdir -p $O; REAL_OUT=$OUT; OUT=$O
  pack() { (cd $O && tar czf $REAL_OUT/all.tgz.new * 2>/dev/null; mv $REAL_OUT/all.tgz.new $REAL_OUT/all.tgz); }
  START=$(date +%s)
  unpack
  lscpu > $O/lscpu.txt
  taskset -c 2,3 ./mt attention > $O/t-attention.txt 2>&1
  taskset -c 2,3 ./mt tmp_ab --ignored --nocapture > $O/ab-2,3.txt 2>&1 &
  taskset -c 4,5 ./mt tmp_ab --ignored --nocapture > $O/ab-4,5.txt 2>&1 &
  wait
  echo "tests+ab $(( $(date +%s) - START )) s" >> $O/timing.txt; pack
  taskset -c 2,3 ./lectern bench --stage flow --quick --threads 2 --breakdown-frames 1208 > $O/flow-new.txt 2>&1 &
  TMP_ATTN_PREV=1 taskset -c 4,5 ./lectern bench --stage flow --quick --threads 2 --breakdown-frames 1208 > $O/flow-prev.txt 2>&1 &
  wait
  echo "flow stage $(( $(date +%s) - START )) s" >> $O/timing.txt; pack
  setup_py
  for r in f g; do
    if [ $r = f ]; then A=2,3; B=4,5; C=6,7; else A=4,5; B=2,3; C=8,9; fi
    le $A $r-le-new &
    TMP_ATTN_PREV=1 le $B $r-le-prev &
    taskset -c $C $PY $D/refbench/upstream_bench.py --workload smoke --threads 2 > $O/$r-up-f32.json 2> $O/$r-up-f32.err &
    wait
    echo "round $r $(( $(date +%s) - START )) s" >> $O/timing.txt; pack
    [ $(( $(date +%s) - START )) -gt 330 ] && break
  done
  pack
  ;;
alone2)
  # One job at a time on cores 2,3: Lectern f32, upstream f32, twice. Only all.tgz comes back.
  O=/tmp/o; mkdir -p $O; REAL_OUT=$OUT; OUT=$O
  pack() { (cd $O && tar czf $REAL_OUT/all.tgz.new * 2>/dev/null; mv $REAL_OUT/all.tgz.new $REAL_OUT/all.tgz); }
  START=$(date +%s)
  unpack; setup_py
  lscpu > $O/lscpu.txt
  for r in h i; do
    le 2,3 $r-le-f32
    echo "$r lectern $(( $(date +%s) - START )) s" >> $O/timing.txt; pack
    taskset -c 2,3 $PY $D/refbench/upstream_bench.py --workload smoke --threads 2 > $O/$r-up-f32.json 2> $O/$r-up-f32.err
    echo "$r upstream $(( $(date +%s) - START )) s" >> $O/timing.txt; pack
  done
  ;;
stages)
  # Stage benches one at a time on cores 2,3, then smoke upstream first. Only all.tgz comes back.
  O=/tmp/o; mkdir -p $O; REAL_OUT=$OUT; OUT=$O
  pack() { (cd $O && tar czf $REAL_OUT/all.tgz.new * 2>/dev/null; mv $REAL_OUT/all.tgz.new $REAL_OUT/all.tgz); }
  START=$(date +%s)
  unpack; setup_py
  lscpu > $O/lscpu.txt
  taskset -c 2,3 ./lectern bench --stage flow --quick --threads 2 --breakdown-frames 1208 > $O/s-le-flow.txt 2>&1
  echo "le flow $(( $(date +%s) - START )) s" >> $O/timing.txt; pack
  taskset -c 2,3 $PY $D/refbench/upstream_dit_profile.py --frames 1208 --threads 2 > $O/s-up-dit.txt 2>&1
  echo "up dit $(( $(date +%s) - START )) s" >> $O/timing.txt; pack
  taskset -c 2,3 ./lectern bench --stage hift --threads 2 > $O/s-le-hift.txt 2>&1
  echo "le hift $(( $(date +%s) - START )) s" >> $O/timing.txt; pack
  taskset -c 2,3 $PY $D/refbench/upstream_hift_profile.py --threads 2 > $O/s-up-hift.json 2> $O/s-up-hift.err
  echo "up hift $(( $(date +%s) - START )) s" >> $O/timing.txt; pack
  if [ $(( $(date +%s) - START )) -lt 240 ]; then
    taskset -c 2,3 $PY $D/refbench/upstream_bench.py --workload smoke --threads 2 > $O/j-up-f32.json 2> $O/j-up-f32.err
    echo "j upstream $(( $(date +%s) - START )) s" >> $O/timing.txt; pack
    le 2,3 j-le-f32
    echo "j lectern $(( $(date +%s) - START )) s" >> $O/timing.txt; pack
  fi
  ;;
stages2)
  # The stage benches again, upstream first. Only all.tgz comes back.
  O=/tmp/o2; mkdir -p $O; REAL_OUT=$OUT; OUT=$O
  pack() { (cd $O && tar czf $REAL_OUT/all.tgz.new * 2>/dev/null; mv $REAL_OUT/all.tgz.new $REAL_OUT/all.tgz); }
  START=$(date +%s)
  unpack; setup_py
  lscpu > $O/lscpu.txt
  taskset -c 2,3 $PY $D/refbench/upstream_dit_profile.py --frames 1208 --threads 2 > $O/s2-up-dit.txt 2>&1
  echo "up dit $(( $(date +%s) - START )) s" >> $O/timing.txt; pack
  taskset -c 2,3 ./lectern bench --stage flow --quick --threads 2 --breakdown-frames 1208 > $O/s2-le-flow.txt 2>&1
  echo "le flow $(( $(date +%s) - START )) s" >> $O/timing.txt; pack
  taskset -c 2,3 $PY $D/refbench/upstream_hift_profile.py --threads 2 --no-60s > $O/s2-up-hift.json 2> $O/s2-up-hift.err
  echo "up hift $(( $(date +%s) - START )) s" >> $O/timing.txt; pack
  taskset -c 2,3 ./lectern bench --stage hift --threads 2 > $O/s2-le-hift.txt 2>&1
  echo "le hift $(( $(date +%s) - START )) s" >> $O/timing.txt; pack
  ;;
alt)
  # Stage benches alternated on four pairs at once: flow on 2,3 (Lectern first) and 4,5
  # (upstream first), the vocoder on 6,7 and 8,9 likewise. Only all.tgz comes back.
  O=/tmp/o; mkdir -p $O; REAL_OUT=$OUT; OUT=$O
  pack() { (cd $O && tar czf $REAL_OUT/all.tgz.new * 2>/dev/null; mv $REAL_OUT/all.tgz.new $REAL_OUT/all.tgz); }
  START=$(date +%s)
  unpack; setup_py
  lscpu > $O/lscpu.txt
  flowle() { taskset -c $1 ./lectern bench --stage flow --quick --threads 2 --breakdown-frames 1208 > $O/$2.txt 2>&1; }
  flowup() { taskset -c $1 $PY $D/refbench/upstream_dit_profile.py --frames 1208 --threads 2 > $O/$2.txt 2>&1; }
  hiftle() { taskset -c $1 ./lectern bench --stage hift --quick --threads 2 > $O/$2.txt 2>&1; }
  hiftup() { taskset -c $1 $PY $D/refbench/upstream_hift_profile.py --threads 2 --no-60s > $O/$2.json 2> $O/$2.err; }
  seq_jobs() {
    local cores=$1 deadline=$2 i=0; shift 2
    for j in "$@"; do
      i=$((i+1)); [ $(( $(date +%s) - START )) -gt $deadline ] && break
      $j $cores p${cores/,/-}-$i-$j
      echo "$cores $i $j $(( $(date +%s) - START )) s" >> $O/timing.txt
    done
  }
  echo "setup $(( $(date +%s) - START )) s" >> $O/timing.txt
  [ -n "${ALONE:-}" ] && { seq_jobs 2,3 ${FLOW_DEADLINE:-380} flowle flowup flowle flowup flowle flowup flowle flowup flowle flowup flowle flowup; wait; pack; exit 0; }
  seq_jobs 2,3 ${FLOW_DEADLINE:-380} flowle flowup flowle flowup flowle flowup flowle flowup flowle flowup flowle flowup &
  seq_jobs 4,5 ${FLOW_DEADLINE:-380} flowup flowle flowup flowle flowup flowle flowup flowle flowup flowle flowup flowle &
  [ -z "${NO_HIFT:-}" ] && seq_jobs 6,7 ${HIFT_DEADLINE:-420} hiftle hiftup hiftle hiftup hiftle hiftup hiftle hiftup hiftle hiftup hiftle hiftup &
  [ -z "${NO_HIFT:-}" ] && seq_jobs 8,9 ${HIFT_DEADLINE:-420} hiftup hiftle hiftup hiftle hiftup hiftle hiftup hiftle hiftup hiftle hiftup hiftle &
  while [ -n "$(jobs -r)" ]; do sleep 20; pack; done
  wait; pack
  ;;
cblas)
  # sgemm of BLIS, OpenBLAS (SkylakeX) and torch (MKL) at the DiT's shapes, alone on 2,3.
  setup_py
  mkdir -p /tmp/blis; xz -dc $D/blis/libblis.so.4.xz > /tmp/blis/libblis.so.4
  for r in 1 2; do
    OPENBLAS_CORETYPE=SkylakeX OPENBLAS_THREAD_TIMEOUT=4 BLIS_NUM_THREADS=2 taskset -c 2,3 $PY $D/refbench/cblas_probe.py blis=/tmp/blis/libblis.so.4 openblas=/tmp/blas/libopenblas.so.0 > $OUT/cblas-r$r.txt 2>&1
    OPENBLAS_CORETYPE=SkylakeX OPENBLAS_THREAD_TIMEOUT=4 BLIS_NUM_THREADS=2 taskset -c 2,3 $PY $D/refbench/cblas_probe.py openblas=/tmp/blas/libopenblas.so.0 blis=/tmp/blis/libblis.so.4 > $OUT/cblas-r${r}b.txt 2>&1
  done
  ;;
esac

#!/bin/bash
# alternated smoke on this Zen 3: main (portable core) vs new (AVX2 core, chunked P·V), upstream twice
O=/tmp/ab2; i=0
up() { COSYVOICE_REF=/tmp/cv-ref env -u OPENBLAS_CORETYPE /tmp/cv-venv/bin/python /work/shared/refbench/upstream_bench.py --workload smoke --threads 2 > $O/$1-up.json 2> $O/$1-up.err; }
for b in main new up new main up main new; do
  i=$((i+1))
  if [ $b = up ]; then up $i; else
    bin=/tmp/lectern-main; [ $b = new ] && bin=/tmp/lectern-avx2c
    $bin bench --workload smoke --threads 2 --json --no-lead-sentence > $O/$i-$b.json 2> $O/$i-$b.err
  fi
  echo "$i $b $(date +%T)" >> $O/progress
done
echo done >> $O/progress
O=/tmp/ab2; i=8
for b in new main main new new main; do
  i=$((i+1))
  bin=/tmp/lectern-main; [ $b = new ] && bin=/tmp/lectern-avx2c
  $bin bench --workload smoke --threads 2 --json --no-lead-sentence > $O/$i-$b.json 2> $O/$i-$b.err
  echo "$i $b $(date +%T)" >> $O/progress
done
echo done2 >> $O/progress

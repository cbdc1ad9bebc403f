#!/bin/bash
# alternated smoke: main, new, new, main, main, new
cd /work/main
O=/tmp/ab; mkdir -p $O
i=0
for b in main new new main main new; do
  i=$((i+1))
  bin=/tmp/lectern-main; [ $b = new ] && bin=/tmp/lectern-avx2att
  $bin bench --workload smoke --threads 2 --json --no-lead-sentence > $O/$i-$b.json 2> $O/$i-$b.err
done
echo done > $O/done

#!/bin/bash
# before (main ef30cab) and final (blockmax branch) TestSearchPerf at each size, alternating
for i in 1 2; do
  for n in 10 30 100 300; do
    for v in before final10; do
      echo "=== $v ${n}k run $i $(uptime)"
      HINDSIGHT_SEARCHPERF_DIR=/tmp/bm-sp$n HINDSIGHT_SEARCHPERF_SESSIONS=${n}000 /tmp/bm-$v-index.test -test.run 'SearchPerf$' -test.v -test.timeout 1h 2>&1 | grep -E 'search/|warm|cache:|FAIL|median'
    done
  done
done
echo DONE

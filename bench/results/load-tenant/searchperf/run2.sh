#!/bin/bash
# ABAB runs of TestSearchPerf on the same 300k-session index (4 users), before (a4e3123) and after (tenant branch).
cd DIR
for i in $(seq 1 ${PAIRS:-3}); do
  for v in before after; do
    echo "== $v run $i $(date -u +%H:%M:%S) load: $(cut -d' ' -f1-3 /proc/loadavg)"
    HINDSIGHT_SEARCHPERF_DIR=${SPDIR:-DIR/sp300k} HINDSIGHT_SEARCHPERF_SESSIONS=300000 HINDSIGHT_SEARCHPERF_ROUNDS=${ROUNDS:-5} HINDSIGHT_SEARCHPERF_QUERIES=300 \
      ./index-$v.test -test.run 'TestSearchPerf$' -test.v -test.timeout 1h 2>&1 | grep -E "warm-up|search/|block cache|ok|FAIL"
    echo "   load after: $(cut -d' ' -f1-3 /proc/loadavg)"
  done
done

#!/bin/bash
# copyrss.sh BIN BACKEND ROWS KEYS: a fresh streamdb server (--pprof), a
# table s (k BIGINT, v BIGINT) under SELECT k, count(*), sum(v) FROM s
# GROUP BY k with state.backend BACKEND (memory or pebble), one COPY of
# ROWS random rows over KEYS keys (awk, seed 7), then it waits for the view
# to be complete. Prints the COPY's and the view's times, the server's peak
# RSS (VmHWM), the largest Go heap in use seen on /metrics (sampled every
# 0.25 s) and keeps the heap profile taken at the highest RSS seen, for
# go tool pprof -sample_index=inuse_space BIN FILE. Needs psql and curl.
# Ports 55510/55511; the data file is kept in /tmp for the next run.
set -e
BIN=$(realpath "$1"); BE=$2; ROWS=${3:-10000000}; KEYS=${4:-1000}
DIR=$(mktemp -d)
trap 'kill $SAMP $PID 2>/dev/null; rm -rf "$DIR/data"' EXIT
DATA=/tmp/copyrss-$ROWS-$KEYS.tsv
[ -s "$DATA" ] || awk -v n="$ROWS" -v k="$KEYS" 'BEGIN{srand(7); for(i=0;i<n;i++) printf "%d\t%d\n", int(rand()*k), int(rand()*1000000)}' >"$DATA"
"$BIN" --data-dir "$DIR/data" --listen 127.0.0.1:55510 --http 127.0.0.1:55511 --pprof --log-level warn >"$DIR/log.txt" 2>&1 &
PID=$!
URL="postgres://streamdb@127.0.0.1:55510/streamdb?sslmode=disable"
for _ in $(seq 100); do psql -X -qAt "$URL" -c 'SELECT 1' >/dev/null 2>&1 && break; sleep 0.2; done
psql -X -qAt "$URL" -c "SET state.backend = '$BE'" -c "CREATE TABLE s (k BIGINT, v BIGINT)" \
  -c "CREATE MATERIALIZED VIEW mv AS SELECT k, count(*) AS c, sum(v) AS sv FROM s GROUP BY k"
field() { awk -v f="$1:" '$1 == f {print int($2/1024)}' /proc/$PID/status; }
echo 0 >"$DIR/heapmax"
(
  best=0; hb=0
  while kill -0 $PID 2>/dev/null; do
    r=$(field VmRSS)
    h=$(curl -s http://127.0.0.1:55511/metrics | awk '/^go_memstats_heap_inuse_bytes/{printf "%d", $2/1048576}')
    if [ -n "$h" ] && [ "$h" -gt "$hb" ]; then hb=$h; echo "$h" >"$DIR/heapmax"; fi
    if [ "$r" -gt "$best" ]; then
      best=$r
      curl -s -o "$DIR/heap.tmp" http://127.0.0.1:55511/debug/pprof/heap && mv "$DIR/heap.tmp" "$DIR/heap.pb.gz" && echo "$r" >"$DIR/heaprss"
    fi
    sleep 0.25
  done
) &
SAMP=$!
load0=$(cut -d' ' -f1-3 /proc/loadavg)
t0=$(date +%s%N)
psql -X -qAt "$URL" -c "COPY s FROM STDIN" <"$DATA"
t1=$(date +%s%N)
for _ in $(seq 1200); do
  [ "$(psql -X -qAt "$URL" -c 'SELECT coalesce(sum(c), 0) FROM mv')" = "$ROWS" ] && break
  sleep 0.5
done
t2=$(date +%s%N)
printf '%s %d rows, %d keys: COPY %.1f s, view complete %.1f s; peak RSS %d MB, peak heap in use %d MB (sampled); heap profile at RSS %d MB: %s; load average %s -> %s\n' \
  "$BE" "$ROWS" "$KEYS" "$(echo "($t1-$t0)/1000000000" | bc -l)" "$(echo "($t2-$t0)/1000000000" | bc -l)" \
  "$(field VmHWM)" "$(cat "$DIR/heapmax")" "$(cat "$DIR/heaprss" 2>/dev/null || echo 0)" "$DIR/heap.pb.gz" "$load0" "$(cut -d' ' -f1-3 /proc/loadavg)"

#!/bin/bash
# firstrun.sh BIN [ENV=VALUE ...]: a fresh streamdb server (new data
# directory, new process), then three runs of CREATE TABLE + GROUP BY view,
# psql \copy of 2M (BIGINT, BIGINT) rows, CHECKPOINT; prints each run's wall
# time, the server's user and system CPU and its minor page faults, read
# from /proc. Needs psql. Ports 55500/55501.
set -e
BIN=$(realpath "$1"); shift
DIR=$(mktemp -d)
trap 'kill $PID 2>/dev/null; rm -rf "$DIR"' EXIT
python3 - "$DIR/rows.txt" <<'PY'
import random, sys
r = random.Random(5)
with open(sys.argv[1], 'w') as f:
    for _ in range(2_000_000):
        f.write('%d\t%d\n' % (r.randrange(1000), r.randrange(1_000_000)))
PY
env "$@" "$BIN" --data-dir "$DIR/data" --listen 127.0.0.1:55500 --http 127.0.0.1:55501 >"$DIR/log.txt" 2>&1 &
PID=$!
for _ in $(seq 50); do psql -X -q -h 127.0.0.1 -p 55500 -U streamdb streamdb -c 'SELECT 1' >/dev/null 2>&1 && break; sleep 0.1; done
st() { awk '{print $10, $14, $15}' /proc/$PID/stat; }
tick=$((1000 / $(getconf CLK_TCK)))
for i in 1 2 3; do
  psql -X -q -h 127.0.0.1 -p 55500 -U streamdb streamdb \
    -c "CREATE TABLE s$i (k BIGINT, v BIGINT)" \
    -c "CREATE MATERIALIZED VIEW v$i AS SELECT k, count(*) c, sum(v) s FROM s$i GROUP BY k"
  read -r f0 u0 s0 < <(st); t0=$(date +%s%N)
  psql -X -q -h 127.0.0.1 -p 55500 -U streamdb streamdb -c "\\copy s$i from $DIR/rows.txt" -c "CHECKPOINT" >/dev/null
  t1=$(date +%s%N); read -r f1 u1 s1 < <(st)
  n=$(psql -X -At -h 127.0.0.1 -p 55500 -U streamdb streamdb -c "SELECT sum(c) FROM v$i")
  echo "run $i: COPY + CHECKPOINT $(( (t1-t0)/1000000 )) ms, view counts $n rows; server user $(( (u1-u0)*tick )) ms, sys $(( (s1-s0)*tick )) ms, minor faults $((f1-f0))"
done

package sqllogic

import (
	"fmt"
	"math/rand/v2"
	"strings"
	"testing"
	"time"

	"github.com/jackc/pgx/v5"
)

// owvPart is a total order inside each partition (id is the key), so every
// row-position function is deterministic and comparable with PostgreSQL.
const owvPart = "PARTITION BY g ORDER BY o, id"

// owvQueries run as materialized views (on the Pebble and on the memory
// backend) and in PostgreSQL 15; each view must equal PostgreSQL's result
// of its SELECT after every round of changes.
var owvQueries = []string{
	// lag and lead: offsets, defaults (evaluated at the current row), an
	// expression over the function.
	"SELECT id, g, lag(v) OVER (" + owvPart + ") AS a, lead(v, 2, -1) OVER (" + owvPart + ") AS b, " +
		"lag(s, 1, 'none') OVER (" + owvPart + ") AS c, v - lag(v, 1, 0) OVER (" + owvPart + ") AS d, lead(f) OVER (" + owvPart + ") AS e FROM owk",
	// first_value, last_value, nth_value: the default frame and ROWS frames.
	"SELECT id, first_value(v) OVER (" + owvPart + ") AS a, last_value(s) OVER (" + owvPart + ") AS b, nth_value(v, 2) OVER (" + owvPart + ") AS c, " +
		"first_value(v) OVER (" + owvPart + " ROWS BETWEEN 2 PRECEDING AND CURRENT ROW) AS d, " +
		"last_value(v) OVER (" + owvPart + " ROWS BETWEEN 1 PRECEDING AND 1 FOLLOWING) AS e, " +
		"nth_value(s, 2) OVER (" + owvPart + " ROWS 3 PRECEDING) AS h FROM owk",
	// Ranks as plain outputs, with ties in o (rank and dense_rank are
	// deterministic among peers; row_number orders by the key too), and
	// without PARTITION BY.
	"SELECT id, g, row_number() OVER (" + owvPart + ") AS a, rank() OVER (PARTITION BY g ORDER BY o) AS b, " +
		"dense_rank() OVER (PARTITION BY g ORDER BY o DESC NULLS LAST) AS c, rank() OVER (ORDER BY v) AS d FROM owk",
	// Aggregates OVER: the last n rows, running, the default frame (peers),
	// the whole partition.
	"SELECT id, sum(v) OVER (" + owvPart + " ROWS BETWEEN 2 PRECEDING AND CURRENT ROW) AS a, " +
		"count(v) OVER (" + owvPart + " ROWS BETWEEN 3 PRECEDING AND CURRENT ROW) AS b, " +
		"min(s) OVER (" + owvPart + " ROWS 4 PRECEDING) AS c, max(f) OVER (" + owvPart + " ROWS 1 PRECEDING) AS d, " +
		"avg(f) OVER (" + owvPart + " ROWS BETWEEN 2 PRECEDING AND CURRENT ROW) AS e, " +
		"sum(v) OVER (" + owvPart + " ROWS BETWEEN UNBOUNDED PRECEDING AND CURRENT ROW) AS h, " +
		"count(*) OVER (PARTITION BY g ORDER BY o) AS i, avg(v) OVER (PARTITION BY g) AS j, " +
		"sum(v) OVER (" + owvPart + " ROWS BETWEEN 1 PRECEDING AND UNBOUNDED FOLLOWING) AS k, " +
		"count(*) OVER (PARTITION BY g ORDER BY o RANGE BETWEEN CURRENT ROW AND UNBOUNDED FOLLOWING) AS l FROM owk",
	// RANGE frames with offsets: an interval over a timestamp, an integer
	// over the order column (ties and NULLs), DESC.
	"SELECT id, sum(v) OVER (PARTITION BY g ORDER BY ts RANGE BETWEEN INTERVAL '10' MINUTE PRECEDING AND CURRENT ROW) AS a, " +
		"count(*) OVER (PARTITION BY g ORDER BY o RANGE BETWEEN 1 PRECEDING AND 1 FOLLOWING) AS b, " +
		"max(s) OVER (PARTITION BY g ORDER BY ts DESC RANGE BETWEEN INTERVAL '1' HOUR PRECEDING AND CURRENT ROW) AS c, " +
		"first_value(o) OVER (PARTITION BY g ORDER BY o RANGE 2 PRECEDING) AS d FROM owk",
	// RANGE offsets over a timetz key (PostgreSQL's in_range(timetz,
	// interval): the time moves without wrapping and keeps the row's zone;
	// equal UTC times in other zones are distinct values), ascending and
	// DESC; numeric ROWS and GROUPS offsets, converted to bigint as
	// PostgreSQL's assignment cast does (1.5 is 2, 2.5 is 3, 0.4 is 0).
	"SELECT id, sum(v) OVER (PARTITION BY g ORDER BY tz RANGE BETWEEN INTERVAL '30' MINUTE PRECEDING AND CURRENT ROW) AS a, " +
		"count(*) OVER (PARTITION BY g ORDER BY tz DESC RANGE BETWEEN INTERVAL '1' HOUR PRECEDING AND INTERVAL '15' MINUTE FOLLOWING) AS b, " +
		"sum(v) OVER (" + owvPart + " ROWS BETWEEN 1.5 PRECEDING AND 0.4 FOLLOWING) AS c, " +
		"count(*) OVER (PARTITION BY g ORDER BY o GROUPS BETWEEN 1.0 PRECEDING AND 2.5 FOLLOWING) AS d, " +
		"first_value(v) OVER (" + owvPart + " ROWS BETWEEN 2.0 PRECEDING AND CURRENT ROW) AS e FROM owk",
	// Offset expressions PostgreSQL evaluates once and TiDB's grammar
	// does not take (a cast, CAST(... AS ...), arithmetic), which the
	// dialect layer hands to the binder (issue 33).
	"SELECT id, sum(v) OVER (" + owvPart + " ROWS 1::numeric PRECEDING) AS a, " +
		"count(*) OVER (" + owvPart + " ROWS BETWEEN 1::numeric PRECEDING AND CURRENT ROW) AS b, " +
		"sum(v) OVER (" + owvPart + " ROWS BETWEEN CAST(2.5 AS numeric) PRECEDING AND 2 - 1 FOLLOWING) AS c, " +
		"count(*) OVER (PARTITION BY g ORDER BY o GROUPS BETWEEN 1::numeric PRECEDING AND 0.6::float8 FOLLOWING) AS d FROM owk",
	// Nexmark q6's shape: the average of each seller's last 10 closing
	// prices, over an aggregate (a higher bid retracts the auction's old
	// price) of a join.
	"SELECT seller, auction, avg(final) OVER (PARTITION BY seller ORDER BY auction ROWS BETWEEN 9 PRECEDING AND CURRENT ROW) AS a, " +
		"count(*) OVER (PARTITION BY seller ORDER BY auction ROWS BETWEEN 9 PRECEDING AND CURRENT ROW) AS n " +
		"FROM (SELECT a.id AS auction, a.seller AS seller, max(b.price) AS final FROM owauc a JOIN owbid b ON a.id = b.auction GROUP BY a.id, a.seller) AS q",
}

// TestOverWindowViewPG checks materialized views with OVER window
// functions (lag, lead, first_value, last_value, nth_value, ranks as
// outputs, aggregates over ROWS frames, RANGE frames with integer and
// interval offsets over timestamp and timetz keys, numeric ROWS and GROUPS
// offsets and the default frame) against
// PostgreSQL 15 running the same SELECT, over a keyed table changed by
// INSERT, UPDATE (of the value, the partition and the order column) and
// DELETE, and over an aggregate of a join (Nexmark q6's shape), on both
// state backends, across a graceful restart and a kill -9.
func TestOverWindowViewPG(t *testing.T) {
	t.Parallel()
	pg := StartPG(t)
	srv := StartServer(t, "")
	sdb, pgc := srv.Conn(t), pg.Conn(t)
	ddl := []string{"CREATE TABLE owk (id INT PRIMARY KEY, g INT, o INT, v BIGINT, f DOUBLE PRECISION, s TEXT, ts TIMESTAMP, tz TIMETZ)",
		"CREATE TABLE owauc (id BIGINT, seller INT)", "CREATE TABLE owbid (auction BIGINT, price BIGINT)"}
	execAll(t, sdb, ddl...)
	execAll(t, pgc, ddl...)
	vs := viewsPG{t: t, pg: pgc, queries: owvQueries, prefixes: []string{"owvp", "owvm"}, wait: 30 * time.Second}
	vs.create(sdb)

	r := rand.New(rand.NewPCG(33, 11))
	id, auction := 0, 0
	null := func(s string) string {
		if r.IntN(7) == 0 {
			return "NULL"
		}
		return s
	}
	round := func(c *pgx.Conn, rows int) {
		var vals, aucs, bids []string
		for range rows {
			id++
			vals = append(vals, fmt.Sprintf("(%d, %s, %s, %s, %s, %s, %s, %s)", id, null(fmt.Sprint(r.IntN(5))), null(fmt.Sprint(r.IntN(9))),
				null(fmt.Sprint(r.IntN(200)-50)), null(fmt.Sprint(float64(r.IntN(40))/4)), null(fmt.Sprintf("'s%d'", r.IntN(30))),
				null(fmt.Sprintf("'2026-01-01 %02d:%02d:00'", r.IntN(3), r.IntN(60))),
				// Zones -1..+1 at quarter hours: many times meet in UTC.
				null(fmt.Sprintf("'%02d:%02d:00%+03d'", r.IntN(3), 15*r.IntN(4), r.IntN(3)-1))))
			if r.IntN(3) == 0 {
				auction++
				aucs = append(aucs, fmt.Sprintf("(%d, %d)", auction, r.IntN(4)))
			}
			if auction > 0 {
				bids = append(bids, fmt.Sprintf("(%d, %d)", 1+r.IntN(auction), r.IntN(1000)))
			}
		}
		stmts := []string{"INSERT INTO owk VALUES " + strings.Join(vals, ", ")}
		if len(aucs) > 0 {
			stmts = append(stmts, "INSERT INTO owauc VALUES "+strings.Join(aucs, ", "))
		}
		if len(bids) > 0 {
			stmts = append(stmts, "INSERT INTO owbid VALUES "+strings.Join(bids, ", "))
		}
		// Changes that retract: a value, the partition, the order, rows gone.
		stmts = append(stmts,
			fmt.Sprintf("UPDATE owk SET v = v + %d WHERE id %% 7 = %d", r.IntN(30)-10, r.IntN(7)),
			fmt.Sprintf("UPDATE owk SET g = %d WHERE id %% 11 = %d", r.IntN(5), r.IntN(11)),
			fmt.Sprintf("UPDATE owk SET o = %d, s = 'u' WHERE id %% 13 = %d", r.IntN(9), r.IntN(13)),
			fmt.Sprintf("DELETE FROM owk WHERE id %% 17 = %d", r.IntN(17)))
		execAll(t, c, stmts...)
		execAll(t, pgc, stmts...)
	}
	vs.run(srv, sdb, round, []int{40, 120, 30}, 60)
}

package crash

import (
	"context"
	"fmt"
	"slices"
	"testing"
	"time"

	"github.com/jackc/pgx/v5"
	"github.com/streamdb/streamdb/tests/sqllogic"
)

// textRows returns q's rows as sorted text.
func textRows(t *testing.T, conn *pgx.Conn, q string) []string {
	t.Helper()
	ctx, cancel := context.WithTimeout(context.Background(), stmtTimeout)
	defer cancel()
	rows, err := conn.Query(ctx, q)
	if err != nil {
		t.Fatalf("%s: %v", q, err)
	}
	var out []string
	for rows.Next() {
		vals, err := rows.Values()
		if err != nil {
			t.Fatal(err)
		}
		out = append(out, fmt.Sprint(vals...))
	}
	if err := rows.Err(); err != nil {
		t.Fatalf("%s: %v", q, err)
	}
	slices.Sort(out)
	return out
}

// TestKill9SourceJobs kills the server four times, 1-2.5 s apart, while
// views read paced generator sources (CREATE SOURCE ... nexmark and
// datagen), and restarts it each time. No view may ever count more events
// than the bounded sources hold, and once the sources are read to their
// end every view equals its query run as a batch query over the sources'
// bounded content: each restart resumed the splits at the checkpointed
// positions, nothing lost and nothing counted twice.
func TestKill9SourceJobs(t *testing.T) {
	rng, _ := newRand(t)
	srv := sqllogic.StartServer(t, "")
	conn := srv.Conn(t)
	for _, s := range []string{
		"SET checkpoint.interval = '200ms'",
		`CREATE SOURCE bid (auction BIGINT, bidder BIGINT, price BIGINT, channel VARCHAR, date_time TIMESTAMP)
		  WITH (connector = 'nexmark', nexmark.table = 'bid', nexmark.events = 400000, nexmark.rate = 50000, nexmark.split = 2)`,
		`CREATE SOURCE auction (id BIGINT, seller BIGINT, category BIGINT)
		  WITH (connector = 'nexmark', nexmark.table = 'auction', nexmark.events = 400000, nexmark.rate = 50000)`,
		`CREATE SOURCE readings (id BIGINT, sensor INT, value DOUBLE PRECISION)
		  WITH (connector = 'datagen', rows_per_second = 15000, fields.id.kind = 'sequence', fields.id.start = 1,
		        fields.id.end = 100000, fields.sensor.min = 1, fields.sensor.max = 40)`,
		"CREATE MATERIALIZED VIEW per_channel AS SELECT channel, count(*) AS n, sum(price) AS s FROM bid GROUP BY channel",
		"CREATE MATERIALIZED VIEW big_bids AS SELECT auction, bidder, price FROM bid WHERE price > 20000000",
		"CREATE MATERIALIZED VIEW per_category AS SELECT category, count(*) AS n, sum(seller) AS s FROM auction GROUP BY category",
		"CREATE MATERIALIZED VIEW per_sensor AS SELECT sensor, count(*) AS n, sum(id) AS ids FROM readings GROUP BY sensor",
	} {
		if _, err := conn.Exec(context.Background(), s); err != nil {
			t.Fatalf("%s: %v", s, err)
		}
	}
	const bids, auctions = 400000 / 50 * 46, 400000 / 50 * 3
	notAhead := func(when string) {
		c := srv.Conn(t)
		var n, a, r int64
		if err := c.QueryRow(context.Background(),
			"SELECT coalesce(sum(n), 0) FROM per_channel").Scan(&n); err != nil {
			t.Fatal(err)
		}
		if err := c.QueryRow(context.Background(), "SELECT coalesce(sum(n), 0) FROM per_category").Scan(&a); err != nil {
			t.Fatal(err)
		}
		if err := c.QueryRow(context.Background(), "SELECT coalesce(sum(n), 0) FROM per_sensor").Scan(&r); err != nil {
			t.Fatal(err)
		}
		t.Logf("%s: %d bids, %d auctions, %d readings in the views", when, n, a, r)
		if n > bids || a > auctions || r > 100000 {
			t.Fatalf("%s: a view counts more events than its source holds", when)
		}
	}
	for i := 1; i <= 4; i++ {
		d := time.Second + time.Duration(rng.Int64N(int64(1500*time.Millisecond)))
		time.Sleep(d)
		srv.Kill9()
		srv.Restart(t)
		notAhead(fmt.Sprintf("right after kill -9 #%d (after %v)", i, d.Round(time.Millisecond)))
	}
	c := srv.Conn(t)
	for _, v := range []struct{ view, batch string }{
		{"SELECT * FROM per_channel", "SELECT channel, count(*), sum(price) FROM bid GROUP BY channel"},
		{"SELECT * FROM big_bids", "SELECT auction, bidder, price FROM bid WHERE price > 20000000"},
		{"SELECT * FROM per_category", "SELECT category, count(*), sum(seller) FROM auction GROUP BY category"},
		{"SELECT * FROM per_sensor", "SELECT sensor, count(*), sum(id) FROM readings GROUP BY sensor"},
	} {
		want := textRows(t, c, v.batch)
		start := time.Now()
		for {
			got := textRows(t, c, v.view)
			if slices.Equal(got, want) {
				t.Logf("%s: %d rows equal the batch query (%v after the check began)", v.view, len(got), time.Since(start).Round(time.Millisecond))
				break
			}
			if time.Since(start) > 2*catchUpTimeout {
				t.Fatalf("%s never equalled the batch query over the bounded sources: %d rows, want %d", v.view, len(got), len(want))
			}
			time.Sleep(50 * time.Millisecond)
		}
	}
}

package sqllogic

import (
	"testing"

	"github.com/streamdb/streamdb/nexmark"
)

// TestSourceColumnsRead: views that read few columns of generating
// sources (nexmark, datagen), whose jobs tell the connectors to leave
// the other columns out (connector.Projector), equal the same queries run
// as batch queries, which read every column: so each column read keeps
// the values the generator gives it with every column made. The views
// read a prefix of a table's draws, columns after unread ones (extra after
// url), the same source twice with different columns (a join and a UNION
// ALL: the job reads their union), and a datagen source whose later column
// depends on an unread one's draws.
func TestSourceColumnsRead(t *testing.T) {
	srv := StartServer(t, "")
	c := srv.Conn(t)
	for _, ddl := range nexmark.SourceDDL(30000, 7, 2) {
		mustExec(t, c, "streamdb", ddl)
	}
	mustExec(t, c, "streamdb", `CREATE SOURCE g (a BIGINT, s TEXT, f DOUBLE PRECISION, n BIGINT) WITH (connector = 'datagen',
		number_of_rows = '20000', rows_per_second = '0', fields.a.min = '0', fields.a.max = '99', fields.s.length = '12',
		fields.s.null_rate = '0.2', fields.n.min = '0', fields.n.max = '9')`)
	views := map[string]string{
		"r_q0":     "SELECT auction, bidder, price, date_time FROM bid",
		"r_q5":     "SELECT auction, count(*) AS n, max(date_time) AS m FROM bid GROUP BY auction",
		"r_extra":  "SELECT auction, extra FROM bid WHERE length(extra) > 14",
		"r_count":  "SELECT count(*) AS n FROM bid",
		"r_join":   "SELECT a.id, a.seller, b.price, b.extra FROM auction a JOIN bid b ON a.id = b.auction WHERE b.price > 900000",
		"r_self":   "SELECT b1.auction, b1.url, b2.channel FROM bid b1 JOIN bid b2 ON b1.bidder = b2.bidder AND b1.auction = b2.auction WHERE b1.price > 990000",
		"r_union":  "SELECT auction AS x FROM bid WHERE channel = 'Google' UNION ALL SELECT bidder FROM bid WHERE url LIKE '%channel_id=1%'",
		"r_person": "SELECT state, count(*) AS n, max(extra) AS e FROM person GROUP BY state",
		"r_desc":   "SELECT category, count(*) AS n, max(description) AS d FROM auction GROUP BY category",
		"r_g":      "SELECT n, count(*) AS c, sum(a) AS s FROM g GROUP BY n",
		"r_g2":     "SELECT a, f FROM g WHERE f < 0.01",
	}
	for name, q := range views {
		mustExec(t, c, "streamdb", "CREATE MATERIALIZED VIEW "+name+" AS "+q)
	}
	mustExec(t, c, "streamdb", "CHECKPOINT")
	for name, q := range views {
		view, err := queryRows(c, "SELECT * FROM "+name)
		if err != nil {
			t.Fatalf("%s: %v", name, err)
		}
		batch, err := queryRows(c, q)
		if err != nil {
			t.Fatalf("%s: the batch query: %v", name, err)
		}
		if len(view) == 0 {
			t.Errorf("%s: empty", name)
		}
		if diff := diffRows(view, batch); diff != "" {
			t.Errorf("%s: the view differs from the batch query (\"PostgreSQL\" below is the batch query)\n%s", name, diff)
		}
		t.Logf("%s: %d rows, view = batch query", name, len(view))
	}
}

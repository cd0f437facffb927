package sqllogic

import (
	"context"
	"errors"
	"strings"
	"testing"
	"time"

	"github.com/jackc/pgx/v5"
	"github.com/jackc/pgx/v5/pgconn"
)

// TestCopyHeaderPG checks COPY FROM's HEADER against PostgreSQL 15: a
// header in text and CSV, and HEADER MATCH, whose line must name the
// columns copied in order (22P04 with PostgreSQL's message otherwise: a
// wrong name, a case difference, a NULL field, a wrong count), and the
// option's refusals (MATCH with COPY TO, a value that is no boolean). Each
// COPY gets the same bytes on both servers; the rows kept must agree.
func TestCopyHeaderPG(t *testing.T) {
	t.Parallel()
	pg := StartPG(t)
	srv := StartServer(t, "")
	sdb, pgc := srv.Conn(t), pg.Conn(t)
	for _, conn := range []*pgx.Conn{sdb, pgc} {
		mustExec(t, conn, "", `CREATE TABLE hm (a BIGINT, "B c" TEXT, d BIGINT)`)
	}
	cases := []struct{ copy, data string }{
		{"COPY hm FROM STDIN (HEADER MATCH)", "a\tB c\td\n1\tx\t2\n"},
		{"COPY hm FROM STDIN (HEADER true)", "anything\tat all\n3\ty\t4\n"},
		{"COPY hm FROM STDIN (FORMAT csv, HEADER MATCH)", "a,\"B c\",d\n5,z,6\n"},
		{"COPY hm FROM STDIN (FORMAT csv, HEADER match)", "a,B c,d\r\n7,w,8\r\n"},
		{`COPY hm (d, "B c") FROM STDIN (FORMAT csv, HEADER MATCH)`, "d,B c\n9,v\n"},
		{"COPY hm FROM STDIN (HEADER MATCH)", "a\tB c\td\n"},
		{"COPY hm FROM STDIN (HEADER MATCH)", "a\tb c\td\n1\tx\t2\n"},
		{"COPY hm FROM STDIN (HEADER MATCH)", "a\tB c\n1\tx\t2\n"},
		{"COPY hm FROM STDIN (HEADER MATCH)", "a\tB c\td\te\n1\tx\t2\n"},
		{"COPY hm FROM STDIN (HEADER MATCH)", "\\N\tB c\td\n1\tx\t2\n"},
		{"COPY hm FROM STDIN (FORMAT csv, HEADER MATCH)", "a,,d\n1,x,2\n"},
		{"COPY hm FROM STDIN (FORMAT csv, HEADER MATCH)", "A,B c,d\n1,x,2\n"},
		{`COPY hm (d, a) FROM STDIN (HEADER MATCH)`, "a\td\n1\t2\n"},
		{"COPY hm FROM STDIN (HEADER maybe)", "a\tB c\td\n1\tx\t2\n"},
		{"COPY hm TO STDOUT (HEADER MATCH)", ""},
	}
	for _, c := range cases {
		var res [2]string
		for i, conn := range []*pgx.Conn{pgc, sdb} {
			ctx, cancel := context.WithTimeout(context.Background(), time.Minute)
			var err error
			if strings.Contains(c.copy, " TO ") {
				_, err = conn.PgConn().CopyTo(ctx, new(strings.Builder), c.copy)
			} else {
				var tag pgconn.CommandTag
				tag, err = conn.PgConn().CopyFrom(ctx, strings.NewReader(c.data), c.copy)
				res[i] = tag.String()
			}
			cancel()
			var pe *pgconn.PgError
			if errors.As(err, &pe) {
				res[i] = pe.Code + " " + pe.Message
			} else if err != nil {
				t.Fatalf("%s %q: %v", c.copy, c.data, err)
			}
		}
		if res[0] != res[1] {
			t.Errorf("%s %q:\n streamdb   %s\n PostgreSQL %s", c.copy, c.data, res[1], res[0])
		}
	}
	sameRowsAsPG(t, sdb, pgc, `SELECT a, "B c", d FROM hm`)
}

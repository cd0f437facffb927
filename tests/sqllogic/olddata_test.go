package sqllogic

import (
	"archive/tar"
	"compress/gzip"
	"context"
	"fmt"
	"io"
	"os"
	"path/filepath"
	"slices"
	"strings"
	"testing"

	"github.com/jackc/pgx/v5"
)

// TestOldDataUUIDText opens a data directory written by the binary of
// efa6879, when uuid was stored as text (testdata/olddata/README.md), with
// today's binary, where uuid is 16 bytes (issue 30):
//   - the table and stream logs read back in the new layout, rows written
//     by INSERT and by COPY alike, in scans, GROUP BY and count(DISTINCT);
//   - a primary-key table's old rows take UPDATE and DELETE;
//   - the views created before the change are refused with their reason
//     (SHOW JOBS: FAILED, "drop and recreate it"), never run over state
//     of the old layout;
//   - a view recreated over the old data equals the batch query, before
//     and after new rows and a kill -9.
func TestOldDataUUIDText(t *testing.T) {
	dir := filepath.Join(t.TempDir(), "data")
	untarGz(t, filepath.Join("testdata", "olddata", "uuid-efa6879.tar.gz"), dir)
	srv := StartServer(t, dir)
	c := srv.Conn(t)

	u := func(prefix string, i int) string { return fmt.Sprintf("%s-0000-4000-8000-%012d", prefix, i) }
	// s holds (u(i % 7), i) for i = 1..130.
	type agg struct{ n, sum int }
	byU := map[string]agg{}
	for i := 1; i <= 130; i++ {
		a := byU[u("00000000", i%7)]
		byU[u("00000000", i%7)] = agg{a.n + 1, a.sum + i}
	}
	wantByU := func() string {
		var lines []string
		for k, a := range byU {
			lines = append(lines, fmt.Sprintf("%s|%d|%d", k, a.n, a.sum))
		}
		return sortedJoin(lines)
	}
	const batchByU = "SELECT u, count(*), sum(v) FROM s GROUP BY u"
	if got, want := rowSet(t, c, batchByU), wantByU(); got != want {
		t.Fatalf("old rows of s:\n got %s\nwant %s", got, want)
	}
	if got := rowSet(t, c, "SELECT count(*), count(DISTINCT u), sum(v) FROM s"); got != "130|7|8515" {
		t.Fatalf("count, count(DISTINCT u), sum(v) of s: %s", got)
	}
	var k []string
	for i := 1; i <= 50; i++ {
		k = append(k, fmt.Sprintf("%d|%s|{%s}", i, u("00000000", i), u("10000000", i)))
	}
	if got, want := rowSet(t, c, "SELECT id, u, tags FROM k"), sortedJoin(k); got != want {
		t.Fatalf("old rows of k:\n got %s\nwant %s", got, want)
	}
	if got := rowSet(t, c, fmt.Sprintf("SELECT id FROM k WHERE u = '%s' AND tags[1] = '%s'", u("00000000", 7), u("10000000", 7))); got != "7" {
		t.Fatalf("lookup of an old uuid: %q", got)
	}
	mustExec(t, c, "streamdb", fmt.Sprintf("UPDATE k SET u = '%s' WHERE id = 1", u("20000000", 1)))
	mustExec(t, c, "streamdb", "DELETE FROM k WHERE id = 2")
	if got := rowSet(t, c, "SELECT id, u FROM k WHERE id <= 3"); got != fmt.Sprintf("1|%s; 3|%s", u("20000000", 1), u("00000000", 3)) {
		t.Fatalf("k after UPDATE and DELETE: %s", got)
	}

	// The old views are refused, with their reason where users look: by_v
	// too, whose output has no uuid, as its plan scans the uuid column (the
	// rule is conservative: any uuid in the plan).
	for _, v := range []string{"by_u", "by_v"} {
		state, reason := showJobsText(t, c, v, "state"), showJobsText(t, c, v, "last_error")
		if state != "FAILED" || !strings.Contains(reason, "created before uuid was stored as 16 bytes") {
			t.Fatalf("SHOW JOBS shows %s %s (%s), want it refused", v, state, reason)
		}
	}

	// Recreated, the view equals the batch query, and keeps up.
	mustExec(t, c, "streamdb", "DROP MATERIALIZED VIEW by_u")
	mustExec(t, c, "streamdb", "CREATE MATERIALIZED VIEW by_u AS SELECT u, count(*) AS n, sum(v) AS total FROM s GROUP BY u")
	if got, want := rowSet(t, c, "SELECT * FROM by_u"), wantByU(); got != want {
		t.Fatalf("recreated by_u:\n got %s\nwant %s", got, want)
	}
	for i := 131; i <= 140; i++ {
		mustExec(t, c, "streamdb", fmt.Sprintf("INSERT INTO s VALUES ('%s', %d)", u("00000000", i%7), i))
		a := byU[u("00000000", i%7)]
		byU[u("00000000", i%7)] = agg{a.n + 1, a.sum + i}
	}
	mustExec(t, c, "streamdb", "CHECKPOINT")
	srv.Kill9()
	srv.Restart(t)
	c = srv.Conn(t)
	mustExec(t, c, "streamdb", "CHECKPOINT")
	for _, q := range []string{"SELECT * FROM by_u", batchByU} {
		if got, want := rowSet(t, c, q), wantByU(); got != want {
			t.Fatalf("%s after kill -9:\n got %s\nwant %s", q, got, want)
		}
	}
	if got := rowSet(t, c, "SELECT count(*) FROM k"); got != "49" {
		t.Fatalf("k after kill -9 holds %s rows, want 49", got)
	}
}

// sortedJoin is rowSet's form of lines: sorted, joined by "; ".
func sortedJoin(lines []string) string {
	s := slices.Clone(lines)
	slices.Sort(s)
	return strings.Join(s, "; ")
}

// showJobsText is column col of job's row in SHOW JOBS, as text.
func showJobsText(t *testing.T, c *pgx.Conn, job, col string) string {
	t.Helper()
	res := c.PgConn().ExecParams(context.Background(), "SHOW JOBS", nil, nil, nil, nil).Read()
	if res.Err != nil {
		t.Fatal(res.Err)
	}
	name, at := -1, -1
	for i, f := range res.FieldDescriptions {
		switch f.Name {
		case "name":
			name = i
		case col:
			at = i
		}
	}
	if name < 0 || at < 0 {
		t.Fatalf("SHOW JOBS has no column name or %s", col)
	}
	for _, r := range res.Rows {
		if string(r[name]) == job {
			return string(r[at])
		}
	}
	t.Fatalf("SHOW JOBS: no job %s", job)
	return ""
}

// untarGz extracts the gzipped tar archive src into the directory dst.
func untarGz(t *testing.T, src, dst string) {
	t.Helper()
	f, err := os.Open(src)
	if err != nil {
		t.Fatal(err)
	}
	defer f.Close()
	zr, err := gzip.NewReader(f)
	if err != nil {
		t.Fatal(err)
	}
	tr := tar.NewReader(zr)
	for {
		h, err := tr.Next()
		if err == io.EOF {
			return
		}
		if err != nil {
			t.Fatal(err)
		}
		p := filepath.Join(dst, filepath.Clean("/"+h.Name))
		switch h.Typeflag {
		case tar.TypeDir:
			err = os.MkdirAll(p, 0o755)
		case tar.TypeReg:
			if err = os.MkdirAll(filepath.Dir(p), 0o755); err == nil {
				var out *os.File
				if out, err = os.OpenFile(p, os.O_CREATE|os.O_WRONLY|os.O_TRUNC, 0o644); err == nil {
					_, err = io.Copy(out, tr)
					if cerr := out.Close(); err == nil {
						err = cerr
					}
				}
			}
		case tar.TypeLink:
			if err = os.MkdirAll(filepath.Dir(p), 0o755); err == nil {
				err = os.Link(filepath.Join(dst, filepath.Clean("/"+h.Linkname)), p)
			}
		}
		if err != nil {
			t.Fatal(err)
		}
	}
}

package sqllogic

import (
	"context"
	"fmt"
	"strings"
	"testing"

	"github.com/jackc/pgx/v5"
)

// TestOutputColumnNamesPG: a select-list expression without an alias is
// named (and typed: unnest in FROM gives the element type) as PostgreSQL
// names it (FigureColname): a cast keeps its operand's
// name only when that is a column or function name, else it is named
// after its type ('1'::int::text is "text", c::int is "c").
func TestOutputColumnNamesPG(t *testing.T) {
	t.Parallel()
	pg := StartPG(t)
	srv := StartServer(t, "")
	sdb, pdb := srv.Conn(t), pg.Conn(t)
	for _, c := range []*pgx.Conn{sdb, pdb} {
		execAll(t, c, "CREATE TABLE cn (c INT, d TEXT)")
	}
	queries := []string{
		"SELECT '1'::int::text, 1::int, '2'::bigint, c::int, c::text::int, d::int FROM cn",
		"SELECT (CASE WHEN c > 0 THEN 1 END)::text, CASE WHEN c > 0 THEN 1 END, CASE WHEN c > 0 THEN c END::text FROM cn",
		"SELECT true::int, true, (c + 1)::text, (c)::text FROM cn",
		"SELECT count(*)::int, sum(c)::text, max(c) FROM cn",
		"SELECT now()::date, length(d)::text, upper(d), ARRAY[1]::text[], ARRAY[c] FROM cn",
		"SELECT (SELECT c FROM cn LIMIT 1)::text, (SELECT 1)::text",
		"SELECT * FROM unnest(ARRAY[1, 2])",
		"SELECT u FROM unnest(ARRAY['2026-01-02'::date]) AS u",
		"SELECT x FROM unnest(ARRAY[1.5::float8, NULL]) AS t(x)",
	}
	names := func(c *pgx.Conn, q string) string {
		rows, err := c.Query(context.Background(), q)
		if err != nil {
			t.Fatalf("%s: %v", q, err)
		}
		defer rows.Close()
		var out []string
		for _, f := range rows.FieldDescriptions() {
			out = append(out, fmt.Sprintf("%s:%d", f.Name, f.DataTypeOID))
		}
		return strings.Join(out, ",")
	}
	for _, q := range queries {
		if got, want := names(sdb, q), names(pdb, q); got != want {
			t.Errorf("%s: column names %s, PostgreSQL's %s", q, got, want)
		}
	}
}

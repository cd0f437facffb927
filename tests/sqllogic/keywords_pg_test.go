package sqllogic

import (
	"context"
	"errors"
	"fmt"
	"slices"
	"sort"
	"strings"
	"testing"
	"time"

	"github.com/jackc/pgx/v5"
	"github.com/jackc/pgx/v5/pgconn"
)

// keywordPositions are the places a word is tried as a name, each a list of
// statements run in order ({w} is the word). A position passes on a server
// when all its statements succeed; the last statement's rows are compared.
var keywordPositions = []struct {
	name  string
	stmts []string
}{
	{"column", []string{"CREATE TABLE {w}_t ({w} BIGINT)", "INSERT INTO {w}_t ({w}) VALUES (1)", "SELECT {w} FROM {w}_t"}},
	{"qualified column", []string{"SELECT {w}_t.{w} FROM {w}_t"}},
	{"table alias", []string{"SELECT {w}.x FROM (SELECT 1 AS x) AS {w}"}},
	{"alias of column's table", []string{"SELECT {w}.{w} FROM {w}_t AS {w}"}},
	{"AS label", []string{"SELECT 1 AS {w}"}},
	{"bare label", []string{"SELECT 1 {w}"}},
	{"table", []string{"CREATE TABLE {w} (x BIGINT)", "INSERT INTO {w} (x) VALUES (2)", "SELECT x FROM {w}"}},
}

// keywordGaps are the (word, position) pairs PostgreSQL 15 accepts and
// streamdb does not yet; docs/decisions/2026-12-06-keyword-names.md lists
// them. The test fails when one of them starts to work (remove it here) or
// when any other pair differs from PostgreSQL.
var keywordGaps = map[string]bool{
	// SELECT 1 isnull: PostgreSQL reads the postfix operator (1 IS NULL),
	// streamdb a label.
	"isnull/bare label": true, "notnull/bare label": true,
}

// bareLabelGaps are words PostgreSQL reserves (categories R and T) but
// accepts as a bare output label (SELECT 1 w); the dialect layer cannot tell
// such a label from the word's grammar role (ORDER BY a DESC) without a
// grammar, so they must be written with AS.
var bareLabelGaps = strings.Fields(`all analyze and asc binary both case check collate column constraint cross
	current_date current_role current_time current_timestamp current_user default desc distinct else false
	foreign ilike in inner is join lateral leading left like localtime localtimestamp natural not null or
	outer primary references right select session_user table tablesample then trailing true unique using when`)

func init() {
	for _, w := range bareLabelGaps {
		keywordGaps[w+"/bare label"] = true
	}
}

// TestKeywordNamesPG asks PostgreSQL 15 for its keywords (pg_get_keywords)
// (plus names MySQL 8 reserves, see below) and tries every one as a column, table, table alias and output label on
// both servers: whatever PostgreSQL accepts must work in streamdb with the
// same rows. Words PostgreSQL refuses are only counted and logged when
// streamdb accepts them. A materialized view then groups by columns named
// with common non-reserved words.
func TestKeywordNamesPG(t *testing.T) {
	t.Parallel()
	pg := StartPG(t)
	srv := StartServer(t, "")
	sdb, pgc := srv.Conn(t), pg.Conn(t)

	rows, err := queryRows(pgc, "SELECT word || ' ' || catcode::text FROM pg_get_keywords() ORDER BY word")
	if err != nil {
		t.Fatal(err)
	}
	if len(rows) < 400 {
		t.Fatalf("pg_get_keywords returned %d words", len(rows))
	}
	// Names that are no PostgreSQL keyword but that MySQL 8 (TiDB's grammar)
	// reserves, and a few common ones from issue 30.
	for _, w := range strings.Fields(`lag lead rank dense_rank row_number ntile percent_rank cume_dist
		first_value last_value nth_value status comment time name type value key json`) {
		if !slices.ContainsFunc(rows, func(r string) bool { return strings.HasPrefix(r, "'"+w+" ") }) {
			rows = append(rows, "'"+w+" -'")
		}
	}
	var lax []string // accepted by streamdb, refused by PostgreSQL
	var gaps []string
	start := time.Now()
	for _, r := range rows {
		f := strings.Fields(strings.Trim(r, "'"))
		w, cat := f[0], f[1]
		for _, pos := range keywordPositions {
			key := w + "/" + pos.name
			pgRows, pgErr := runAll(pgc, w, pos.stmts)
			sdbRows, sdbErr := runAll(sdb, w, pos.stmts)
			switch {
			case pgErr != nil && sdbErr == nil:
				lax = append(lax, key)
			case pgErr != nil:
				// Both refuse.
			case sdbErr != nil:
				if !keywordGaps[key] {
					gaps = append(gaps, fmt.Sprintf("%s (%s): %v", key, cat, sdbErr))
				}
			default:
				d := diffRows(sdbRows, pgRows)
				switch {
				case d != "" && !keywordGaps[key]:
					t.Errorf("%s: rows differ from PostgreSQL's: %s", key, d)
				case d == "" && keywordGaps[key]:
					t.Errorf("%s works now: remove it from keywordGaps and the decision record", key)
				}
			}
		}
	}
	t.Logf("%d words x %d positions in %v", len(rows), len(keywordPositions), time.Since(start).Round(time.Millisecond))
	if len(lax) > 0 {
		t.Logf("%d word/positions PostgreSQL refuses and streamdb accepts: %s", len(lax), strings.Join(lax, ", "))
	}
	sort.Strings(gaps)
	for _, g := range gaps {
		t.Errorf("PostgreSQL accepts, streamdb refuses: %s", g)
	}

	// A materialized view with keyword columns as group key and aggregate.
	for _, s := range []string{
		"CREATE TABLE events (key TEXT, value BIGINT, type TEXT, status TEXT)",
		"INSERT INTO events VALUES ('a', 1, 'x', 'ok'), ('a', 2, 'y', 'ok'), ('b', 3, 'x', 'bad')",
	} {
		mustExec(t, sdb, "streamdb", s)
		mustExec(t, pgc, "PostgreSQL", s)
	}
	const view = "SELECT key, status, sum(value) AS value, count(type) AS type FROM events GROUP BY key, status"
	mustExec(t, sdb, "streamdb", "CREATE MATERIALIZED VIEW keyed AS "+view)
	mustExec(t, sdb, "streamdb", "CHECKPOINT")
	want, err := queryRows(pgc, view)
	if err != nil {
		t.Fatal(err)
	}
	got, err := queryRows(sdb, "SELECT key, status, value, type FROM keyed")
	if err != nil {
		t.Fatal(err)
	}
	if d := diffRows(got, want); d != "" {
		t.Errorf("view keyed: %s", d)
	}
}

// runAll runs stmts with {w} replaced by w, stopping at the first error,
// and returns the rows of the last one.
func runAll(c *pgx.Conn, w string, stmts []string) ([]string, error) {
	var rows []string
	for _, s := range stmts {
		s = strings.ReplaceAll(s, "{w}", w)
		ctx, cancel := context.WithTimeout(context.Background(), 10*time.Second)
		res, err := c.PgConn().Exec(ctx, s).ReadAll()
		cancel()
		if err != nil {
			var pe *pgconn.PgError
			if errors.As(err, &pe) {
				return nil, fmt.Errorf("%s: %s (%s)", s, pe.Message, pe.Code)
			}
			return nil, fmt.Errorf("%s: %w", s, err)
		}
		if len(res) > 0 {
			rows = rowLines(res[len(res)-1].Rows)
		}
	}
	return rows, nil
}

// Package postgres is the PostgreSQL sink connector (CREATE SINK ... WITH
// (connector = 'postgres', url = ..., table.name = ..., type = 'append' |
// 'upsert')). It is a connector.TwoPhaseSink, which the runtime
// (exec.SinkRunner) drives; its contract:
//
//  1. CREATE SINK checks everything it can against the target before the
//     sink exists (CheckSink): the options (22023), the connection
//     (08001 unreachable, 28P01 bad password, 3D000 unknown database, or
//     the server's own SQLSTATE), the table (42P01), each view column in
//     it (42703) with a type that takes the column's values (42804), and
//     for upsert a unique constraint on exactly the key columns (42P10).
//     An append sink over a view that retracts rows is refused (0A000).
//  2. Each transaction the runtime hands over (the view's changes a
//     durable checkpoint covers, or a snapshot of the view) is written in
//     ONE PostgreSQL transaction together with the sink's row of the
//     progress table streamdb_sink_progress (in the target's schema),
//     which holds the changelog position the transaction ends at. The
//     commit of the rows and of the position is one atomic act, so
//     Recover reads back exactly what PostgreSQL holds and the runtime
//     redoes only what is missing: nothing lost, nothing twice.
//  3. append COPYs the view's inserts straight into the table. upsert
//     COPYs the changes into a temporary staging table (with their order
//     and kind), then applies the transaction's net change per row:
//     DELETE of the rows it removed (where the table still holds them as
//     they were), INSERT ... ON CONFLICT (key) DO UPDATE of the rows it
//     added, the latest per key.
//  4. A lost connection is an error of the transaction in flight; the
//     runtime retries from Recover, and the progress row says what
//     committed.
//
// See docs/decisions/2026-12-06-postgres-sink.md.
package postgres

import (
	"strings"

	"github.com/jackc/pgx/v5"
	"github.com/streamdb/streamdb/sqlerr"
)

// Sink types.
const (
	typeAppend = "append"
	typeUpsert = "upsert"
)

// ProgressTable is the table, in the target table's schema, whose rows
// hold each sink's committed changelog position.
const ProgressTable = "streamdb_sink_progress"

// opts are a PostgreSQL sink's WITH options, validated.
type opts struct {
	url   string
	cfg   *pgx.ConnConfig
	table string // as given: [schema.]name, PostgreSQL's identifier rules
	typ   string // append, upsert
	keys  []string
}

func parseOpts(with map[string]string) (opts, error) {
	var o opts
	seen := map[string]bool{}
	get := func(k string) (string, bool) {
		for ok, v := range with {
			if strings.ReplaceAll(strings.ToLower(ok), "-", "_") == k {
				seen[ok] = true
				return strings.TrimSpace(v), true
			}
		}
		return "", false
	}
	bad := func(format string, args ...any) (opts, error) {
		return o, sqlerr.New(sqlerr.InvalidParameterValue, format, args...)
	}
	if c, _ := get("connector"); !strings.EqualFold(c, "postgres") {
		return bad("option \"connector\" must be postgres, not %q", c)
	}
	var ok bool
	if o.url, ok = get("url"); !ok || o.url == "" {
		return bad("option \"url\" is required for a postgres sink (postgres://user:password@host:port/database)")
	}
	cfg, err := pgx.ParseConfig(o.url)
	if err != nil {
		return bad("option \"url\": not a PostgreSQL connection string: %v", redact(err.Error(), o.url))
	}
	o.cfg = cfg
	if o.table, ok = get("table.name"); !ok || o.table == "" {
		return bad("option \"table.name\" is required for a postgres sink")
	}
	t, _ := get("type")
	switch o.typ = strings.ToLower(t); o.typ {
	case typeAppend, typeUpsert:
	case "":
		return bad("option \"type\" is required for a postgres sink: append or upsert")
	default:
		return bad("option \"type\" must be append or upsert, not %q", t)
	}
	if pk, ok := get("primary_key"); ok {
		if o.typ != typeUpsert {
			return bad("option \"primary_key\" is for type 'upsert' only")
		}
		for _, k := range strings.Split(pk, ",") {
			k = strings.TrimSpace(k)
			if k == "" {
				return bad("option \"primary_key\": an empty column name in %q", pk)
			}
			o.keys = append(o.keys, k)
		}
	}
	for k := range with {
		if !seen[k] && !strings.HasPrefix(k, "__") {
			return bad("unrecognized option %q for a postgres sink", k)
		}
	}
	return o, nil
}

// redact removes the password of url from msg.
func redact(msg, url string) string {
	if i := strings.Index(url, "://"); i >= 0 {
		rest := url[i+3:]
		if at := strings.LastIndex(rest, "@"); at >= 0 {
			if c := strings.Index(rest[:at], ":"); c >= 0 && c+1 < at {
				msg = strings.ReplaceAll(msg, rest[c+1:at], "********")
			}
		}
	}
	return msg
}

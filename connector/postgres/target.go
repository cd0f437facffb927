package postgres

import (
	"context"
	"errors"
	"fmt"
	"net"
	"slices"
	"strings"
	"time"

	"github.com/jackc/pgx/v5"
	"github.com/jackc/pgx/v5/pgconn"
	"github.com/streamdb/streamdb/connector"
	"github.com/streamdb/streamdb/sqlerr"
	"github.com/streamdb/streamdb/types"
)

// connectTimeout bounds connecting, so an unreachable host is an error
// (08001) and not a hang.
const connectTimeout = 10 * time.Second

// unableToConnect is SQLSTATE 08001 (sqlclient_unable_to_establish_sqlconnection).
const unableToConnect = "08001"

// connect opens a connection to the sink's database.
func connect(ctx context.Context, o opts) (*pgx.Conn, error) {
	cfg := o.cfg.Copy()
	if cfg.ConnectTimeout == 0 || cfg.ConnectTimeout > connectTimeout {
		cfg.ConnectTimeout = connectTimeout
	}
	if cfg.RuntimeParams == nil {
		cfg.RuntimeParams = map[string]string{}
	}
	cfg.RuntimeParams["application_name"] = "streamdb-sink"
	conn, err := pgx.ConnectConfig(ctx, cfg)
	if err != nil {
		return nil, connError(o, err)
	}
	return conn, nil
}

// connError turns an error of connecting into one with a SQLSTATE: the
// server's own (28P01, 3D000, 28000, ...) if it answered, else 08001.
func connError(o opts, err error) error {
	where := net.JoinHostPort(o.cfg.Host, fmt.Sprint(o.cfg.Port))
	var pe *pgconn.PgError
	if errors.As(err, &pe) {
		return &sqlerr.Error{Code: pe.Code, Msg: fmt.Sprintf("postgres sink: PostgreSQL at %s (database %q, user %q): %s",
			where, o.cfg.Database, o.cfg.User, pe.Message)}
	}
	return sqlerr.New(unableToConnect, "postgres sink: could not connect to PostgreSQL at %s: %s", where, redact(err.Error(), o.url))
}

// opError turns an error of a statement on an open connection into one
// with a SQLSTATE: the server's, or 08000 for a lost connection.
func opError(what string, err error) error {
	if err == nil {
		return nil
	}
	var se *sqlerr.Error
	if errors.As(err, &se) {
		return se
	}
	var pe *pgconn.PgError
	if errors.As(err, &pe) {
		return &sqlerr.Error{Code: pe.Code, Msg: fmt.Sprintf("postgres sink: %s: %s", what, pe.Message), Detail: pe.Detail}
	}
	return sqlerr.New(sqlerr.ConnectionException, "postgres sink: %s: %v", what, err)
}

// target is the sink's table as the sink writes it.
type target struct {
	oid    uint32
	schema string // quoted
	name   string // schema-qualified, quoted
	// cols are the view's columns in the table: each one's quoted name
	// and the table's type for it (format_type), in the view's order.
	cols, colTypes []string
	// keys are the upsert key's indexes into the view's columns.
	keys []int
}

// describe finds the table and checks the view's columns against it: each
// is there (42703) with a type that takes its values (42804), and for an
// upsert a unique constraint covers exactly the key columns (42P10).
func describe(ctx context.Context, conn *pgx.Conn, o opts, view string, cols []connector.Column, viewKeys []int) (*target, error) {
	t := &target{}
	var kind string
	err := conn.QueryRow(ctx, `SELECT c.oid, quote_ident(n.nspname), quote_ident(n.nspname) || '.' || quote_ident(c.relname), c.relkind::text
		FROM pg_class c JOIN pg_namespace n ON n.oid = c.relnamespace WHERE c.oid = to_regclass($1)`, o.table).Scan(&t.oid, &t.schema, &t.name, &kind)
	if errors.Is(err, pgx.ErrNoRows) {
		return nil, sqlerr.New(sqlerr.UndefinedTable, "postgres sink: table %q does not exist in database %q (create it first)", o.table, o.cfg.Database)
	}
	if err != nil {
		return nil, opError("look up table "+o.table, err)
	}
	if kind != "r" && kind != "p" {
		return nil, sqlerr.New(sqlerr.WrongObjectType, "postgres sink: %q is not a table", o.table)
	}
	rows, err := conn.Query(ctx, `SELECT attnum, attname, format_type(atttypid, atttypmod), format_type(atttypid, NULL)
		FROM pg_attribute WHERE attrelid = $1 AND attnum > 0 AND NOT attisdropped`, t.oid)
	if err != nil {
		return nil, opError("read the columns of "+o.table, err)
	}
	type col struct {
		num       int16
		typ, typ0 string
	}
	have := map[string]col{}
	for rows.Next() {
		var c col
		var name string
		if err := rows.Scan(&c.num, &name, &c.typ, &c.typ0); err != nil {
			rows.Close()
			return nil, opError("read the columns of "+o.table, err)
		}
		have[name] = c
	}
	rows.Close()
	if err := rows.Err(); err != nil {
		return nil, opError("read the columns of "+o.table, err)
	}
	byNum := map[int16]int{}
	for i, c := range cols {
		hc, ok := have[c.Name]
		if !ok {
			return nil, sqlerr.New(sqlerr.UndefinedColumn, "postgres sink: column %q of view %s is not in table %s", c.Name, view, t.name)
		}
		if !accepts(c.Type, hc.typ0) {
			return nil, sqlerr.New(sqlerr.DatatypeMismatch, "postgres sink: column %q of view %s is %s, and column %s of table %s is %s",
				c.Name, view, c.Type, c.Name, t.name, hc.typ)
		}
		t.cols = append(t.cols, pgx.Identifier{c.Name}.Sanitize())
		t.colTypes = append(t.colTypes, hc.typ)
		byNum[hc.num] = i
	}
	if o.typ != typeUpsert {
		return t, nil
	}
	if len(o.keys) > 0 {
		for _, k := range o.keys {
			i := slices.IndexFunc(cols, func(c connector.Column) bool { return c.Name == k })
			if i < 0 {
				return nil, sqlerr.New(sqlerr.UndefinedColumn, "postgres sink: primary_key column %q is not a column of view %s", k, view)
			}
			if slices.Contains(t.keys, i) {
				return nil, sqlerr.New(sqlerr.InvalidParameterValue, "postgres sink: primary_key names column %q twice", k)
			}
			t.keys = append(t.keys, i)
		}
	} else if len(viewKeys) > 0 {
		t.keys = slices.Clone(viewKeys)
	} else {
		return nil, sqlerr.New(sqlerr.InvalidParameterValue,
			"postgres sink: view %s has no key, so an upsert sink needs option \"primary_key\" (the columns of a unique constraint of %s)", view, t.name)
	}
	// ON CONFLICT (keys) needs a unique index on exactly those columns.
	idx, err := conn.Query(ctx, `SELECT indkey::int2[] FROM pg_index
		WHERE indrelid = $1 AND indisunique AND indpred IS NULL AND indexprs IS NULL`, t.oid)
	if err != nil {
		return nil, opError("read the indexes of "+o.table, err)
	}
	want := make([]int, len(t.keys))
	copy(want, t.keys)
	slices.Sort(want)
	found := false
	for idx.Next() {
		var nums []int16
		if err := idx.Scan(&nums); err != nil {
			idx.Close()
			return nil, opError("read the indexes of "+o.table, err)
		}
		var got []int
		for _, n := range nums {
			i, ok := byNum[n]
			if !ok {
				got = nil
				break
			}
			got = append(got, i)
		}
		slices.Sort(got)
		if slices.Equal(got, want) {
			found = true
		}
	}
	idx.Close()
	if err := idx.Err(); err != nil {
		return nil, opError("read the indexes of "+o.table, err)
	}
	if !found {
		names := make([]string, len(t.keys))
		for i, k := range t.keys {
			names[i] = cols[k].Name
		}
		return nil, sqlerr.New(sqlerr.InvalidColumnReference,
			"postgres sink: table %s has no primary key or unique constraint on exactly (%s), which an upsert sink needs",
			t.name, strings.Join(names, ", "))
	}
	return t, nil
}

// accepts reports whether a column of PostgreSQL type pg (format_type
// without modifiers) takes every value of streamdb type t in its text
// form without loss.
func accepts(t types.T, pg string) bool {
	ok := func(names ...string) bool { return slices.Contains(names, pg) }
	switch t.Kind {
	case types.Bool:
		return ok("boolean")
	case types.Int16:
		return ok("smallint", "integer", "bigint", "numeric")
	case types.Int32:
		return ok("integer", "bigint", "numeric")
	case types.Int64:
		return ok("bigint", "numeric")
	case types.Float32:
		return ok("real", "double precision")
	case types.Float64:
		return ok("double precision")
	case types.Numeric:
		return ok("numeric")
	case types.Text:
		return ok("text", "character varying", "character")
	case types.Timestamp:
		if t.TZ {
			return ok("timestamp with time zone")
		}
		return ok("timestamp without time zone")
	case types.Date:
		return ok("date")
	case types.Interval:
		return ok("interval")
	case types.TextArray:
		if t.Prec == 0 {
			return ok("text[]", "character varying[]")
		}
		elem, isArray := strings.CutSuffix(pg, "[]")
		return isArray && accepts(types.ArrayElem(t), elem)
	case types.JSON, types.JSONB:
		return ok("jsonb", "json")
	case types.UUID:
		return ok("uuid")
	case types.Bytea:
		return ok("bytea")
	case types.Time:
		return ok("time without time zone")
	case types.TimeTZ:
		return ok("time with time zone")
	}
	return false
}

// ensureProgress creates the progress table in the target's schema if it
// is not there.
func ensureProgress(ctx context.Context, conn *pgx.Conn, schema string) error {
	_, err := conn.Exec(ctx, `CREATE TABLE IF NOT EXISTS `+schema+`.`+ProgressTable+` (
		sink_name text NOT NULL,
		sink_id bigint NOT NULL,
		gen text NOT NULL DEFAULT '',
		position bigint NOT NULL,
		committed_at timestamptz NOT NULL DEFAULT now(),
		PRIMARY KEY (sink_name, sink_id))`)
	var pe *pgconn.PgError
	if errors.As(err, &pe) && (pe.Code == "23505" || pe.Code == "42P07") {
		return nil // created meanwhile by another sink
	}
	return opError("create "+ProgressTable, err)
}

// CheckSink validates a sink's WITH options against its view (columns
// cols, key viewKeys, appendOnly when it never retracts) and against the
// target table, and creates the progress table (see the package comment, 1).
func CheckSink(ctx context.Context, with map[string]string, view string, cols []connector.Column, viewKeys []int, appendOnly bool) error {
	o, err := parseOpts(with)
	if err != nil {
		return err
	}
	if o.typ == typeAppend && !appendOnly {
		return sqlerr.New(sqlerr.FeatureNotSupported,
			"type 'append' needs an append-only view, and %q updates or deletes rows: use type 'upsert'", view)
	}
	for _, c := range cols {
		if c.Type.Kind == types.Record {
			return sqlerr.New(sqlerr.FeatureNotSupported, "postgres sink: column %q of view %s is a record, which the sink cannot write", c.Name, view)
		}
	}
	ctx, cancel := context.WithTimeout(ctx, 2*connectTimeout)
	defer cancel()
	conn, err := connect(ctx, o)
	if err != nil {
		return err
	}
	defer conn.Close(context.Background())
	t, err := describe(ctx, conn, o, view, cols, viewKeys)
	if err != nil {
		return err
	}
	return ensureProgress(ctx, conn, t.schema)
}

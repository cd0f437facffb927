// Package pgcdc reads one PostgreSQL table by logical replication
// (pgoutput, github.com/jackc/pglogrepl): its columns and primary key
// (Describe), an initial snapshot taken in the snapshot exported by the
// creation of the replication slot, so the stream that follows from the
// slot's consistent point has no gap and no overlap (Snapshot), then each
// committed transaction's INSERT, UPDATE and DELETE of the table as a
// changelog batch with the transaction's end LSN (Stream). The runtime
// (sql/cdc.go) writes each batch and its LSN durably and then confirms the
// LSN (Stream.Confirm), the only moment the slot's flush position moves.
// One table per slot.
package pgcdc

import (
	"context"
	"errors"
	"fmt"
	"net"
	"strconv"
	"strings"
	"time"

	"github.com/jackc/pgx/v5/pgconn"
	"github.com/streamdb/streamdb/connector"
	"github.com/streamdb/streamdb/sqlerr"
	"github.com/streamdb/streamdb/types"
)

// Name is the connector's name in CREATE SOURCE ... WITH (connector = ...).
const Name = "postgres-cdc"

// Config is a CDC source's WITH options.
type Config struct {
	Host, Port, User, Password string
	Database, Schema, Table    string
	Slot, Publication          string
}

// UpstreamKey is the option under which the runtime keeps the upstream
// table's columns as seen at CREATE ("name:oid,..."): a relation message
// that differs is a schema change.
const UpstreamKey = "__pg_columns"

func norm(k string) string { return strings.ReplaceAll(strings.ToLower(k), "-", "_") }

// ParseOptions reads the WITH options; an unknown or missing one is 22023.
func ParseOptions(opts map[string]string) (*Config, error) {
	c := &Config{Port: "5432", Schema: "public"}
	fields := map[string]*string{
		"hostname": &c.Host, "port": &c.Port, "username": &c.User, "password": &c.Password,
		"database.name": &c.Database, "schema.name": &c.Schema, "table.name": &c.Table,
		"slot.name": &c.Slot, "publication.name": &c.Publication,
	}
	for k, v := range opts {
		k = norm(k)
		if k == "connector" || strings.HasPrefix(k, "__") {
			continue
		}
		p, ok := fields[k]
		if !ok {
			return nil, sqlerr.New(sqlerr.InvalidParameterValue, "option %q is not known to connector %s", k, Name)
		}
		*p = v
	}
	for _, k := range []string{"hostname", "username", "database.name", "table.name", "slot.name", "publication.name"} {
		if *fields[k] == "" {
			return nil, sqlerr.New(sqlerr.InvalidParameterValue, "option %q is required by connector %s", k, Name)
		}
	}
	if n, err := strconv.Atoi(c.Port); err != nil || n <= 0 || n > 65535 {
		return nil, sqlerr.New(sqlerr.InvalidParameterValue, "option \"port\": invalid port %q", c.Port)
	}
	for _, s := range []string{c.Slot} {
		for _, r := range s {
			if !(r == '_' || r >= 'a' && r <= 'z' || r >= '0' && r <= '9') {
				return nil, sqlerr.New(sqlerr.InvalidParameterValue, "option \"slot.name\": %q may hold only lower case letters, digits and underscores", s)
			}
		}
	}
	return c, nil
}

func (c *Config) connConfig(replication bool) (*pgconn.Config, error) {
	dsn := fmt.Sprintf("host=%s port=%s dbname=%s user=%s connect_timeout=10", quoteDSN(c.Host), c.Port, quoteDSN(c.Database), quoteDSN(c.User))
	if c.Password != "" {
		dsn += " password=" + quoteDSN(c.Password)
	}
	cfg, err := pgconn.ParseConfig(dsn)
	if err != nil {
		return nil, sqlerr.New(sqlerr.InvalidParameterValue, "connector %s: %v", Name, err)
	}
	cfg.RuntimeParams["TimeZone"] = "UTC"
	cfg.RuntimeParams["DateStyle"] = "ISO, MDY"
	cfg.RuntimeParams["IntervalStyle"] = "postgres"
	cfg.RuntimeParams["extra_float_digits"] = "3"
	cfg.RuntimeParams["application_name"] = "streamdb-cdc"
	if replication {
		cfg.RuntimeParams["replication"] = "database"
	}
	return cfg, nil
}

func quoteDSN(s string) string {
	return "'" + strings.ReplaceAll(strings.ReplaceAll(s, `\`, `\\`), "'", `\'`) + "'"
}

// connect opens a connection; PostgreSQL's own refusals keep their
// SQLSTATE, an unreachable server is 08001.
func (c *Config) connect(ctx context.Context, replication bool) (*pgconn.PgConn, error) {
	cfg, err := c.connConfig(replication)
	if err != nil {
		return nil, err
	}
	conn, err := pgconn.ConnectConfig(ctx, cfg)
	if err != nil {
		return nil, upstreamErr(err)
	}
	return conn, nil
}

// upstreamErr keeps a PostgreSQL error's SQLSTATE and message.
func upstreamErr(err error) error {
	var pe *pgconn.PgError
	if errors.As(err, &pe) {
		return &sqlerr.Error{Code: pe.Code, Msg: "upstream PostgreSQL: " + pe.Message, Detail: pe.Detail, Hint: pe.Hint}
	}
	var ne net.Error
	if errors.As(err, &ne) || strings.Contains(err.Error(), "connect") {
		return sqlerr.New("08001", "upstream PostgreSQL: %v", err)
	}
	return sqlerr.New("08006", "upstream PostgreSQL: %v", err)
}

// UpCol is a column of the upstream table.
type UpCol struct {
	Name   string
	OID    uint32
	Typmod int32 // atttypmod: numeric's precision and scale, varchar's length
}

// Table is what streamdb keeps of the upstream table.
type Table struct {
	Cols     []connector.Column // the source's columns (the declared list, or all)
	Key      []int              // indexes into Cols of the primary key
	Upstream []UpCol            // every column of the upstream table, in order
	idx      []int              // Cols[i] is Upstream[idx[i]]
}

// EncodeUpstream is the UpstreamKey option's value.
func (t *Table) EncodeUpstream() string {
	parts := make([]string, len(t.Upstream))
	for i, u := range t.Upstream {
		parts[i] = fmt.Sprintf("%s:%d:%d", u.Name, u.OID, u.Typmod)
	}
	return strings.Join(parts, ",")
}

// TableFrom rebuilds a stored source's Table from its columns, key and
// UpstreamKey option.
func TableFrom(cols []connector.Column, key []int, upstream string) (*Table, error) {
	t := &Table{Cols: cols, Key: key}
	for _, p := range strings.Split(upstream, ",") {
		i := strings.LastIndexByte(p, ':')
		j := strings.LastIndexByte(p[:max(i, 0)], ':')
		if j < 0 {
			return nil, sqlerr.New(sqlerr.Internal, "stored upstream columns %q are malformed", upstream)
		}
		oid, err1 := strconv.ParseUint(p[j+1:i], 10, 32)
		mod, err2 := strconv.ParseInt(p[i+1:], 10, 32)
		if err1 != nil || err2 != nil {
			return nil, sqlerr.New(sqlerr.Internal, "stored upstream columns %q are malformed", upstream)
		}
		t.Upstream = append(t.Upstream, UpCol{p[:j], uint32(oid), int32(mod)})
	}
	for _, c := range cols {
		j := t.upIndex(c.Name)
		if j < 0 {
			return nil, sqlerr.New(sqlerr.Internal, "stored upstream columns lack %q", c.Name)
		}
		t.idx = append(t.idx, j)
	}
	return t, nil
}

func (t *Table) upIndex(name string) int {
	for j, u := range t.Upstream {
		if u.Name == name {
			return j
		}
	}
	return -1
}

// typeOf maps a PostgreSQL type to streamdb's.
func typeOf(oid uint32, typmod int32) (types.T, bool) {
	switch oid {
	case 1700:
		if typmod < 4 {
			return types.TNumeric, true
		}
		prec, scale := (typmod-4)>>16, (typmod-4)&0xffff
		if prec > 38 || scale > prec {
			return types.T{}, false
		}
		return types.NumericOf(prec, scale), true
	case 1043:
		if typmod > 4 {
			return types.T{Kind: types.Text, Prec: typmod - 4}, true
		}
		return types.TText, true
	case 16:
		return types.TBool, true
	case 21:
		return types.TInt16, true
	case 23:
		return types.TInt32, true
	case 20:
		return types.TInt64, true
	case 700:
		return types.TFloat32, true
	case 701:
		return types.TFloat64, true
	case 25:
		return types.TText, true
	case 1114:
		return types.TTimestamp, true
	case 1184:
		return types.TTimestampTZ, true
	case 1082:
		return types.TDate, true
	case 1186:
		return types.TInterval, true
	case 114:
		return types.TJSON, true
	case 3802:
		return types.TJSONB, true
	}
	return types.T{}, false
}

// Describe connects to the upstream database and checks everything CREATE
// SOURCE needs: logical wal_level (55000), the table (42P01), its primary
// key (0A000), the publication (42704) and that it publishes the table
// (55000), and the declared columns (42703, 42804; none: all of them).
// It returns the source's table.
func Describe(ctx context.Context, c *Config, declared []connector.Column) (*Table, error) {
	conn, err := c.connect(ctx, false)
	if err != nil {
		return nil, err
	}
	defer conn.Close(context.Background())
	one := func(q string, args ...string) ([][][]byte, error) {
		params := make([][]byte, len(args))
		for i, a := range args {
			params[i] = []byte(a)
		}
		res := conn.ExecParams(ctx, q, params, nil, nil, nil).Read()
		if res.Err != nil {
			return nil, upstreamErr(res.Err)
		}
		return res.Rows, nil
	}
	rows, err := one("SHOW wal_level")
	if err != nil {
		return nil, err
	}
	if len(rows) != 1 || string(rows[0][0]) != "logical" {
		return nil, &sqlerr.Error{Code: sqlerr.ObjectNotInPrereqState,
			Msg:  fmt.Sprintf("upstream PostgreSQL has wal_level = %s: logical replication needs wal_level = logical", rows[0][0]),
			Hint: "Set wal_level = logical in postgresql.conf and restart PostgreSQL."}
	}
	rows, err = one(`SELECT c.oid::text, c.relreplident::text FROM pg_class c JOIN pg_namespace n ON n.oid = c.relnamespace
		WHERE n.nspname = $1 AND c.relname = $2 AND c.relkind IN ('r', 'p')`, c.Schema, c.Table)
	if err != nil {
		return nil, err
	}
	if len(rows) == 0 {
		return nil, sqlerr.New(sqlerr.UndefinedTable, "upstream PostgreSQL: relation \"%s.%s\" does not exist", c.Schema, c.Table)
	}
	relid := string(rows[0][0])
	rows, err = one(`SELECT a.attname, a.atttypid::text, a.atttypmod::text, coalesce(a.attnum = ANY (i.indkey), false)
		FROM pg_attribute a LEFT JOIN pg_index i ON i.indrelid = a.attrelid AND i.indisprimary
		WHERE a.attrelid = $1::oid AND a.attnum > 0 AND NOT a.attisdropped ORDER BY a.attnum`, relid)
	if err != nil {
		return nil, err
	}
	t := &Table{}
	var pk []string
	for _, r := range rows {
		oid, _ := strconv.ParseUint(string(r[1]), 10, 32)
		mod, _ := strconv.ParseInt(string(r[2]), 10, 32)
		t.Upstream = append(t.Upstream, UpCol{string(r[0]), uint32(oid), int32(mod)})
		if string(r[3]) == "t" {
			pk = append(pk, string(r[0]))
		}
	}
	if len(pk) == 0 {
		return nil, &sqlerr.Error{Code: sqlerr.FeatureNotSupported,
			Msg:  fmt.Sprintf("upstream table \"%s.%s\" has no primary key: connector %s needs one to key its changelog", c.Schema, c.Table, Name),
			Hint: "Add a PRIMARY KEY to the upstream table."}
	}
	rows, err = one(`SELECT puballtables::text FROM pg_publication WHERE pubname = $1`, c.Publication)
	if err != nil {
		return nil, err
	}
	if len(rows) == 0 {
		return nil, sqlerr.New(sqlerr.UndefinedObject, "upstream PostgreSQL: publication %q does not exist", c.Publication)
	}
	rows, err = one(`SELECT 1 FROM pg_publication_tables WHERE pubname = $1 AND schemaname = $2 AND tablename = $3`, c.Publication, c.Schema, c.Table)
	if err != nil {
		return nil, err
	}
	if len(rows) == 0 {
		return nil, &sqlerr.Error{Code: sqlerr.ObjectNotInPrereqState,
			Msg:  fmt.Sprintf("upstream publication %q does not publish table \"%s.%s\"", c.Publication, c.Schema, c.Table),
			Hint: fmt.Sprintf("ALTER PUBLICATION %s ADD TABLE %s.%s", c.Publication, c.Schema, c.Table)}
	}
	names := make([]string, 0, len(t.Upstream))
	if len(declared) == 0 {
		for _, u := range t.Upstream {
			names = append(names, u.Name)
		}
	} else {
		for _, d := range declared {
			names = append(names, d.Name)
		}
	}
	for i, n := range names {
		j := t.upIndex(n)
		if j < 0 {
			return nil, sqlerr.New(sqlerr.UndefinedColumn, "column %q does not exist in upstream table \"%s.%s\"", n, c.Schema, c.Table)
		}
		ty, ok := typeOf(t.Upstream[j].OID, t.Upstream[j].Typmod)
		if !ok {
			return nil, &sqlerr.Error{Code: sqlerr.FeatureNotSupported,
				Msg:  fmt.Sprintf("column %q of upstream table \"%s.%s\" has a type (oid %d) connector %s does not read", n, c.Schema, c.Table, t.Upstream[j].OID, Name),
				Hint: "Leave the column out with a column list."}
		}
		if len(declared) > 0 && declared[i].Type.Kind != ty.Kind || len(declared) > 0 && declared[i].Type.TZ != ty.TZ {
			return nil, sqlerr.New(sqlerr.DatatypeMismatch, "column %q is %s upstream, declared %s", n, ty, declared[i].Type)
		}
		t.Cols = append(t.Cols, connector.Column{Name: n, Type: ty})
		t.idx = append(t.idx, j)
	}
	for _, k := range pk {
		found := false
		for i, col := range t.Cols {
			if col.Name == k {
				t.Key = append(t.Key, i)
				found = true
			}
		}
		if !found {
			return nil, sqlerr.New(sqlerr.InvalidColumnReference, "the column list leaves out primary key column %q of upstream table \"%s.%s\"", k, c.Schema, c.Table)
		}
	}
	return t, nil
}

// backoff is how long a stream waits between status updates at most.
const statusEvery = time.Second

package sql

import (
	"math"
	"regexp"
	"strconv"
	"strings"
	"time"

	"github.com/streamdb/streamdb/exec/expr"
	"github.com/streamdb/streamdb/sql/bind"
	"github.com/streamdb/streamdb/sql/parse"
	"github.com/streamdb/streamdb/sqlerr"
	"github.com/streamdb/streamdb/storage"
	"github.com/streamdb/streamdb/types"
)

// Column defaults in the catalog and in COPY. CREATE TABLE checks each
// DEFAULT expression (bind.ColumnDefault) and stores it as PostgreSQL's
// pg_get_expr prints it: a literal folded to the column's type
// ('x'::text, 5, '7'::bigint, true), anything else as written (now()).
// INSERT binds the stored text (sql/bind/insert.go); COPY with a column
// list evaluates it once per statement.

// columnDefaults fills t's columns' Default from the parsed columns.
func columnDefaults(e *Engine, t *storage.TableDef, cols []parse.ColumnDef) error {
	for i, c := range cols {
		if c.Default == "" {
			continue
		}
		b := &bind.Binder{Cat: e}
		ex, _, _, err := b.ColumnDefault(c.Default, t.Columns[i], t.Name)
		if err != nil {
			return err
		}
		text, err := defaultText(strings.TrimSpace(c.Default), ex, t.Columns[i].Type)
		if err != nil {
			return err
		}
		t.Columns[i].Default = text
	}
	return nil
}

var (
	intLiteral     = regexp.MustCompile(`^-?[0-9]+$`)
	numericLiteral = regexp.MustCompile(`^-?([0-9]+\.?[0-9]*|\.[0-9]+)([eE][-+]?[0-9]+)?$`)
	stringLiteral  = regexp.MustCompile(`^'([^']|'')*'$`)
)

// defaultText is a default as PostgreSQL's pg_get_expr prints it, which
// shows the expression as analysed, not folded: a string literal becomes
// a constant of the column's type ('x'::text, its value as the type
// prints it), a number keeps its own type (7, 1.5; '-3'::integer,
// '3000000000'::bigint), true and false are bare, NULL is no default at
// all, and anything else is kept as written (now(), 2 + 3; PostgreSQL
// would also normalise its spacing and case).
func defaultText(text string, ex expr.Expr, t types.T) (string, error) {
	lower := strings.ToLower(text)
	switch {
	case lower == "null":
		return "", nil
	case lower == "true" || lower == "false":
		return lower, nil
	case intLiteral.MatchString(text):
		v, err := strconv.ParseInt(text, 10, 64)
		switch {
		case err != nil:
			return numberText(text, "numeric"), nil
		case v >= math.MinInt32 && v <= math.MaxInt32:
			return numberText(text, "integer"), nil
		}
		return numberText(text, "bigint"), nil
	case numericLiteral.MatchString(text):
		return numberText(text, "numeric"), nil
	case stringLiteral.MatchString(text):
		d, err := expr.EvalConst(&expr.Ctx{Now: time.Now().UnixMicro()}, ex)
		if err != nil {
			return "", err
		}
		if d.Null {
			return "", nil
		}
		name := bind.FormatTypeName(t)
		if t.Kind == types.Text && t.Prec > 0 {
			name = bind.FormatTypeName(t)
		}
		return quoteLiteral(types.TextOf(d, t)) + "::" + name, nil
	}
	return text, nil
}

// numberText prints a number constant of PostgreSQL type name: integer
// and numeric ones bare unless negative.
func numberText(text, name string) string {
	if text[0] != '-' && (name == "integer" || name == "numeric") {
		return text
	}
	return quoteLiteral(text) + "::" + name
}

func quoteLiteral(s string) string {
	out := []byte{'\''}
	for i := 0; i < len(s); i++ {
		if s[i] == '\'' {
			out = append(out, '\'')
		}
		out = append(out, s[i])
	}
	return string(append(out, '\''))
}

// copyDefaults evaluates, once for the statement, the defaults of the
// columns a COPY column list leaves out; nil if none has one. A default
// whose value differs per row (random(), gen_random_uuid()) is refused.
func copyDefaults(e *Engine, t *storage.TableDef, cols []int) ([]types.Datum, error) {
	if len(cols) == len(t.Columns) {
		return nil, nil
	}
	var out []types.Datum
	now := time.Now().UnixMicro()
	for i, c := range t.Columns {
		if c.Default == "" || contains(cols, i) {
			continue
		}
		ex, _, volatile, err := (&bind.Binder{Cat: e}).ColumnDefault(c.Default, c, t.Name)
		if err != nil {
			return nil, err
		}
		if volatile {
			return nil, sqlerr.New(sqlerr.FeatureNotSupported,
				"COPY cannot fill column %q of %q with its default %s: its value differs per row (list the column and give its values)", c.Name, t.Name, c.Default)
		}
		d, err := expr.EvalConst(&expr.Ctx{Now: now}, ex)
		if err != nil {
			return nil, err
		}
		if out == nil {
			out = make([]types.Datum, len(t.Columns))
			for k := range out {
				out[k] = types.Null
			}
		}
		out[i] = d
	}
	return out, nil
}

// appendMissing gives column col, which the COPY's column list leaves
// out, its default or NULL in the current row.
func appendMissing(c *copyIn, col int) error {
	if c.defs == nil || c.defs[col].Null {
		return c.appendNull(col)
	}
	d := c.defs[col]
	if ic := c.ints[col]; ic != nil {
		ic.set(c.rows, d)
		return nil
	}
	types.AppendDatum(c.bls[col], d, c.ts[col])
	return nil
}

// attrdefRows adds a pg_attrdef row per column default. adbin holds the
// expression's text (PostgreSQL's holds a node tree that only pg_get_expr
// reads; ours returns the text). Its oid is derived from the column's.
func attrdefRows(t *table, rels []relation) {
	for _, r := range rels {
		for i, c := range r.def.Columns {
			if c.Default != "" {
				t.add(i64(attrdefOID(r.oid, i+1)), i64(r.oid), i64(int64(i+1)), str(c.Default))
			}
		}
	}
}

// attrdefOID is the oid of the default of column attnum of relation rel:
// above the indexes' and constraints' oids (pgcatalog_keys.go) and stable
// across restarts.
func attrdefOID(rel int64, attnum int) int64 {
	return oidFirstConstraint + 1<<29 + (rel-oidFirstUser)%(1<<29/1600)*1600 + int64(attnum)%1600
}

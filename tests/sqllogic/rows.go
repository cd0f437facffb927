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

// This file holds the query helpers shared by end-to-end tests.

// ExecAll runs each statement and fails the test at the first error.
func ExecAll(t *testing.T, c *pgx.Conn, stmts ...string) {
	t.Helper()
	for _, s := range stmts {
		if _, err := c.Exec(context.Background(), s); err != nil {
			t.Fatalf("%s: %v", s, err)
		}
	}
}

// QueryRows runs sql (extended protocol, text results) and returns its rows
// rendered as text, one line a row, in no particular order.
func QueryRows(c *pgx.Conn, sql string) ([]string, error) {
	ctx, cancel := context.WithTimeout(context.Background(), time.Minute)
	defer cancel()
	res := c.PgConn().ExecParams(ctx, sql, nil, nil, nil, nil).Read()
	if res.Err != nil {
		return nil, res.Err
	}
	return rowLines(res.Rows), nil
}

// rowLines renders text-format rows as QueryRows returns them.
func rowLines(rows [][][]byte) []string {
	lines := make([]string, len(rows))
	for i, r := range rows {
		vals := make([]string, len(r))
		for j, v := range r {
			if v == nil {
				vals[j] = "NULL"
			} else {
				vals[j] = "'" + string(v) + "'"
			}
		}
		lines[i] = strings.Join(vals, " | ")
	}
	return lines
}

// PlainRows runs q and returns each row's values in PostgreSQL's text
// format joined by spaces (NULL as "NULL").
func PlainRows(c *pgx.Conn, q string) ([]string, error) {
	rows, err := c.Query(context.Background(), q, pgx.QueryExecModeSimpleProtocol)
	if err != nil {
		return nil, err
	}
	defer rows.Close()
	var out []string
	for rows.Next() {
		raw := rows.RawValues()
		parts := make([]string, len(raw))
		for i, v := range raw {
			if v == nil {
				parts[i] = "NULL"
			} else {
				parts[i] = string(v)
			}
		}
		out = append(out, strings.Join(parts, " "))
	}
	return out, rows.Err()
}

// MustRows is QueryRows, failing the test on an error.
func MustRows(t testing.TB, c *pgx.Conn, q string) []string {
	t.Helper()
	rows, err := QueryRows(c, q)
	if err != nil {
		t.Fatalf("%s: %v", q, err)
	}
	return rows
}

// SQLState is the SQLSTATE of a server error, or "" for any other error.
func SQLState(err error) string {
	var pe *pgconn.PgError
	if errors.As(err, &pe) {
		return pe.Code
	}
	return ""
}

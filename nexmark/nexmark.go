// Package nexmark is the Nexmark suite as streamdb runs it: the queries, in
// RisingWave's dialect (snake_case columns, TUMBLE/HOP table functions),
// one .sql file each under queries/ (q6, q10, q12 and q13 are left out:
// q10 writes files, q12 uses processing time, q6 and q13 need a
// partitioned OVER aggregate and a side input), and the CREATE SOURCE
// statements of the person, auction and bid tables over streamdb's nexmark
// connector. `streamdb bench nexmark` and the tests (tests/sqllogic) read
// them from here.
package nexmark

import (
	"embed"
	"fmt"
	"sort"
	"strconv"
	"strings"
)

//go:embed queries/*.sql
var files embed.FS

// Query is one Nexmark query.
type Query struct {
	Name string // q0, q1, ...
	SQL  string // the SELECT, without a trailing semicolon
}

// Queries returns the queries in number order.
func Queries() []Query {
	ents, err := files.ReadDir("queries")
	if err != nil {
		panic(err) // embedded: cannot fail
	}
	var out []Query
	for _, e := range ents {
		b, err := files.ReadFile("queries/" + e.Name())
		if err != nil {
			panic(err)
		}
		out = append(out, Query{Name: strings.TrimSuffix(e.Name(), ".sql"),
			SQL: strings.TrimRight(strings.TrimSpace(string(b)), ";")})
	}
	sort.Slice(out, func(i, j int) bool { return num(out[i].Name) < num(out[j].Name) })
	return out
}

func num(name string) int {
	n, _ := strconv.Atoi(strings.TrimPrefix(name, "q"))
	return n
}

// Columns are the declared columns of the person, auction and bid tables,
// as RisingWave's create_tables with TIMESTAMP columns.
var Columns = map[string]string{
	"person": `id BIGINT, name VARCHAR, email_address VARCHAR, credit_card VARCHAR,
		city VARCHAR, state VARCHAR, date_time TIMESTAMP, extra VARCHAR`,
	"auction": `id BIGINT, item_name VARCHAR, description VARCHAR, initial_bid BIGINT,
		reserve BIGINT, date_time TIMESTAMP, expires TIMESTAMP, seller BIGINT, category BIGINT, extra VARCHAR`,
	"bid": `auction BIGINT, bidder BIGINT, price BIGINT, channel VARCHAR, url VARCHAR,
		date_time TIMESTAMP, extra VARCHAR`,
}

// Tables names the three tables in event-kind order.
var Tables = []string{"person", "auction", "bid"}

// SourceDDL returns the CREATE SOURCE statements of the three tables over
// events [0, events) of seed, each in splits splits, unpaced.
func SourceDDL(events int64, seed uint64, splits int) []string {
	return SourceDDLWatermark(events, seed, splits, "")
}

// SourceDDLWatermark is SourceDDL with, if delay is not empty, WATERMARK
// FOR date_time AS date_time - INTERVAL 'delay' on each table.
func SourceDDLWatermark(events int64, seed uint64, splits int, delay string) []string {
	var out []string
	for _, t := range Tables {
		cols := Columns[t]
		if delay != "" {
			cols += fmt.Sprintf(", WATERMARK FOR date_time AS date_time - INTERVAL '%s'", delay)
		}
		out = append(out, fmt.Sprintf("CREATE SOURCE %s (%s) WITH (connector = 'nexmark', nexmark.table = '%s', "+
			"nexmark.events = %d, nexmark.seed = %d, nexmark.split = %d)", t, cols, t, events, seed, splits))
	}
	return out
}

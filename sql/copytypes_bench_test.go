package sql

import (
	"fmt"
	"math"
	"math/rand/v2"
	"strconv"
	"syscall"
	"testing"
	"time"

	"github.com/streamdb/streamdb/storage"
	"github.com/streamdb/streamdb/types"
)

// copyTypeTables are the tables of BenchmarkCopyParseTypes: the column
// types users have, not only BIGINT and TEXT.
var copyTypeTables = map[string]*storage.TableDef{
	// (id BIGINT, k INT, amount DOUBLE PRECISION, ts TIMESTAMP, name VARCHAR(32))
	"mixed": {ID: 1, Name: "t", Kind: storage.KindStream, Partitions: 1, Columns: []storage.ColumnDef{
		{Name: "id", Type: types.TInt64}, {Name: "k", Type: types.TInt32}, {Name: "amount", Type: types.TFloat64},
		{Name: "ts", Type: types.TTimestamp}, {Name: "name", Type: types.T{Kind: types.Text, Prec: 32}}}},
	// (d DATE, tz TIMESTAMPTZ, price NUMERIC(12,2), ok BOOLEAN, s SMALLINT, r REAL)
	"more": {ID: 1, Name: "t", Kind: storage.KindStream, Partitions: 1, Columns: []storage.ColumnDef{
		{Name: "d", Type: types.TDate}, {Name: "tz", Type: types.TTimestampTZ}, {Name: "price", Type: types.T{Kind: types.Numeric, Prec: 12, Scale: 2}},
		{Name: "ok", Type: types.TBool}, {Name: "s", Type: types.TInt16}, {Name: "r", Type: types.TFloat32}}},
	// (id BIGINT, ts TIMESTAMP, payload JSONB): events as they come from Kafka
	"json": {ID: 1, Name: "t", Kind: storage.KindStream, Partitions: 1, Columns: []storage.ColumnDef{
		{Name: "id", Type: types.TInt64}, {Name: "ts", Type: types.TTimestamp}, {Name: "payload", Type: types.T{Kind: types.JSONB}}}},
	// (id BIGINT, ts TIMESTAMP, payload JSONB) with larger payloads: nested
	// objects, arrays of objects, strings with escapes, numbers of every
	// spelling, keys out of jsonb's order and one duplicated
	"events": {ID: 1, Name: "t", Kind: storage.KindStream, Partitions: 1, Columns: []storage.ColumnDef{
		{Name: "id", Type: types.TInt64}, {Name: "ts", Type: types.TTimestamp}, {Name: "payload", Type: types.T{Kind: types.JSONB}}}},
}

// copyTypeRowCounts are the rows per run of a shape, when not 1M.
var copyTypeRowCounts = map[string]int{"events": 200_000}

// copyTypeRows is rows of the table named shape, as a client would send
// them in text format: plain values, no NULLs.
func copyTypeRows(shape string, rows int) []byte {
	r := rand.New(rand.NewPCG(5, 9))
	data := make([]byte, 0, rows*64)
	ts := func() string {
		return fmt.Sprintf("2026-%02d-%02d %02d:%02d:%02d.%06d", 1+r.IntN(12), 1+r.IntN(28), r.IntN(24), r.IntN(60), r.IntN(60), r.IntN(1000000))
	}
	for i := range rows {
		switch shape {
		case "mixed":
			data = strconv.AppendInt(data, int64(i), 10)
			data = append(data, '\t')
			data = strconv.AppendInt(data, r.Int64N(100000), 10)
			data = append(data, '\t')
			data = strconv.AppendFloat(data, math.Round(r.Float64()*1e6)/100, 'f', -1, 64)
			data = append(data, '\t')
			data = append(data, ts()...)
			data = append(data, '\t')
			for n := 4 + r.IntN(20); n > 0; n-- {
				data = append(data, byte('a'+r.IntN(26)))
			}
		case "json":
			data = fmt.Appendf(data, "%d\t%s\t{\"user_id\": %d, \"action\": \"%s\", \"amount\": %d.%02d, \"tags\": [\"a\", \"b\"]}",
				i, ts(), r.IntN(100000), []string{"view", "click", "buy"}[r.IntN(3)], r.IntN(1000), r.IntN(100))
		case "events":
			data = fmt.Appendf(data, "%d\t%s\t", i, ts())
			data = appendEvent(data, r, i)
		case "more":
			data = fmt.Appendf(data, "20%02d-%02d-%02d\t%s+00\t%d.%02d\t%s\t%d\t%g",
				r.IntN(30), 1+r.IntN(12), 1+r.IntN(28), ts(), r.IntN(1e9), r.IntN(100), []string{"t", "f"}[r.IntN(2)], r.IntN(60000)-30000, float32(r.IntN(1e6))/8)
		}
		data = append(data, '\n')
	}
	return data
}

// appendEvent appends one event payload as a client sends it in COPY's text
// format (backslashes doubled). One row in eight has a string with JSON
// escapes (a quote, a newline, a \u escape), as user-entered text does.
func appendEvent(data []byte, r *rand.Rand, i int) []byte {
	note := "ok"
	if i%8 == 0 {
		note = `said \\"hi\\"\\nthen left \\u00e9t\\u00e9`
	}
	return fmt.Appendf(data, `{"type": "%s", "event_id": "e-%08d", "user": {"id": %d, "name": "user %d", "email": "u%d@example.com", "tags": ["vip", "beta"], "plan": {"tier": %d, "since": "2024-0%d-01"}}, `+
		`"ts": %d, "amount": %d.%02d, "tax": %de-2, "items": [{"sku": "A-%d", "qty": %d, "price": %d.99}, {"sku": "B-%d", "qty": 1, "price": 0.50}], `+
		`"geo": {"lat": 52.%04d, "lon": -13.%04d, "country": "DE"}, "ok": true, "ref": null, "ua": "Mozilla/5.0 (X11; Linux x86_64)", "note": "%s", "type": "%s"}`,
		[]string{"view", "click", "buy"}[r.IntN(3)], i, r.IntN(100000), r.IntN(100000), r.IntN(100000), r.IntN(4), 1+r.IntN(9),
		1700000000000+int64(i), r.IntN(1000), r.IntN(100), r.IntN(1000), r.IntN(1000), 1+r.IntN(5), r.IntN(100), r.IntN(1000),
		r.IntN(10000), r.IntN(10000), note, []string{"page_view", "add_to_cart", "checkout"}[r.IntN(3)])
}

// BenchmarkCopyParseTypes is BenchmarkCopyParse over tables of the column
// types users have: INT, DOUBLE PRECISION, TIMESTAMP, VARCHAR(n) (mixed);
// DATE, TIMESTAMPTZ, NUMERIC(p,s), BOOLEAN, SMALLINT, REAL (more);
// BIGINT, TIMESTAMP, JSONB (json; events, with larger payloads, 200K
// rows), in text and CSV format.
//
//	go test ./sql/ -run '^$' -bench BenchmarkCopyParseTypes -benchtime 5x
func BenchmarkCopyParseTypes(b *testing.B) {
	for _, shape := range []string{"mixed", "more", "json", "events"} {
		rows := 1_000_000
		if n, ok := copyTypeRowCounts[shape]; ok {
			rows = n
		}
		text := copyTypeRows(shape, rows)
		for _, format := range []string{"text", "csv"} {
			if (shape == "json" || shape == "events") && format == "csv" {
				continue // a CSV writer quotes JSON: not this data
			}
			b.Run(shape+"/"+format, func(b *testing.B) {
				opts, err := copyOptions(map[string]string{"format": format})
				if err != nil {
					b.Fatal(err)
				}
				data := append([]byte(nil), text...)
				if format == "csv" {
					for i, ch := range data {
						if ch == '\t' {
							data[i] = ','
						}
					}
				}
				chunks := chunked(data)
				t := copyTypeTables[shape]
				cols := make([]int, len(t.Columns))
				for i := range cols {
					cols[i] = i
				}
				b.SetBytes(int64(len(data)))
				cpu0 := processCPU(b)
				for b.Loop() {
					c := newCopyIn(nil, t, cols, opts)
					c.stageAt = math.MaxInt // parsing only: keep every batch
					for _, ch := range chunks {
						if err := c.Write(ch); err != nil {
							b.Fatal(err)
						}
					}
					c.flushBatch()
					if c.total != int64(rows) {
						b.Fatalf("parsed %d rows, want %d", c.total, rows)
					}
					c.release()
				}
				b.ReportMetric(float64(rows)*float64(b.N)/b.Elapsed().Seconds(), "rows/s")
				// CPU time, not wall time: the figure to trust on a shared machine.
				b.ReportMetric(float64(rows)*float64(b.N)/(processCPU(b)-cpu0).Seconds(), "rows/cpu-s")
			})
		}
	}
}

// processCPU is the process's user and system CPU time so far.
func processCPU(b *testing.B) time.Duration {
	var ru syscall.Rusage
	if err := syscall.Getrusage(syscall.RUSAGE_SELF, &ru); err != nil {
		b.Fatal(err)
	}
	return time.Duration(ru.Utime.Nano() + ru.Stime.Nano())
}

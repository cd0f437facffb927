package postgres

import (
	"testing"

	"github.com/apache/arrow-go/v18/arrow"
	"github.com/apache/arrow-go/v18/arrow/array"
	"github.com/apache/arrow-go/v18/arrow/memory"
	"github.com/streamdb/streamdb/connector"
	"github.com/streamdb/streamdb/types"
)

// record builds a batch of rows of ts (each row a []types.Datum).
func record(t *testing.T, mem memory.Allocator, ts []types.T, rows [][]types.Datum) arrow.RecordBatch {
	t.Helper()
	var fields []arrow.Field
	var cols []arrow.Array
	for c, ty := range ts {
		b := types.NewBuilder(mem, ty)
		for _, r := range rows {
			types.AppendDatum(b, r[c], ty)
		}
		a := b.NewArray()
		b.Release()
		defer a.Release()
		cols = append(cols, a)
		fields = append(fields, arrow.Field{Name: "c", Type: a.DataType(), Nullable: true})
	}
	return array.NewRecordBatch(arrow.NewSchema(fields, nil), cols, int64(len(rows)))
}

// TestCopyEncoder: COPY's text format with its escapes and \N, and the
// staging rows' order and kind for an upsert.
func TestCopyEncoder(t *testing.T) {
	mem := memory.NewCheckedAllocator(memory.NewGoAllocator())
	defer mem.AssertSize(t, 0)
	ts := []types.T{types.TInt64, types.TText, types.TFloat64}
	rows := [][]types.Datum{
		{types.Int(1), types.Str("a\tb\nc\\d\re"), types.Float(1.5)},
		{types.Int(-2), types.Null, types.Null},
		{types.Null, types.Str(""), types.Float(0.1)},
	}
	snap := record(t, mem, ts, rows)
	defer snap.Release()
	e := &copyEncoder{ts: ts, snapshot: true}
	if err := e.add(snap); err != nil {
		t.Fatal(err)
	}
	want := "1\ta\\tb\\nc\\\\d\\re\t1.5\n-2\t\\N\t\\N\n\\N\t\t0.1\n"
	if string(e.buf) != want {
		t.Fatalf("append snapshot:\n got %q\nwant %q", e.buf, want)
	}

	withOps := append(append([]types.T{}, ts...), types.TInt64)
	ops := []connector.Op{connector.OpInsert, connector.OpUpdateBefore, connector.OpDelete}
	for i := range rows {
		rows[i] = append(rows[i], types.Int(int64(ops[i])))
	}
	changes := record(t, mem, withOps, rows)
	defer changes.Release()
	u := &copyEncoder{ts: ts, upsert: true}
	if err := u.add(changes); err != nil {
		t.Fatal(err)
	}
	want = "1\t1\t1\ta\\tb\\nc\\\\d\\re\t1.5\n2\t0\t-2\t\\N\t\\N\n3\t0\t\\N\t\t0.1\n"
	if string(u.buf) != want || u.rows != 3 {
		t.Fatalf("upsert changes (%d rows):\n got %q\nwant %q", u.rows, u.buf, want)
	}
	// An append sink refuses a retraction rather than drop it.
	a := &copyEncoder{ts: ts, sink: "s", view: "v"}
	if err := a.add(changes); err == nil {
		t.Fatal("an append sink took a retraction")
	}
}

// TestCopyEncoderStoredBytes: bytea (raw bytes in its String column) goes
// out as its hex text, escaped; char(n) blank-padded.
func TestCopyEncoderStoredBytes(t *testing.T) {
	mem := memory.NewCheckedAllocator(memory.NewGoAllocator())
	defer mem.AssertSize(t, 0)
	char3 := types.T{Kind: types.Text, Pad: true, Prec: 3}
	ts := []types.T{types.TBytea, char3}
	rec := record(t, mem, ts, [][]types.Datum{{types.Str("\x00\xff\\\t\n"), types.Str("a")}})
	defer rec.Release()
	e := &copyEncoder{ts: ts, snapshot: true}
	if err := e.add(rec); err != nil {
		t.Fatal(err)
	}
	if want := "\\\\x00ff5c090a\ta  \n"; string(e.buf) != want {
		t.Fatalf("got %q, want %q", e.buf, want)
	}
}

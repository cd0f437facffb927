package types

import (
	"testing"

	"github.com/apache/arrow-go/v18/arrow"
	"github.com/apache/arrow-go/v18/arrow/array"
	"github.com/apache/arrow-go/v18/arrow/memory"
)

// TestUpgradeUUIDLayout reads a block's uuid column written as its
// canonical text (String, the SQL type in the field's metadata) as today's
// FixedSizeBinary(16), and leaves text alone.
func TestUpgradeUUIDLayout(t *testing.T) {
	mem := memory.NewGoAllocator()
	const u = "a0eebc99-9c0b-4ef8-bb6d-6bb9bd380a11"
	sb := array.NewStringBuilder(mem)
	sb.Append(u)
	sb.AppendNull()
	tb := array.NewStringBuilder(mem)
	tb.Append(u)
	tb.Append("x")
	oldU := Field("u", TUUID)
	oldU.Type = arrow.BinaryTypes.String
	schema := arrow.NewSchema([]arrow.Field{oldU, Field("t", TText)}, nil)
	cols := []arrow.Array{sb.NewArray(), tb.NewArray()}
	rec := array.NewRecordBatch(schema, cols, 2)
	cols[0].Release()
	cols[1].Release()
	up := UpgradeArrayLayout(rec)
	defer up.Release()
	if !arrow.TypeEqual(up.Column(0).DataType(), UUIDArrow) || !arrow.TypeEqual(up.Column(1).DataType(), arrow.BinaryTypes.String) {
		t.Fatalf("upgraded layouts %s, %s", up.Column(0).DataType(), up.Column(1).DataType())
	}
	if d := DatumAt(up.Column(0), 0, TUUID); d.S != u {
		t.Fatalf("uuid read back as %q", d.S)
	}
	if !up.Column(0).IsNull(1) {
		t.Fatal("NULL uuid not kept")
	}
	if got := TypesOf(up.Schema()); got[0] != TUUID || got[1] != TText {
		t.Fatalf("types %v", got)
	}
}

// TestUUIDBytesText: the text and the 16 bytes convert both ways, and
// ParseUUIDBytes takes uuid_in's other spellings.
func TestUUIDBytesText(t *testing.T) {
	const u = "a0eebc99-9c0b-4ef8-bb6d-6bb9bd380a11"
	b := UUIDBytes(u)
	if UUIDText(b[:]) != u {
		t.Fatalf("round trip %q", UUIDText(b[:]))
	}
	for _, s := range []string{u, "A0EEBC99-9C0B-4EF8-BB6D-6BB9BD380A11", "{a0eebc999c0b4ef8bb6d6bb9bd380a11}", "a0eebc99-9c0b4ef8-bb6d6bb9-bd380a11"} {
		var got [16]byte
		if err := ParseUUIDBytes(got[:], s); err != nil || got != b {
			t.Errorf("%s: %x, %v", s, got, err)
		}
	}
	var got [16]byte
	for _, s := range []string{"", "a0eebc99-9c0b-4ef8-bb6d-6bb9bd380a1", "a0eebc99-9c0b-4ef8-bb6d-6bb9bd380a1g", "-a0eebc99-9c0b-4ef8-bb6d-6bb9bd380a1"} {
		if err := ParseUUIDBytes(got[:], s); err == nil {
			t.Errorf("%q accepted", s)
		}
	}
}

// TestParseCanonicalUUID: uuid_out's spelling in either case is taken,
// anything else is left to the general parser.
func TestParseCanonicalUUID(t *testing.T) {
	const u = "a0eebc99-9c0b-4ef8-bb6d-6bb9bd380a11"
	want := UUIDBytes(u)
	var got [16]byte
	for _, s := range []string{u, "A0EEBC99-9C0B-4EF8-BB6D-6BB9BD380A11"} {
		if !ParseCanonicalUUID(got[:], s) || got != want {
			t.Errorf("%s: %x", s, got)
		}
	}
	for _, s := range []string{"{a0eebc999c0b4ef8bb6d6bb9bd380a11}", "a0eebc99-9c0b4ef8-bb6d6bb9-bd380a11", "a0eebc99-9c0b-4ef8-bb6d-6bb9bd380a1g", "a0eebc99x9c0b-4ef8-bb6d-6bb9bd380a11"} {
		if ParseCanonicalUUID(got[:], []byte(s)) {
			t.Errorf("%s taken", s)
		}
	}
}

// TestUpgradeLayoutTo: a block without type metadata (a table's rows as
// written before uuid was 16 bytes) is read by the table's column types:
// uuid as String and uuid[] as List<String> become today's layouts.
func TestUpgradeLayoutTo(t *testing.T) {
	mem := memory.NewGoAllocator()
	const u = "a0eebc99-9c0b-4ef8-bb6d-6bb9bd380a11"
	sb := array.NewStringBuilder(mem)
	sb.Append(u)
	lb := array.NewListBuilder(mem, arrow.BinaryTypes.String)
	lb.Append(true)
	lb.ValueBuilder().(*array.StringBuilder).Append(u)
	ib := array.NewInt64Builder(mem)
	ib.Append(7)
	schema := arrow.NewSchema([]arrow.Field{{Name: "c0", Type: arrow.BinaryTypes.String}, {Name: "c1", Type: arrow.ListOf(arrow.BinaryTypes.String)},
		{Name: "c2", Type: arrow.PrimitiveTypes.Int64}}, nil)
	cols := []arrow.Array{sb.NewArray(), lb.NewArray(), ib.NewArray()}
	rec := array.NewRecordBatch(schema, cols, 1)
	for _, c := range cols {
		c.Release()
	}
	ts := []T{TUUID, ArrayOf(UUID), TInt64}
	if !HasOldLayout(ts) || HasOldLayout([]T{TText, TInt64}) {
		t.Fatal("HasOldLayout")
	}
	up := UpgradeLayoutTo(rec, ts)
	defer up.Release()
	for c, ty := range ts {
		if !arrow.TypeEqual(up.Column(c).DataType(), ty.Arrow()) {
			t.Fatalf("column %d: %s, want %s", c, up.Column(c).DataType(), ty.Arrow())
		}
	}
	if d := DatumAt(up.Column(0), 0, TUUID); d.S != u {
		t.Fatalf("uuid %q", d.S)
	}
	if d := DatumAt(up.Column(1), 0, ts[1]); TextOf(d, ts[1]) != "{"+u+"}" {
		t.Fatalf("uuid[] %q", TextOf(d, ts[1]))
	}
}

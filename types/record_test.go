package types

import (
	"bytes"
	"testing"

	"github.com/apache/arrow-go/v18/arrow/array"
	"github.com/apache/arrow-go/v18/arrow/memory"
)

// TestRecordText checks record_out's quoting against PostgreSQL 15's
// output for a row of 1, NULL, the empty string, a b, x"y, p\q, (,) and ok.
func TestRecordText(t *testing.T) {
	rt := RecordOf([]RecordField{{"a", TInt32}, {"b", TText}, {"c", TText}, {"d", TText}, {"e", TText},
		{"f", TText}, {"g", TText}, {"h", TText}})
	d := Datum{R: &RecordValue{Fields: []Datum{Int(1), Null, Str(""), Str("a b"), Str(`x"y`), Str(`p\q`), Str("(,)"), Str("ok")}}}
	want := `(1,,"","a b","x""y","p\\q","(,)",ok)`
	if got := TextOf(d, rt); got != want {
		t.Errorf("record text %s, want %s", got, want)
	}
	if rt.String() != "record" || rt.OID() != OIDRecord {
		t.Errorf("record type prints %q oid %d", rt.String(), rt.OID())
	}
	if _, err := ParseText("(1,2)", T{Kind: Record}); err == nil {
		t.Error("input of a record of unknown shape was accepted")
	}
	back, err := ParseText(want, rt)
	if err != nil || TextOf(back, rt) != want {
		t.Errorf("record_in(%s) = %s, %v", want, TextOf(back, rt), err)
	}
}

// TestRecordType: equal shapes are one type, and a record's type survives
// the Arrow schema metadata; values survive an Arrow array.
func TestRecordType(t *testing.T) {
	xn := []RecordField{{"x", IntArray(Int16)}, {"n", TInt32}}
	a, b := RecordOf(xn), RecordOf(append([]RecordField(nil), xn...))
	if a != b {
		t.Fatalf("RecordOf gave %v and %v for one shape", a, b)
	}
	nested := RecordOf([]RecordField{{"r", a}, {`odd "name", (x)`, NumericOf(10, 2)}})
	for _, rt := range []T{a, nested} {
		if got, ok := DecodeType(EncodeType(rt)); !ok || got != rt {
			t.Errorf("DecodeType(%q) = %v, %v", EncodeType(rt), got, ok)
		}
	}
	xt := RecordOf([]RecordField{{"x", TInt16}, {"n", TInt32}})
	if FieldIndex(xt, "n") != 1 || FieldIndex(xt, "y") != -1 {
		t.Error("FieldIndex")
	}
	bl := NewBuilder(memory.DefaultAllocator, xt)
	defer bl.Release()
	AppendDatum(bl, Datum{R: &RecordValue{Fields: []Datum{Int(3), Int(1)}}}, xt)
	AppendDatum(bl, Null, xt)
	arr := bl.NewArray()
	defer arr.Release()
	if _, ok := arr.(*array.Struct); !ok {
		t.Fatalf("record array is %T", arr)
	}
	if d := DatumAt(arr, 0, xt); TextOf(d, xt) != "(3,1)" {
		t.Errorf("row 0: %s", TextOf(d, xt))
	}
	if !DatumAt(arr, 1, xt).Null {
		t.Error("row 1 is not NULL")
	}
	// record_send: 2 fields; int2 oid 21, length 2, 3; int4 oid 23, length 4, 1.
	want := []byte{0, 0, 0, 2, 0, 0, 0, 21, 0, 0, 0, 2, 0, 3, 0, 0, 0, 23, 0, 0, 0, 4, 0, 0, 0, 1}
	if got := AppendBinary(nil, DatumAt(arr, 0, xt), xt); !bytes.Equal(got, want) {
		t.Errorf("binary %v, want %v", got, want)
	}
}

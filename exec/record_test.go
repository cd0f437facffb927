package exec

import (
	"testing"

	"github.com/streamdb/streamdb/types"
)

// TestRecordCodec: a record's encoding (its fields in order) decodes back,
// and records compare field by field with a NULL field last, as
// PostgreSQL's btree record comparison.
func TestRecordCodec(t *testing.T) {
	rt := types.RecordOf([]types.RecordField{{Name: "x", T: types.TText}, {Name: "n", T: types.TInt32}})
	rec := func(x types.Datum, n int64) types.Datum {
		return types.Datum{R: &types.RecordValue{Fields: []types.Datum{x, types.Int(n)}}}
	}
	vals := []types.Datum{rec(types.Str("a"), 2), rec(types.Str("b"), 1), rec(types.Str("b"), 3), rec(types.Null, 0)}
	for i, d := range vals {
		buf := encodeDatum([]byte{7}, d, rt)
		got, rest, err := decodeDatum(buf[1:], rt)
		if err != nil || len(rest) != 0 || types.TextOf(got, rt) != types.TextOf(d, rt) {
			t.Errorf("%s: decoded %v (rest %d, %v)", types.TextOf(d, rt), got, len(rest), err)
		}
		for j, e := range vals {
			want := 0
			if i < j {
				want = -1
			} else if i > j {
				want = 1
			}
			if got := compareDatum(d, e, rt); got != want {
				t.Errorf("compare %s, %s = %d, want %d", types.TextOf(d, rt), types.TextOf(e, rt), got, want)
			}
		}
	}
	if _, _, err := decodeDatum([]byte{1, 1}, rt); err == nil {
		t.Error("a truncated record decoded")
	}
}

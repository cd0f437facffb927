package types

import "testing"

// TestJSONBKeyInRecord: a record's grouping key folds its jsonb fields'
// numbers as a jsonb key column does.
func TestJSONBKeyInRecord(t *testing.T) {
	rt := RecordOf([]RecordField{{Name: "j", T: TJSONB}})
	key := func(s string) string {
		d, err := EncodeJSONB(s)
		if err != nil {
			t.Fatal(err)
		}
		return RecordKey(Datum{R: &RecordValue{Fields: []Datum{Str(d)}}}, rt)
	}
	if a, b := key(`{"a": [1.0, 2.50]}`), key(`{"a": [1, 2.5]}`); a != b {
		t.Errorf("record keys differ: %s, %s", a, b)
	}
	if a, b := key(`{"a": 1.5}`), key(`{"a": 1.05}`); a == b {
		t.Errorf("record keys of unequal values alike: %s", a)
	}
}

package types

import "testing"

// TestCanonJSONB pins jsonb's printed form on cases TestJSONBPG (tests/sqllogic)
// checked against PostgreSQL 15: key order and duplicates, numbers, escapes.
func TestCanonJSONB(t *testing.T) {
	for _, tc := range []struct{ in, want string }{
		{`{"b":1,"a":2,"aa":3,"a":4}`, `{"a": 4, "b": 1, "aa": 3}`},
		{`[1.0, 2.50, 1e2, -0, -0.0, 1.5E-3, -12.5e1, 0e5, 12.340e1, 1e-2]`, `[1.0, 2.50, 100, 0, 0.0, 0.0015, -125, 0, 123.40, 0.01]`},
		{` {"s" : "a\"b\\c\/\u00e9\n\u0001" } `, `{"s": "a\"b\\c/é\n\u0001"}`},
		{`"\ud83d\ude00"`, `"😀"`},
		{`[]`, `[]`},
		{`{}`, `{}`},
		{`[true,false,null,{}]`, `[true, false, null, {}]`},
	} {
		got, err := CanonJSONB(tc.in)
		if err != nil || got != tc.want {
			t.Errorf("%s: got %s (%v), want %s", tc.in, got, err, tc.want)
		}
	}
	for _, bad := range []string{``, `01`, `[1,]`, `{"a" 1}`, `{a:1}`, `"\u0000"`, `"\ud800"`, `1.`, `-`, `.5`, `[1] x`, "\"a\tb\""} {
		if _, err := CanonJSONB(bad); err == nil {
			t.Errorf("%q: accepted", bad)
		}
	}
}

// TestJSONBBinary checks the binary layout against the parsed tree: the
// text round trip, lookups by key and index, ->>'s text.
func TestJSONBBinary(t *testing.T) {
	docs := []string{`{"a": 1, "b": [1, {"a": "}"}], "c": "x\"y", "aa": {"b": null}, "\"q": true, "zzz": -1.50}`,
		`[1, 2.0, "é", [], {}, null, false]`, `"a"`, `{}`, `{"": 0}`, `1e2`, `null`}
	for _, d := range docs {
		s, err := EncodeJSONB(d)
		if err != nil {
			t.Fatal(err)
		}
		want, _ := CanonJSONB(d)
		if got := JSONBOut(s); got != want {
			t.Errorf("out %s: got %s, want %s", d, got, want)
		}
		if got := JSONBOut(want); got != want { // the earlier format (canonical text) still reads
			t.Errorf("legacy %s: got %s", want, got)
		}
		v, _ := ParseJSON(d, true)
		for _, k := range []string{"a", "b", "c", "aa", `"q`, "", "zz", "zzz"} {
			wantV, wantOK := "", false
			if f := v.Field(k); f != nil {
				wantV, wantOK = JSONBText(f), true
			}
			got, ok := JSONBGet(s, k)
			if ok != wantOK || ok && JSONBOut(got) != wantV {
				t.Errorf("%s -> %q: got %q %v, want %q %v", want, k, got, ok, wantV, wantOK)
			}
			if ok {
				wt, wok := JSONText(v.Field(k), true)
				gt, gok := JSONBAsText(got)
				if gt != wt || gok != wok {
					t.Errorf("%s ->> %q: got %q %v, want %q %v", want, k, gt, gok, wt, wok)
				}
			}
		}
		for i := int64(-8); i < 8; i++ {
			f := v.Index(i)
			got, ok := JSONBIndex(s, i)
			if v.Kind == JArray && (f != nil) != ok || f != nil && JSONBOut(got) != JSONBText(f) {
				t.Errorf("%s -> %d: got %q %v", want, i, got, ok)
			}
		}
	}
}

// TestJSONBOrder pins jsonb's btree order on cases checked against PostgreSQL 15.
func TestJSONBOrder(t *testing.T) {
	asc := []string{`[]`, `null`, `""`, `"a"`, `"b"`, `-1`, `0`, `1`, `1.5`, `10`, `false`, `true`, `[3]`, `[null, 1]`, `[1, 2]`,
		`{}`, `{"b": 1}`, `{"a": 1, "c": 1}`, `{"b": 1, "d": 1}`, `{"aa": 1, "c": 1}`}
	for i := range asc {
		for j := range asc {
			a, _ := EncodeJSONB(asc[i])
			b, _ := EncodeJSONB(asc[j])
			if got, want := JSONBCompare(a, b), cmpInt(i, j); got != want {
				t.Errorf("%s vs %s: got %d, want %d", asc[i], asc[j], got, want)
			}
		}
	}
	a, _ := EncodeJSONB(`{"a": [1.0, 2]}`)
	b, _ := EncodeJSONB(`{"a": [1, 2.00]}`)
	if !JSONBEqual(a, b) || a == b {
		t.Errorf("1.0 and 1: equal values with different bytes")
	}
}

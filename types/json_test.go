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

// TestJSONBField checks the scanning lookup against the parsed one.
func TestJSONBField(t *testing.T) {
	docs := []string{`{"a": 1, "b": [1, {"a": "}"}], "c": "x\"y", "aa": {"b": null}, "\"q": true}`, `[1, 2]`, `"a"`, `{}`, `{"": 0}`}
	for _, d := range docs {
		s, err := CanonJSONB(d)
		if err != nil {
			t.Fatal(err)
		}
		v := MustJSONB(s)
		for _, k := range []string{"a", "b", "c", "aa", `"q`, "", "zz"} {
			want, wantOK := "", false
			if f := v.Field(k); f != nil {
				want, wantOK = JSONBText(f), true
			}
			got, ok := JSONBField(s, string(AppendJSONString(nil, k)))
			if got != want || ok != wantOK {
				t.Errorf("%s -> %q: got %q %v, want %q %v", s, k, got, ok, want, wantOK)
			}
			if ok {
				wt, wok := JSONText(v.Field(k), true)
				gt, gok := JSONBFieldText(got)
				if gt != wt || gok != wok {
					t.Errorf("%s ->> %q: got %q %v, want %q %v", s, k, gt, gok, wt, wok)
				}
			}
		}
	}
}

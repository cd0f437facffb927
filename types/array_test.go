package types

import (
	"encoding/binary"
	"testing"
)

func TestTextArrayText(t *testing.T) {
	for _, c := range []struct {
		a    *Array
		want string
	}{
		{&Array{}, "{}"},
		{&Array{Elems: []string{"a", "b"}}, "{a,b}"},
		{&Array{Elems: []string{"", "null", "a b", `x"y`, `c\d`, "{", ",", "é"}}, `{"","null","a b","x\"y","c\\d","{",",",é}`},
		{&Array{Elems: []string{"a", ""}, Null: []bool{false, true}}, "{a,NULL}"},
	} {
		got := string(AppendText(nil, Datum{A: c.a}, TTextArray))
		if got != c.want {
			t.Errorf("got %s, want %s", got, c.want)
			continue
		}
		back, err := ParseText(got, TTextArray)
		if err != nil {
			t.Fatalf("ParseText(%s): %v", got, err)
		}
		if again := string(AppendText(nil, back, TTextArray)); again != got {
			t.Errorf("round trip of %s gave %s", got, again)
		}
	}
	for _, bad := range []string{"", "a", "{a", `{"a}`, "{a,}", "{{a}}"} {
		if _, err := ParseText(bad, TTextArray); err == nil {
			t.Errorf("ParseText(%q) did not fail", bad)
		}
	}
}

func TestTextArrayBinary(t *testing.T) {
	b := AppendBinary(nil, Datum{A: &Array{Elems: []string{"ab", ""}, Null: []bool{false, true}}}, TTextArray)
	u32 := func(i int) uint32 { return binary.BigEndian.Uint32(b[4*i:]) }
	// ndim 1, has nulls, element OID 25, length 2, lower bound 1, "ab", NULL
	if u32(0) != 1 || u32(1) != 1 || u32(2) != OIDText || u32(3) != 2 || u32(4) != 1 || u32(5) != 2 ||
		string(b[24:26]) != "ab" || binary.BigEndian.Uint32(b[26:]) != 0xFFFFFFFF || len(b) != 30 {
		t.Errorf("array_send layout: % x", b)
	}
	if TTextArray.OID() != 1009 || TTextArray.String() != "text[]" {
		t.Errorf("text[] is OID %d named %s", TTextArray.OID(), TTextArray)
	}
	if got, ok := DecodeType(EncodeType(TTextArray)); !ok || got != TTextArray {
		t.Errorf("DecodeType(EncodeType(text[])) = %v, %v", got, ok)
	}
}

func TestTextArrayBinaryRoundTrip(t *testing.T) {
	for _, a := range []*Array{{}, {Elems: []string{"ab", "", "c"}}, {Elems: []string{"x", ""}, Null: []bool{false, true}}} {
		b := AppendBinary(nil, Datum{A: a}, TTextArray)
		d, err := ParseBinary(b, TTextArray)
		if err != nil {
			t.Fatalf("%v: %v", a, err)
		}
		if got, want := string(AppendText(nil, d, TTextArray)), string(AppendText(nil, Datum{A: a}, TTextArray)); got != want {
			t.Errorf("round trip of %s gave %s", want, got)
		}
	}
	for _, b := range [][]byte{{0, 0, 0, 1}, {0, 0, 0, 1, 0, 0, 0, 0, 0, 0, 0, 25, 0, 0, 0, 9, 0, 0, 0, 1}} {
		if _, err := ParseBinary(b, TTextArray); err == nil {
			t.Errorf("ParseBinary(%v) accepted a truncated array", b)
		}
	}
}

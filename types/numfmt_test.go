package types

import (
	"testing"

	"github.com/apache/arrow-go/v18/arrow/decimal128"
)

// The examples of PostgreSQL 15's manual (Table 9.28, to_char examples
// and to_number), as it prints them.
func TestNumFormatManualExamples(t *testing.T) {
	num := func(s string) (decimal128.Num, int32) {
		n, err := NumericFromString(s, 6)
		if err != nil {
			t.Fatal(err)
		}
		return n, 6
	}
	for _, c := range []struct{ v, tmpl, want string }{
		{"-0.1", "99.99", "  -.10"}, {"-0.1", "FM9.99", "-.1"}, {"-0.1", "FM90.99", "-0.1"},
		{"0.1", "0.9", " 0.1"}, {"12", "9990999.9", "    0012.0"}, {"12", "FM9990999.9", "0012."},
		{"485", "999", " 485"}, {"-485", "999", "-485"}, {"485", "9 9 9", " 4 8 5"},
		{"1485", "9,999", " 1,485"}, {"1485", "9G999", " 1,485"}, {"148.5", "999.999", " 148.500"},
		{"148.5", "FM999.999", "148.5"}, {"148.5", "FM999.990", "148.500"}, {"148.5", "999D999", " 148.500"},
		{"3148.5", "9G999D999", " 3,148.500"}, {"-485", "999S", "485-"}, {"-485", "999MI", "485-"},
		{"485", "999MI", "485 "}, {"485", "FM999MI", "485"},
		{"485", "SG999", "+485"}, {"-485", "SG999", "-485"}, {"-485", "9SG99", "4-85"},
		{"-485", "999PR", "<485>"}, {"485", "RN", "        CDLXXXV"}, {"485", "FMRN", "CDLXXXV"},
		{"5.2", "FMRN", "V"}, {"482", "999th", " 482nd"}, {"485", `"Good number:"999`, "Good number: 485"},
		{"485.8", `"Pre:"999" Post:" .999`, "Pre: 485 Post: .800"}, {"12345", "99", " ##"}, {"1234.5", "99.9", " ##.#"},
	} {
		f, err := CompileNumFormat(c.tmpl)
		if err != nil {
			t.Fatalf("%s: %v", c.tmpl, err)
		}
		n, s := num(c.v)
		got, err := f.AppendNumeric(nil, n, s)
		if err != nil || string(got) != c.want {
			t.Errorf("to_char(%s, %q) = %q, %v; want %q", c.v, c.tmpl, got, err, c.want)
		}
	}
	f, _ := CompileNumFormat("99G999D9S")
	d, err := f.ParseNumber("12,454.8-")
	if err != nil || string(AppendNumeric(nil, d.D, UnconstrainedScale)) != "-12454.8000000000000000" || DScaleOf(d, TNumeric) != 1 {
		t.Errorf("to_number = %v %v", d, err)
	}
}

package types

import (
	"testing"

	"github.com/streamdb/streamdb/sqlerr"
)

// TestNumericDivHeld: a quotient rounded at PostgreSQL's scale past the
// storage scale is held when its digits there are zeros, else 22003; it
// prints padded to its display scale.
func TestNumericDivHeld(t *testing.T) {
	for _, c := range []struct {
		a, b string
		want string // "" for 22003
	}{
		{"0.00002", "8", "0.000002500000000000000000"},
		{"0.00001", "400000", "0.0000000000250000000000000000"},
		{"1", "3", "0.33333333333333333333"},
		{"1", "300000", ""},
		{"0.00001", "7", ""},
	} {
		a, _ := NumericFromString(c.a, 16)
		b, _ := NumericFromString(c.b, 16)
		rs := DivScaleDS(a, 16, DisplayScale(a, 16), b, 16, DisplayScale(b, 16))
		q, err := NumericDivHeld(a, 16, b, 16, rs, 20)
		if c.want == "" {
			if sqlerr.Code(err) != sqlerr.NumericOutOfRange {
				t.Errorf("%s / %s: %v, want 22003", c.a, c.b, err)
			}
			continue
		}
		if err != nil {
			t.Fatalf("%s / %s: %v", c.a, c.b, err)
		}
		if got := string(AppendNumericDS(nil, q, 20, rs)); got != c.want {
			t.Errorf("%s / %s = %s, want %s", c.a, c.b, got, c.want)
		}
	}
	x, _ := NumericFromString("0.00000000000000000001", 20)
	two, _ := NumericFromString("2", 16)
	half, _ := NumericFromString("0.5", 16)
	if !ProductExact(x, 20, two, 16, 20) || ProductExact(x, 20, half, 16, 20) {
		t.Error("ProductExact: 1e-20 * 2 is exact at 20 places, 1e-20 * 0.5 is not")
	}
}

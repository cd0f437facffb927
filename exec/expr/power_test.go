package expr

import (
	"fmt"
	"math"
	"math/rand/v2"
	"testing"

	"github.com/apache/arrow-go/v18/arrow/decimal128"

	"github.com/streamdb/streamdb/sqlerr"
	"github.com/streamdb/streamdb/types"
)

// TestDecPow checks numeric ^ numeric at PostgreSQL's scale 16 against
// results PostgreSQL 15 printed (SELECT 1.0000001 ^ 10000000, ...).
func TestDecPow(t *testing.T) {
	dec := func(s string, scale int32) decimal128.Num {
		d, err := decimal128.FromString(s, 38, scale)
		if err != nil {
			t.Fatal(err)
		}
		return d
	}
	for _, c := range []struct {
		x      string
		sx     int32
		y      string
		sy     int32
		want   string // at scale 16, or an SQLSTATE
		wantSt int32
	}{
		{"1.0000001", 7, "10000000", 0, "2.7182816925449663", 16}, // base near 1: the ln/exp path
		{"0.9", 1, "0.5", 1, "0.9486832980505138", 16},
		{"3.7", 1, "1.3", 1, "5.4785072572747135", 16},
		{"2.0", 1, "62", 0, "4611686018427387904.0000000000000000", 16},
		{"1.1", 1, "2.5", 1, "1.2690587062858834", 16},
		{"-1.5", 1, "3", 0, "-3.3750000000000000", 16},
		{"1.5", 1, "-3", 0, "0.2962962962962963", 16},
		{"7.0", 1, "0.25", 2, "1.6265765616977857", 16},
		{"0.5", 1, "17", 0, "0.0000076293945313", 16}, // an exact tie, rounded away from zero
		{"0", 0, "-1", 0, sqlerr.InvalidArgumentForPower, 16},
		{"-8.0", 1, "0.5", 1, sqlerr.InvalidArgumentForPower, 16},
		{"10.0", 1, "400", 0, sqlerr.NumericOutOfRange, 16},
		{"10.0", 1, "-400", 0, "0.0000000000000000", 16},
	} {
		got, err := decPow(dec(c.x, c.sx), c.sx, dec(c.y, c.sy), c.sy, c.wantSt)
		if err != nil {
			if e, ok := err.(*sqlerr.Error); !ok || e.Code != c.want {
				t.Errorf("%s ^ %s: error %v, want %s", c.x, c.y, err, c.want)
			}
			continue
		}
		if s := types.NumericString(got, c.wantSt); s != c.want {
			t.Errorf("%s ^ %s = %s, want %s", c.x, c.y, s, c.want)
		}
	}
}

// TestFloatPow checks dpow's explicit cases (PostgreSQL 15 float.c).
func TestFloatPow(t *testing.T) {
	inf, nan := math.Inf(1), math.NaN()
	for _, c := range []struct {
		x, y, want float64
		code       string
	}{
		{2, 3, 8, ""}, {2, 0.5, math.Sqrt2, ""}, {nan, 0, 1, ""}, {1, nan, 1, ""},
		{-1, inf, 1, ""}, {0.5, inf, 0, ""}, {2, -inf, 0, ""}, {inf, -1, 0, ""},
		{-inf, 3, -inf, ""}, {-inf, 2, inf, ""}, {0, -1, 0, sqlerr.InvalidArgumentForPower},
		{-8, 1.0 / 3, 0, sqlerr.InvalidArgumentForPower}, {1e200, 2, 0, sqlerr.NumericOutOfRange},
		{1e-200, 2, 0, sqlerr.NumericOutOfRange}, {-1e200, 3, 0, sqlerr.NumericOutOfRange},
		// glibc's (correctly rounded) results, as PostgreSQL 15 printed them.
		{1.0001, 10000, 2.7181459268249255, ""}, {2, 1023.5, 1.2711610061536464e+308, ""},
		{1.5, 0.3, 1.1293469354568555, ""}, {7.25, -2.5, 0.007065696577485921, ""},
		{-3, 3, -27, ""}, {-1.5, -3, -0.2962962962962963, ""},
	} {
		got, err := floatPow(c.x, c.y)
		if c.code != "" {
			if e, ok := err.(*sqlerr.Error); !ok || e.Code != c.code {
				t.Errorf("%g ^ %g: error %v, want %s", c.x, c.y, err, c.code)
			}
			continue
		}
		if err != nil || got != c.want {
			t.Errorf("%g ^ %g = %g, %v; want %g", c.x, c.y, got, err, c.want)
		}
	}
	if got, _ := floatPow(nan, 2); !math.IsNaN(got) {
		t.Errorf("NaN ^ 2 = %g, want NaN", got)
	}
}

// TestDDPowInt: the double-double integer power gives what the 128-bit
// exp·ln path gives, for bases across the range, signs and exponents up to
// 2^31 (and refuses, for the exact path, where it would leave its range).
func TestDDPowInt(t *testing.T) {
	r := rand.New(rand.NewPCG(7, 11))
	var taken, refused int
	for range 20000 {
		x := math.Ldexp(1+r.Float64(), r.IntN(40)-20)
		if r.IntN(3) == 0 {
			x = 1 + (r.Float64()-0.5)*1e-4 // near 1: large exponents stay in range
		}
		if r.IntN(2) == 0 {
			x = -x
		}
		n := int64(r.IntN(60)) - 30
		if r.IntN(4) == 0 {
			n = r.Int64N(1<<31) - 1<<30
		}
		if n == 0 || n == 1 || n == 2 || n == -1 {
			continue
		}
		got, ok := ddPowInt(x, n)
		if !ok {
			refused++
			continue
		}
		taken++
		if want := bigPow(x, float64(n)); got != want {
			t.Fatalf("%v ^ %d: double-double %v, 128-bit path %v", x, n, got, want)
		}
	}
	t.Logf("%d powers compared, %d left to the exact path", taken, refused)
	if taken < 10000 {
		t.Fatalf("only %d powers taken by ddPowInt", taken)
	}
}

func BenchmarkFloatPow(b *testing.B) {
	for _, y := range []float64{3, 10000, -7, 2.5} {
		b.Run(fmt.Sprint(y), func(b *testing.B) {
			x := 1.0001
			for b.Loop() {
				if _, err := floatPow(x, y); err != nil {
					b.Fatal(err)
				}
			}
		})
	}
}

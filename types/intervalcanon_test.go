package types

import (
	"math/rand/v2"
	"testing"

	"github.com/apache/arrow-go/v18/arrow"
)

func TestCanonInterval(t *testing.T) {
	const h = 3600 * 1e9
	iv := func(m, d int32, ns int64) arrow.MonthDayNanoInterval {
		return arrow.MonthDayNanoInterval{Months: m, Days: d, Nanoseconds: ns}
	}
	for _, c := range []struct{ in, want arrow.MonthDayNanoInterval }{
		{iv(0, 0, 24*h), iv(0, 1, 0)},
		{iv(0, 1, 0), iv(0, 1, 0)},
		{iv(0, 30, 0), iv(1, 0, 0)},
		{iv(0, -1, 25*h), iv(0, 0, h)},
		{iv(1, -1, 0), iv(0, 29, 0)},
		{iv(0, 0, -25*h), iv(0, -1, -h)},
		{iv(-1, 31, -h), iv(0, 0, 23*h)},
	} {
		if got, ok := CanonInterval(c.in); !ok || got != c.want {
			t.Errorf("CanonInterval(%v) = %v, %v; want %v", c.in, got, ok, c.want)
		}
	}
	// Equal spans and only they have the same representative.
	rng := rand.New(rand.NewPCG(1, 2))
	for i := 0; i < 20000; i++ {
		a := iv(rng.Int32N(5)-2, rng.Int32N(70)-35, (rng.Int64N(60)-30)*h)
		b := iv(rng.Int32N(5)-2, rng.Int32N(70)-35, (rng.Int64N(60)-30)*h)
		ca, _ := CanonInterval(a)
		cb, _ := CanonInterval(b)
		if same, eq := ca == cb, IntervalSpan(a).Cmp(IntervalSpan(b)) == 0; same != eq {
			t.Fatalf("%v (%v) and %v (%v): same representative %v, equal spans %v", a, ca, b, cb, same, eq)
		}
		if IntervalSpan(ca) != IntervalSpan(a) || !IsCanonInterval(ca) {
			t.Fatalf("%v: representative %v has another span or is not its own", a, ca)
		}
	}
	if _, ok := CanonInterval(iv(2147483647, 2147483647, 0)); ok {
		t.Error("months past 32 bits must not be justified")
	}
}

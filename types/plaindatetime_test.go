package types

import (
	"fmt"
	"math/rand/v2"
	"strings"
	"testing"
	"time"
)

// TestPlainDateTimeSameAsScan: the plain form's shortcut reads every
// input it takes exactly as the general scanner does: random dates and
// timestamps with 0-6 fraction digits, days past the month's end, leap
// days, hours, minutes and seconds at and past their limits, and bytes
// that are not digits.
func TestPlainDateTimeSameAsScan(t *testing.T) {
	r := rand.New(rand.NewPCG(1, 7))
	digits := "0123456789"
	taken := 0
	for i := range 300000 {
		s := fmt.Sprintf("%04d-%02d-%02d", r.IntN(10000), r.IntN(14), r.IntN(33))
		if i%2 == 0 {
			s += fmt.Sprintf(" %02d:%02d:%02d", r.IntN(26), r.IntN(62), r.IntN(62))
			if k := r.IntN(8); k > 0 {
				s += "."
				for range k - 1 {
					s += string(digits[r.IntN(10)])
				}
			}
		}
		if r.IntN(20) == 0 { // a byte that is no digit, or a separator changed
			b := []byte(s)
			b[r.IntN(len(b))] = "x:- T/."[r.IntN(7)]
			s = string(b)
		}
		days, usec, ok := plainDateTime(s)
		if !ok {
			continue
		}
		taken++
		d2, u2, z, e := scanDateTime(s)
		if e != dtOK || z.set || d2 != days || u2 != usec {
			t.Fatalf("%q: plain %d days %d us; scanner %d days %d us (zone %v, error %v)", s, days, usec, d2, u2, z.set, e)
		}
	}
	// Every six-digit fraction: its digits as an integer, as the scanner's double rounds it.
	for f := range 1000000 {
		s := fmt.Sprintf("2026-02-28 23:59:59.%06d", f)
		_, usec, ok := plainDateTime(s)
		_, u2, _, _ := scanDateTime(s)
		if !ok || usec != u2 {
			t.Fatalf("%q: plain %d (%v), scanner %d", s, usec, ok, u2)
		}
	}
	if taken < 10000 {
		t.Fatalf("only %d inputs took the plain form", taken)
	}
}

// TestParseTextBytesKeepsNothing: ParseTextBytes reads its input in place,
// so nothing it parses may keep those bytes: a zone name cached by its
// first use must survive the caller reusing the buffer.
func TestParseTextBytesKeepsNothing(t *testing.T) {
	buf := []byte("2026-03-04 05:06:07 America/Santiago")
	want, err := ParseText(string(buf), TTimestampTZ)
	if err != nil {
		t.Fatal(err)
	}
	zones.Delete("America/Santiago")
	if _, err := ParseTextBytes(buf, TTimestampTZ); err != nil {
		t.Fatal(err)
	}
	copy(buf, "2026-03-04 05:06:07 Asia/Kolkata!!!!")
	for name, loc := range zones.Range {
		if l := loc.(*time.Location); l.String() != name.(string) || strings.Contains(name.(string), "Kolkata") {
			t.Fatalf("zone cache holds %q for location %q after the buffer changed", name, l)
		}
	}
	if got, err := ParseText("2026-03-04 05:06:07 America/Santiago", TTimestampTZ); err != nil || got.I != want.I {
		t.Fatalf("after the buffer changed: %v, %v; want %v", got.I, err, want.I)
	}
}

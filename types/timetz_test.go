package types

import "testing"

// TestTimeTZPackOrder checks that the packed timetz orders as
// PostgreSQL's timetz_cmp: by UTC-equivalent time, then by zone (seconds
// west), and round-trips every part.
func TestTimeTZPackOrder(t *testing.T) {
	type tz struct{ us, west int64 }
	vals := []tz{{0, 0}, {usPerDayTime, 0}, {0, -57599}, {0, 57599}, {usPerDayTime, 57599}, {usPerDayTime, -57599},
		{12 * usPerHour, -3600}, {11 * usPerHour, 0}, {13 * usPerHour, 3600}, {1, 1}, {usPerDayTime - 1, -1}}
	cmp := func(a, b tz) int { // timetz_cmp_internal
		ta, tb := a.us+a.west*usPerSec, b.us+b.west*usPerSec
		switch {
		case ta != tb:
			return cmpInt(int(ta), int(tb))
		}
		return cmpInt(int(a.west), int(b.west))
	}
	for _, a := range vals {
		pa := PackTimeTZ(a.us, a.west)
		if us, w := UnpackTimeTZ(pa); us != a.us || w != a.west {
			t.Errorf("unpack(pack(%v)) = %d, %d", a, us, w)
		}
		for _, b := range vals {
			pb := PackTimeTZ(b.us, b.west)
			if got, want := cmpInt(int(pa), int(pb)), cmp(a, b); got != want {
				t.Errorf("order of %v and %v: %d, want %d", a, b, got, want)
			}
		}
	}
}

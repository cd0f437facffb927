package bind

import "testing"

func TestTextScale(t *testing.T) {
	for _, tc := range []struct {
		in    string
		scale int32
		ok    bool
	}{
		{"1.50", 2, true},
		{" -0.0 ", 1, true},
		{"12", 0, true},
		{".5", 1, true},
		{"5.", 0, true},
		{"1.5e1", 0, true},
		{"1.50e1", 1, true},
		{"2e-3", 3, true},
		{"+1.25E-2", 4, true},
		{"1e", 0, false},
		{"abc", 0, false},
		{"1.2.3", 0, false},
		{"", 0, false},
		{"NaN", 0, false},
	} {
		s, ok := textScale(tc.in)
		if s != tc.scale || ok != tc.ok {
			t.Errorf("textScale(%q) = %d, %v; want %d, %v", tc.in, s, ok, tc.scale, tc.ok)
		}
	}
}

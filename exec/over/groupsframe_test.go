package over

import "testing"

// TestGroupsFrame checks GROUPS frame ends over two partitions with peer
// groups {0,1} {2} {3,4,5} and {6} {7,8}.
func TestGroupsFrame(t *testing.T) {
	spids := []int32{0, 0, 0, 0, 0, 0, 1, 1, 1}
	peer := []bool{false, true, false, false, true, true, false, false, true}
	b := func(k FrameBoundKind, n int64) FrameBound { return FrameBound{Kind: k, N: n} }
	for _, c := range []struct {
		name   string
		f      Frame
		lo, hi []int
	}{
		{"1 PRECEDING AND 1 FOLLOWING", Frame{Groups: true, Start: b(BoundPreceding, 1), End: b(BoundFollowing, 1)},
			[]int{0, 0, 0, 2, 2, 2, 6, 6, 6}, []int{3, 3, 6, 6, 6, 6, 9, 9, 9}},
		{"CURRENT ROW AND 0 FOLLOWING", Frame{Groups: true, Start: b(BoundCurrentRow, 0), End: b(BoundFollowing, 0)},
			[]int{0, 0, 2, 3, 3, 3, 6, 7, 7}, []int{2, 2, 3, 6, 6, 6, 7, 9, 9}},
		{"2 PRECEDING AND 1 PRECEDING", Frame{Groups: true, Start: b(BoundPreceding, 2), End: b(BoundPreceding, 1)},
			[]int{0, 0, 0, 0, 0, 0, 6, 6, 6}, []int{0, 0, 2, 3, 3, 3, 6, 7, 7}},
		{"1 FOLLOWING AND 5 FOLLOWING", Frame{Groups: true, Start: b(BoundFollowing, 1), End: b(BoundFollowing, 5)},
			[]int{2, 2, 3, 6, 6, 6, 7, 9, 9}, []int{6, 6, 6, 6, 6, 6, 9, 9, 9}},
		{"UNBOUNDED PRECEDING AND 1 PRECEDING", Frame{Groups: true, Start: b(BoundUnboundedPreceding, 0), End: b(BoundPreceding, 1)},
			[]int{0, 0, 0, 0, 0, 0, 6, 6, 6}, []int{0, 0, 2, 3, 3, 3, 6, 7, 7}},
	} {
		fr := groupsFrame(c.f, spids, peer)
		for k := range spids {
			if lo, hi := fr(k, 0, 0, 0, 0); lo != c.lo[k] || hi != c.hi[k] {
				t.Errorf("GROUPS %s: row %d frame [%d, %d), want [%d, %d)", c.name, k, lo, hi, c.lo[k], c.hi[k])
			}
		}
	}
}

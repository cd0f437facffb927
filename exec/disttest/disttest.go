// Package disttest holds the input and the oracle that the tests of
// distributed jobs share: the rows every split of the source stream holds
// and the batch query a distributed view of them must equal. It serves
// tests only.
package disttest

// Keys is the number of distinct grouping keys Row produces.
const Keys = 101

// Row is row i of split s of the test stream t(k BIGINT, v BIGINT).
func Row(s, i int) (k, v int64) { return int64((s*7919 + i*31 + i/7) % Keys), int64(i%13) - 6 }

// Want is the batch query SELECT k, count(*), max(v) FROM t WHERE v >= -3
// GROUP BY k over the first read[s] rows of every split s, keyed by k.
func Want(read []int) map[int64][2]int64 {
	want := map[int64][2]int64{}
	for s, n := range read {
		for i := range n {
			k, v := Row(s, i)
			if v < -3 {
				continue
			}
			a, ok := want[k]
			if !ok {
				a[1] = v
			}
			a[0]++
			a[1] = max(a[1], v)
			want[k] = a
		}
	}
	return want
}

package plan

import (
	"math"

	"github.com/apache/arrow-go/v18/arrow"
)

// expandBatchRows bounds the rows a window expand stage makes of one batch.
const ExpandBatchRows = 64 << 10

// expandStep is the most input rows per batch that the stages' window
// expansion keeps within expandBatchRows (all of them without one).
func expandStep(stages []Plan) int {
	fan := 1
	for _, st := range stages {
		if h, ok := st.(*Hop); ok {
			fan *= max(1, h.windows())
		}
	}
	if fan == 1 {
		return math.MaxInt
	}
	return max(1, ExpandBatchRows/fan)
}

// cutForExpand calls f, in order, with rec's rows [lo, hi) in parts that
// the stages' window expansion keeps within expandBatchRows: rec itself
// when it needs no cut, slices of it otherwise, and nothing when it has
// no rows. The caller keeps rec; f borrows part (Retain to keep it) and
// the first error f returns ends the cut.
func CutForExpand(stages []Plan, rec arrow.RecordBatch, f func(part arrow.RecordBatch, lo, hi int) error) error {
	n := int(rec.NumRows())
	step := expandStep(stages)
	if step >= n {
		if n == 0 {
			return nil
		}
		return f(rec, 0, n)
	}
	for lo := 0; lo < n; lo += step {
		hi := min(n, lo+step)
		part := rec.NewSlice(int64(lo), int64(hi))
		err := f(part, lo, hi)
		part.Release()
		if err != nil {
			return err
		}
	}
	return nil
}

package plan

import (
	"github.com/apache/arrow-go/v18/arrow"
)

// leadCols returns the first n columns of rec (a table's, before a
// changelog's op).
func LeadCols(rec arrow.RecordBatch, n int) []arrow.Array {
	cols := make([]arrow.Array, n)
	for i := range cols {
		cols[i] = rec.Column(i)
	}
	return cols
}

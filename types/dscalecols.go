package types

import (
	"strconv"
	"strings"

	"github.com/apache/arrow-go/v18/arrow"
	"github.com/apache/arrow-go/v18/arrow/array"
	"github.com/apache/arrow-go/v18/arrow/memory"
)

// dscaleField prefixes the name of the extra column that carries, through
// Arrow IPC, the display scales of an unconstrained NUMERIC column (an
// Int8 column) or of a numeric[] column's elements (a List<Int8> on the
// column's offsets), which IPC does not write (DScales is a buffer of our
// own): the column's index follows. The log's blocks store them so, and
// so do the batches one node streams to another.
const dscaleField = "\x00dscale:"

// WithDScaleColumns returns rec (a new reference) with one dscaleField
// column after the others for each column carrying display scales. With
// stable, every Decimal128 and List<Decimal128> column gets one (its
// bytes 0, "not known", where it carries none), so every batch of a
// stream of one schema has the same schema, as an IPC stream needs.
func WithDScaleColumns(rec arrow.RecordBatch, stable bool) arrow.RecordBatch {
	var fields []arrow.Field
	var cols []arrow.Array
	for i, c := range rec.Columns() {
		name := dscaleField + strconv.Itoa(i)
		switch a := c.(type) {
		case *array.List:
			_, dec := a.ListValues().(*array.Decimal128)
			ds := ListDScales(a)
			if ds == nil && stable && dec {
				ds = make([]int8, a.ListValues().Len())
			}
			if ds != nil {
				cols = append(cols, listOfInt8(a, ds))
				fields = append(fields, arrow.Field{Name: name, Type: arrow.ListOf(arrow.PrimitiveTypes.Int8)})
			}
		case *array.Decimal128:
			ds := DScales(a)
			if ds == nil && stable {
				ds = make([]int8, a.Len())
			}
			if ds != nil {
				b := array.NewInt8Builder(memory.DefaultAllocator)
				b.AppendValues(ds, nil)
				cols = append(cols, b.NewArray())
				b.Release()
				fields = append(fields, arrow.Field{Name: name, Type: arrow.PrimitiveTypes.Int8})
			}
		}
	}
	if cols == nil {
		rec.Retain()
		return rec
	}
	md := rec.Schema().Metadata()
	schema := arrow.NewSchema(append(append([]arrow.Field(nil), rec.Schema().Fields()...), fields...), &md)
	out := array.NewRecordBatch(schema, append(append([]arrow.Array(nil), rec.Columns()...), cols...), rec.NumRows())
	for _, c := range cols {
		c.Release()
	}
	return out
}

// FromDScaleColumns undoes WithDScaleColumns, taking over rec: the
// display scales go back onto their columns (bytes 0 read as "not known",
// as no display scales do).
func FromDScaleColumns(rec arrow.RecordBatch) arrow.RecordBatch {
	fields := rec.Schema().Fields()
	n := len(fields)
	for n > 0 && strings.HasPrefix(fields[n-1].Name, dscaleField) {
		n--
	}
	if n == len(fields) {
		return rec
	}
	defer rec.Release()
	cols := append([]arrow.Array(nil), rec.Columns()[:n]...)
	for k := n; k < len(fields); k++ {
		i, err := strconv.Atoi(strings.TrimPrefix(fields[k].Name, dscaleField))
		if err != nil || i < 0 || i >= n {
			continue
		}
		if l, ok := cols[i].(*array.List); ok {
			dl, ok := rec.Column(k).(*array.List)
			if !ok {
				continue
			}
			v := dl.ListValues().(*array.Int8).Int8Values()
			if len(v) != l.ListValues().Len() {
				continue
			}
			cols[i] = AttachListDScales(l, v)
			defer cols[i].Release()
			continue
		}
		if _, dec := cols[i].(*array.Decimal128); !dec {
			continue
		}
		v := rec.Column(k).(*array.Int8).Int8Values()
		cols[i] = AttachDScales(cols[i], v)
		defer cols[i].Release()
	}
	md := rec.Schema().Metadata()
	return array.NewRecordBatch(arrow.NewSchema(fields[:n], &md), cols, rec.NumRows())
}

// listOfInt8 returns a List<Int8> with l's rows whose values are ds (the
// display scales of l's values, indexed like l.ListValues()).
func listOfInt8(l *array.List, ds []int8) arrow.Array {
	b := array.NewInt8Builder(memory.DefaultAllocator)
	b.AppendValues(ds, nil)
	vals := b.NewArray()
	b.Release()
	defer vals.Release()
	d := l.Data()
	nd := array.NewData(arrow.ListOf(arrow.PrimitiveTypes.Int8), d.Len(), d.Buffers(), []arrow.ArrayData{vals.Data()}, d.NullN(), d.Offset())
	defer nd.Release()
	return array.NewListData(nd)
}

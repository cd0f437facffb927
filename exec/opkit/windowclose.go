package opkit

// WindowClose is how a window aggregate's groups, or a top-N per window's
// partitions, close: group (partition) key Key is a window bound, the
// window ending Offset µs after it; the window's time
// is its stream's watermark column plus Shift µs, so the window is closed
// once its end is at or before the watermark plus Shift (exec/eventtime.go).
type WindowClose struct {
	Key    int
	Offset int64
	Shift  int64
	// Hop, if the bound is a HOP or CUMULATE window's (exec/hop.go), tells a
	// row's last window from its others: a late row is counted once, by
	// that one.
	Hop *HopLast
}

// Closed says whether the window of bound b is closed at watermark wm.
func (w *WindowClose) Closed(b, wm int64) bool { return b+w.Offset-w.Shift <= wm }

// CloseAt is the watermark at which a window of bound b closes.
func (w *WindowClose) CloseAt(b int64) int64 { return b + w.Offset - w.Shift }

package opkit

// IdleItem is a key queued for expiry: At is its idle clock when queued.
type IdleItem[G any] struct {
	At int64
	G  G
}

// IdleHeap is a min-heap of keys by idle clock.
type IdleHeap[G any] struct{ Items []IdleItem[G] }

func (h *IdleHeap[G]) Len() int           { return len(h.Items) }
func (h *IdleHeap[G]) Less(i, j int) bool { return h.Items[i].At < h.Items[j].At }
func (h *IdleHeap[G]) Swap(i, j int)      { h.Items[i], h.Items[j] = h.Items[j], h.Items[i] }
func (h *IdleHeap[G]) Push(x any)         { h.Items = append(h.Items, x.(IdleItem[G])) }
func (h *IdleHeap[G]) Pop() any {
	it := h.Items[len(h.Items)-1]
	var zero IdleItem[G]
	h.Items[len(h.Items)-1] = zero
	h.Items = h.Items[:len(h.Items)-1]
	return it
}

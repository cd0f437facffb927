package types

// ChangeOp is a row's change kind in a change stream (a changelog's op
// column). It lives here, below both the runtime and the connectors, so
// that the operator contract (exec/op) and the sink contract (connector,
// which names it Op) share one type without importing each other.
type ChangeOp int8

const (
	ChangeInsert ChangeOp = iota
	ChangeDelete
	ChangeUpdateBefore
	ChangeUpdateAfter
)

// String returns the op as shown in a change stream's op column.
func (o ChangeOp) String() string {
	switch o {
	case ChangeDelete:
		return "delete"
	case ChangeUpdateBefore:
		return "update_before"
	case ChangeUpdateAfter:
		return "update_after"
	}
	return "insert"
}

// Sign is +1 for rows added and -1 for rows retracted.
func (o ChangeOp) Sign() int8 {
	if o == ChangeDelete || o == ChangeUpdateBefore {
		return -1
	}
	return 1
}

package parse

// Savepoints inside a transaction block, PostgreSQL's forms:
//
//	SAVEPOINT name
//	RELEASE [SAVEPOINT] name
//	ROLLBACK [WORK | TRANSACTION] TO [SAVEPOINT] name
//
// They are not streamdb's CREATE SAVEPOINT (a named snapshot of the jobs'
// state, sql/savepoint.go), which always starts with CREATE.

// TxSavepointOp is what a TxSavepoint statement does.
type TxSavepointOp uint8

const (
	TxSavepointSet      TxSavepointOp = iota // SAVEPOINT name
	TxSavepointRelease                       // RELEASE [SAVEPOINT] name
	TxSavepointRollback                      // ROLLBACK TO [SAVEPOINT] name
)

// TxSavepoint is a savepoint statement of a transaction block.
type TxSavepoint struct {
	Op   TxSavepointOp
	Name string
}

func (*TxSavepoint) stmt() {}

// Tag is the statement's CommandComplete tag.
func (n *TxSavepoint) Tag() string {
	switch n.Op {
	case TxSavepointRelease:
		return "RELEASE"
	case TxSavepointRollback:
		return "ROLLBACK"
	}
	return "SAVEPOINT"
}

// txSavepoint parses the rest of a savepoint statement whose first
// keyword(s) were read; op says which.
func (p *parser) txSavepoint(op TxSavepointOp) (*TxSavepoint, error) {
	if op != TxSavepointSet {
		p.accept("savepoint")
	}
	name, err := p.ident()
	if err != nil {
		return nil, err
	}
	return &TxSavepoint{Op: op, Name: name}, p.end()
}

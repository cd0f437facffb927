package parse

import (
	"github.com/streamdb/streamdb/sqlerr"
	"github.com/streamdb/streamdb/types"
)

// CreateType is CREATE TYPE name AS (field type, ...): a composite type
// (types/composite.go). Its other forms (ENUM, RANGE, a shell type, base
// types) are 0A000.
type CreateType struct {
	Name   string
	Fields []types.RecordField
}

// DropType is DROP TYPE [IF EXISTS] name[, ...] [RESTRICT].
type DropType struct {
	Names    []string
	IfExists bool
}

func (*CreateType) stmt() {}
func (*DropType) stmt()   {}

// createType parses CREATE TYPE; the cursor is after TYPE.
func (p *parser) createType() (Statement, error) {
	n := &CreateType{}
	var err error
	if n.Name, err = p.relName(); err != nil {
		return nil, err
	}
	if t := p.at(); !p.accept("as") {
		if t.Kind == tEOF || t.isOp("(") {
			return nil, p.notSupported(t, "only composite types are supported: CREATE TYPE name AS (field type, ...)")
		}
		return nil, p.syntaxError(t)
	}
	if t := p.at(); t.is("enum") || t.is("range") {
		return nil, p.notSupported(t, "%s types are not supported: only composite types (CREATE TYPE name AS (field type, ...))", t.Val)
	}
	if err := p.expectOp("("); err != nil {
		return nil, err
	}
	if n.Fields, err = p.fieldList(")"); err != nil {
		return nil, err
	}
	return n, p.end()
}

// fieldList reads name type[, name type...] up to the closing operator
// close, which it consumes. A field name twice is 42701.
func (p *parser) fieldList(close string) ([]types.RecordField, error) {
	var fs []types.RecordField
	seen := map[string]bool{}
	for {
		at := p.at()
		name, err := p.ident()
		if err != nil {
			return nil, err
		}
		if seen[name] {
			return nil, p.positioned(sqlerr.New(sqlerr.DuplicateColumn, "column \"%s\" specified more than once", name), at)
		}
		seen[name] = true
		t, err := p.typeName()
		if err != nil {
			return nil, err
		}
		if t.Kind == types.Record && t.Prec <= 0 {
			return nil, p.positioned(sqlerr.New(sqlerr.FeatureNotSupported, "a field of type record is not supported"), at)
		}
		fs = append(fs, types.RecordField{Name: name, T: t})
		if p.acceptOp(",") {
			continue
		}
		if t := p.at(); t.is("collate") || t.is("not") || t.is("default") {
			return nil, p.notSupported(t, "%s in a composite type's field is not supported", t.Val)
		}
		if err := p.expectOp(close); err != nil {
			return nil, err
		}
		return fs, nil
	}
}

// structType reads STRUCT<name type, ...> (RisingWave's and Flink's row
// type); the cursor is at "<". The fields' names are required.
func (p *parser) structType() (types.T, error) {
	p.i++
	fs, err := p.fieldList(">")
	if err != nil {
		return types.T{}, err
	}
	return types.StructOf(fs), nil
}

// dropType parses DROP TYPE; the cursor is after TYPE. CASCADE (which in
// PostgreSQL drops the columns of that type) is 0A000.
func (p *parser) dropType() (Statement, error) {
	n := &DropType{IfExists: p.accept("if", "exists")}
	var err error
	if n.Names, err = p.relNameList(); err != nil {
		return nil, err
	}
	if t := p.at(); p.accept("cascade") {
		return nil, p.notSupported(t, "DROP TYPE ... CASCADE is not supported: drop or change the columns of the type first")
	}
	p.accept("restrict")
	return n, p.end()
}

package bind

import (
	"github.com/streamdb/streamdb/planner"
	"github.com/streamdb/streamdb/sqlerr"
)

// scopeCol is one column visible to expressions: input column i of the node
// being bound is scope.cols[i].
type scopeCol struct {
	planner.Column
	// usingHidden marks the right-hand copy of a JOIN ... USING column: it is
	// reachable only qualified, and SELECT * shows the merged column once.
	usingHidden bool
}

// scope is the set of columns a clause can reference, in input order.
type scope struct {
	cols []scopeCol
	// star lists the column indexes SELECT * expands to, in order.
	star []int
	// outer is the scope of the query a subquery's WHERE is nested in: a
	// name not found here resolves there, at index len(cols) + its index
	// there, and counts in *outerRefs (see subquery.go).
	outer     *scope
	outerRefs *int
}

func newScope(cols []planner.Column) *scope {
	s := &scope{}
	for i, c := range cols {
		s.cols = append(s.cols, scopeCol{Column: c})
		s.star = append(s.star, i)
	}
	return s
}

// planCols returns the scope's columns as a plan schema.
func (s *scope) planCols() []planner.Column {
	out := make([]planner.Column, len(s.cols))
	for i, c := range s.cols {
		out[i] = c.Column
	}
	return out
}

// hasTable reports whether some column is qualified by table.
func (s *scope) hasTable(table string) bool {
	for _, c := range s.cols {
		if c.Table == table {
			return true
		}
	}
	return false
}

// resolve finds the column table.name (table may be "") and returns its
// index, looking in the outer scopes when s has none.
func (s *scope) resolve(table, name string) (int, error) {
	i, err := s.resolveLocal(table, name)
	if err == nil || s.outer == nil {
		return i, err
	}
	if code := sqlerr.Code(err); code != sqlerr.UndefinedColumn && code != sqlerr.UndefinedTable {
		return i, err
	}
	j, oerr := s.outer.resolve(table, name)
	if oerr != nil {
		if code := sqlerr.Code(oerr); code == sqlerr.UndefinedColumn || code == sqlerr.UndefinedTable {
			return 0, err
		}
		return 0, oerr
	}
	if s.outerRefs != nil {
		*s.outerRefs++
	}
	return len(s.cols) + j, nil
}

func (s *scope) resolveLocal(table, name string) (int, error) {
	found := -1
	for i, c := range s.cols {
		if c.Name != name {
			continue
		}
		if table == "" && c.usingHidden || table != "" && c.Table != table {
			continue
		}
		if found >= 0 {
			return 0, sqlerr.New(sqlerr.AmbiguousColumn, "column reference %q is ambiguous", name)
		}
		found = i
	}
	if found >= 0 {
		return found, nil
	}
	if table != "" {
		if !s.hasTable(table) {
			return 0, sqlerr.New(sqlerr.UndefinedTable, "missing FROM-clause entry for table %q", table)
		}
		return 0, sqlerr.New(sqlerr.UndefinedColumn, "column %s.%s does not exist", table, name)
	}
	return 0, sqlerr.New(sqlerr.UndefinedColumn, "column %q does not exist", name)
}

// qualName is how plans print a reference to column c.
func qualName(c planner.Column) string {
	if c.Table != "" {
		return c.Table + "." + c.Name
	}
	return c.Name
}

// column returns column i as resolve numbers it (outer scopes after s's own).
func (s *scope) column(i int) planner.Column {
	for i >= len(s.cols) && s.outer != nil {
		i -= len(s.cols)
		s = s.outer
	}
	return s.cols[i].Column
}

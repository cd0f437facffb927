package bind

import (
	"strings"

	"github.com/pingcap/tidb/pkg/parser/ast"

	"github.com/streamdb/streamdb/sqlerr"
)

// Named arguments, name => value and name := value (PostgreSQL's
// "mixed notation": positional arguments first, then named ones). The
// dialect layer writes each name as a marker argument pg_argname('name')
// before its value (sql/parse rewrite.go); namedArgs puts the values in
// their parameters' places. Only the functions below have parameter
// names, as in PostgreSQL's catalog; a named argument of any other
// function matches nothing (42883).

// paramNames lists the parameter names of functions that have them, and
// how many trailing parameters have defaults (make_interval's are 0).
var paramNames = map[string]struct {
	names    []string
	defaults int
}{
	"make_interval":  {[]string{"years", "months", "weeks", "days", "hours", "mins", "secs"}, 7},
	"make_timestamp": {[]string{"year", "month", "mday", "hour", "min", "sec"}, 0},
	"make_date":      {[]string{"year", "month", "day"}, 0},
}

// argName returns the name of a pg_argname marker, or "" for any other
// argument.
func argName(e ast.ExprNode) string {
	f, ok := e.(*ast.FuncCallExpr)
	if !ok || f.FnName.L != "pg_argname" || len(f.Args) != 1 {
		return ""
	}
	v, ok := f.Args[0].(ast.ValueExpr)
	if !ok {
		return ""
	}
	s, _ := v.GetValue().(string)
	return s
}

// namedArgs returns n with its named arguments in their positions (n
// itself when it has none).
func namedArgs(n *ast.FuncCallExpr) (*ast.FuncCallExpr, error) {
	first := -1
	for i, a := range n.Args {
		if argName(a) != "" {
			first = i
			break
		}
	}
	if first < 0 {
		return n, nil
	}
	name := n.FnName.L
	// The names given, in order, for the messages.
	var given []string
	values := map[string]ast.ExprNode{}
	for i := first; i < len(n.Args); i += 2 {
		an := argName(n.Args[i])
		if an == "" {
			return nil, sqlerr.New(sqlerr.SyntaxError, "positional argument cannot follow named argument")
		}
		if i+1 >= len(n.Args) || argName(n.Args[i+1]) != "" {
			return nil, sqlerr.New(sqlerr.SyntaxError, "syntax error at or near \"=>\"")
		}
		if _, dup := values[an]; dup {
			return nil, sqlerr.New(sqlerr.SyntaxError, "argument name \"%s\" used more than once", an)
		}
		values[an] = n.Args[i+1]
		given = append(given, an+" => ...")
	}
	noFunc := func() error {
		return sqlerr.New(sqlerr.UndefinedFunction, "function %s(%s) does not exist", name, strings.Join(given, ", "))
	}
	ps, ok := paramNames[name]
	if !ok || n.Schema.L != "" && n.Schema.L != SchemaCatalog {
		return nil, noFunc()
	}
	args := append([]ast.ExprNode(nil), n.Args[:first]...)
	last := len(args) - 1
	for j, p := range ps.names {
		if _, ok := values[p]; ok {
			if j < first {
				return nil, noFunc() // also given by position
			}
			last = j
		}
	}
	if len(values) != 0 && last < 0 {
		return nil, noFunc()
	}
	used := 0
	for j := first; j <= last; j++ {
		p := ps.names[j]
		if v, ok := values[p]; ok {
			args = append(args, v)
			used++
			continue
		}
		if j < len(ps.names)-ps.defaults {
			return nil, noFunc() // a parameter without a default left out
		}
		args = append(args, ast.NewValueExpr(0, "", ""))
	}
	if used != len(values) || len(args) < len(ps.names)-ps.defaults {
		return nil, noFunc() // a name the function does not have, or one missing
	}
	m := *n
	m.Args = args
	return &m, nil
}

package bind

import (
	"github.com/pingcap/tidb/pkg/parser/ast"
	"github.com/pingcap/tidb/pkg/parser/opcode"
	"github.com/streamdb/streamdb/exec/expr"
	"github.com/streamdb/streamdb/sqlerr"
	"github.com/streamdb/streamdb/types"
)

// This file binds PostgreSQL's bitwise operators on integers and TRIM.

// bitOps are TiDB's bitwise opcodes and PostgreSQL's names for them; the
// dialect layer turns PostgreSQL's # (xor) into TiDB's ^.
var bitOps = map[opcode.Op]string{
	opcode.And: "&", opcode.Or: "|", opcode.Xor: "#", opcode.LeftShift: "<<", opcode.RightShift: ">>",
}

// bitOp resolves l op r as PostgreSQL does: & | # on two integers give
// the wider of their types (int2and, int4and, int8and after the implicit
// widening), << and >> the left operand's type with an integer count.
// An untyped literal is read as the other operand's type (as an integer
// next to an unknown: 42725 when both are).
func (b *Binder) bitOp(op string, l, r expr.Expr) (expr.Expr, error) {
	lt, rt := l.Type(), r.Type()
	var err error
	switch {
	case lt.Kind == types.Unknown && rt.Kind == types.Unknown:
		return nil, sqlerr.New("42725", "operator is not unique: unknown %s unknown", op)
	case lt.Kind == types.Unknown:
		t := rt
		if op == "<<" || op == ">>" {
			t = types.TInt64
		}
		l, err = b.coerce(l, t)
	case rt.Kind == types.Unknown:
		t := lt
		if op == "<<" || op == ">>" {
			t = types.TInt32
		}
		r, err = b.coerce(r, t)
	}
	if err != nil {
		return nil, err
	}
	lt, rt = l.Type(), r.Type()
	if !lt.IsInteger() || !rt.IsInteger() {
		return nil, noOperator(op, l, r)
	}
	res := lt
	if op == "<<" || op == ">>" {
		if rt.Kind == types.Int64 { // int8shl takes an int4 count
			return nil, noOperator(op, l, r)
		}
	} else if numRank(rt.Kind) > numRank(lt.Kind) {
		res = rt
	}
	return call(op, res, l, r), nil
}

// bitNot is prefix ~ on an integer.
func (b *Binder) bitNot(e expr.Expr) (expr.Expr, error) {
	t := e.Type()
	switch {
	case t.Kind == types.Unknown:
		return nil, sqlerr.New("42725", "operator is not unique: ~ unknown")
	case t.IsInteger():
		return call("bitnot", t, e), nil
	}
	return nil, sqlerr.New(sqlerr.UndefinedFunction, "operator does not exist: ~ %s", typeName(t))
}

// trimFunc binds TRIM([BOTH|LEADING|TRAILING] [chars] FROM s), which TiDB
// gives as trim(s), trim(s, chars) or trim(s, chars, direction), as
// PostgreSQL's btrim, ltrim or rtrim of (s, chars): the characters in
// chars (a space by default) are removed from the ends of s.
func (b *Binder) trimFunc(c *ectx, n *ast.FuncCallExpr) (expr.Expr, error) {
	fn, in := "btrim", n.Args
	if len(in) == 3 {
		d, ok := in[2].(*ast.TrimDirectionExpr)
		if !ok {
			return nil, sqlerr.New(sqlerr.SyntaxError, "syntax error at or near \",\"")
		}
		switch d.Direction {
		case ast.TrimLeading:
			fn = "ltrim"
		case ast.TrimTrailing:
			fn = "rtrim"
		}
		in = in[:2]
	}
	args := make([]expr.Expr, len(in))
	for i, a := range in {
		var err error
		if args[i], err = b.bindExpr(c, a); err != nil {
			return nil, err
		}
	}
	return b.resolveFunc(fn, args)
}

// PostgreSQL and MySQL rank these operators differently. PostgreSQL: * / %
// above + - above every other operator (& | # << >> and prefix ~, all one
// level, left-associative). MySQL, whose grammar TiDB has: ~ and ^ above
// * / %, then + -, then << >>, then &, then |. So when an unparenthesized
// chain of them holds a bitwise operator, the binder regroups the chain by
// PostgreSQL's levels: 4 | 1 & 2 is (4 | 1) & 2, 2 * 3 # 1 is (2 * 3) # 1,
// ~5 + 1 is ~(5 + 1). PostgreSQL's ^ (exponentiation, left-associative,
// above * / %), which reaches the binder as TiDB's DIV, is regrouped the
// same way: 2 * 3 ^ 2 is 2 * (3 ^ 2). Parentheses (kept in TiDB's tree)
// end a chain.

// chainTok is an operand (leaf) or an operator (op: "~" is the prefix one).
type chainTok struct {
	op   string
	leaf ast.ExprNode
}

// chainOp is the PostgreSQL name of a chain's binary operator.
func chainOp(op opcode.Op) (string, bool) {
	if s, ok := bitOps[op]; ok {
		return s, true
	}
	switch op {
	case opcode.Plus, opcode.Minus, opcode.Mul, opcode.Div, opcode.Mod:
		return binOps[op], true
	case opcode.IntDiv:
		return "^", true // the dialect layer's spelling of PostgreSQL's ^ (TiDB's DIV)
	}
	return "", false
}

// flattenChain appends the tokens of n's chain to toks, in source order,
// and reports whether it holds a bitwise operator.
func flattenChain(n ast.ExprNode, toks []chainTok) ([]chainTok, bool) {
	switch x := n.(type) {
	case *ast.BinaryOperationExpr:
		if op, ok := chainOp(x.Op); ok {
			toks, lb := flattenChain(x.L, toks)
			toks = append(toks, chainTok{op: op})
			toks, rb := flattenChain(x.R, toks)
			_, bit := bitOps[x.Op]
			return toks, lb || rb || bit || x.Op == opcode.IntDiv
		}
	case *ast.FuncCallExpr:
		// PostgreSQL's || is of the level of the json and bitwise
		// operators; TiDB's (PIPES_AS_CONCAT) binds tighter than all of them.
		if isPipes(x) {
			toks, lb := flattenChain(x.Args[0], toks)
			toks = append(toks, chainTok{op: "||"})
			toks, rb := flattenChain(x.Args[1], toks)
			return toks, lb || rb
		}
	case *ast.UnaryOperationExpr:
		if x.Op == opcode.BitNeg {
			toks, _ = flattenChain(x.V, append(toks, chainTok{op: "~"}))
			return toks, true
		}
	}
	return append(toks, chainTok{leaf: n}), false
}

// pgPrec is PostgreSQL's precedence level of a binary chain operator.
func pgPrec(op string) int {
	switch op {
	case "^":
		return 4
	case "*", "/", "%":
		return 3
	case "+", "-":
		return 2
	}
	return 1
}

// chainBinder binds a flattened chain by precedence climbing.
type chainBinder struct {
	b    *Binder
	c    *ectx
	toks []chainTok
	i    int
}

func (p *chainBinder) expr(minPrec int) (expr.Expr, error) {
	var left expr.Expr
	var err error
	t := p.toks[p.i]
	p.i++
	if t.op == "~" {
		// A prefix operator of the lowest level takes the tighter ones
		// after it: ~a + b is ~(a + b), ~a & b is (~a) & b.
		e, err := p.expr(2)
		if err != nil {
			return nil, err
		}
		if left, err = p.b.bitNot(e); err != nil {
			return nil, err
		}
	} else if left, err = p.b.bindExpr(p.c, t.leaf); err != nil {
		return nil, err
	}
	for p.i < len(p.toks) {
		op := p.toks[p.i].op
		prec := pgPrec(op)
		if prec < minPrec {
			break
		}
		p.i++
		right, err := p.expr(prec + 1)
		if err != nil {
			return nil, err
		}
		switch op {
		case "&", "|", "#", "<<", ">>":
			left, err = p.b.bitOp(op, left, right)
		case "^":
			left, err = p.b.powerOp(left, right)
		case "->", "->>", "#>", "#>>", "@>", "<@", "?", "?|", "?&":
			left, err = p.b.jsonOp(op, left, right)
		case "||":
			left, err = p.b.concatOp(left, right)
		default:
			left, err = p.b.binaryOp(op, left, right)
		}
		if err != nil {
			return nil, err
		}
	}
	return left, nil
}

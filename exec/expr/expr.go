// Package expr holds bound scalar expressions and evaluates them
// column-at-a-time over Arrow record batches.
//
// Contract with the binder (sql/): every expression is fully typed, and
// operands of an operator already have the types the operator's kernel
// expects (the binder inserts Cast nodes; see Func for the signatures). So a
// kernel switches on the physical type once per batch and then runs a typed
// loop; there is no per-row interface call.
package expr

import (
	"fmt"
	"strings"

	"github.com/streamdb/streamdb/types"
)

// Expr is a bound expression. Implementations are plain immutable data.
type Expr interface {
	Type() types.T
	String() string
}

// ColRef reads column Idx of the input batch.
type ColRef struct {
	Idx  int
	T    types.T
	Name string // for printing plans only
}

// Const is a literal.
type Const struct {
	D types.Datum
	T types.T
}

// Param is the value of placeholder $N (Idx is N-1), taken from Ctx.Params.
type Param struct {
	Idx int
	T   types.T
}

// Cast converts E to T with PostgreSQL's rules (22P02, 22003 on failure).
type Cast struct {
	E Expr
	T types.T
}

// Func applies a built-in operator or function. Names and the operand types
// the binder guarantees:
//
//	"+","-","*","/","%"          both operands the same kind among Int64,Float64,Numeric
//	                              (ints are widened to Int64; result cast back by the binder);
//	                              Timestamp±Interval, Date±Int64 (days), Timestamp-Timestamp → Interval,
//	                              Interval±Interval, Interval*Float64
//	"neg"                         unary minus
//	"&","|","#"                  both Int64-physical integers of T; "bitnot" (~) one (bitwise.go)
//	"<<",">>"                    integer of T, integer shift count (bitwise.go)
//	"=","<>","<","<=",">",">="   both operands the same T.Physical()
//	"and","or","not"             Bool (three-valued logic)
//	"is_null","is_not_null"      any; never NULL
//	"is_true","is_false", "is_not_true", "is_not_false"  Bool; never NULL
//	"like","ilike"               Text, Text (pattern; may be a column)
//	"||"                         Text, Text (or Bytea, Bytea: the bytes)
//	"octet_length"               Text or Bytea → bytes
//	"lower","upper","length","substr"(2 or 3 args; ints Int64),"concat"(any number; NULLs skipped),
//	"abs","round","trunc"(1 or 2 args),"floor","ceil"
//	"power"                      Float64, Float64 or Numeric, Numeric (PostgreSQL's ^)
//	"coalesce"                   all args of T
//	"nullif"                     both args of T
//	"now"                        no args; Ctx.Now
//	"gen_random_uuid"            no args; a random UUID per row (volatile)
//	"date_trunc"                 Text unit, Timestamp (or Date cast to Timestamp)
//	"extract"                    Text field, Timestamp/Date/Interval → Numeric (PostgreSQL 14+)
//	"tumble_start","tumble_end"  Timestamp, Interval → Timestamp
//	"replace"                    Text, Text, Text
//	"btrim","ltrim","rtrim"      Text, Text (characters to remove) → Text
//	"split_part"                 Text, Text, Int64
//	"to_char"                    Timestamp, Text (template) → Text
//	"to_char_num"                Int64, Float32/64 or Numeric, Text (template) → Text
//	"to_number"                  Text, Text (template) → Numeric
//	"to_date"                    Text, Text (template) → Date
//	"to_timestamp_fmt"           Text, Text (template) → TimestampTZ
//	"regexp_match"               Text, Text [, Text flags] → TextArray
//	"regexp_replace"             Text, Text, Text [, Text flags] → Text
//	"array_to_string"            TextArray, Text → Text
//	"regex_test"                 Text, Text (pattern) → Bool: PostgreSQL's ~
//	"array_contains"             Text x, TextArray → Bool: PostgreSQL's x = ANY(array)
//	"subscript"                  TextArray, Int64 (1-based) → Text
//	"single_value"               Int64 n, T v → v; 21000 where n > 1 (decorrelated scalar subquery)
//	"array_or_empty"             TextArray → TextArray; NULL becomes {} (ARRAY(subquery))
//	"array_ctor"                 Text... → TextArray: ARRAY[a, b] (arrayfuncs.go)
//	"array_cat"                  TextArray, TextArray → TextArray: a || b
//	"array_upper", "array_lower", "array_length"  TextArray, Int32 → Int32
//	"json_build_object"          (Text, any)... → Text: a JSON object (jsonfuncs.go)
//	"quote_ident"                Text → Text: PostgreSQL's quote_ident (quoteident.go)
//	"field_select"               Record, Int64 constant k → field k's type: (r).field (recordfuncs.go)
//	"row_ctor"                   any... → Record: ROW(a, ...) of the result's shape (recordfuncs.go)
//	"record_mask"                Record, Record → Record: the first, NULL where the second is
//	"record_key"                 Record → Text: equal exactly when the records are = (grouping, joins)
type Func struct {
	Name string
	Args []Expr
	T    types.T
}

// Case is CASE WHEN c THEN v ... ELSE e END (the simple form is rewritten to
// this searched form by the binder). Else may be nil (NULL).
type Case struct {
	Whens []When
	Else  Expr
	T     types.T
}

// When is one arm of a Case.
type When struct{ Cond, Then Expr }

// InList is E [NOT] IN (List...); all of the same physical type as E.
type InList struct {
	E    Expr
	List []Expr
	Not  bool
}

func (e *ColRef) Type() types.T { return e.T }
func (e *Const) Type() types.T  { return e.T }
func (e *Param) Type() types.T  { return e.T }
func (e *Cast) Type() types.T   { return e.T }
func (e *Func) Type() types.T   { return e.T }
func (e *Case) Type() types.T   { return e.T }
func (e *InList) Type() types.T { return types.TBool }

func (e *ColRef) String() string {
	if e.Name != "" {
		return e.Name
	}
	return fmt.Sprintf("#%d", e.Idx)
}
func (e *Const) String() string {
	if e.D.Null {
		return "NULL"
	}
	switch e.T.Physical() {
	case types.PhysBool:
		return fmt.Sprint(e.D.I != 0)
	case types.PhysInt64:
		if e.T.IsInteger() {
			return fmt.Sprint(e.D.I)
		}
		return fmt.Sprintf("%d::%s", e.D.I, e.T)
	case types.PhysFloat64:
		return fmt.Sprint(e.D.F)
	case types.PhysDecimal:
		return e.D.D.ToString(e.T.Scale)
	case types.PhysString:
		if e.T.Kind == types.JSONB {
			return "'" + strings.ReplaceAll(types.TextOf(e.D, e.T), "'", "''") + "'::jsonb"
		}
		return "'" + strings.ReplaceAll(e.D.S, "'", "''") + "'"
	case types.PhysUUID:
		return "'" + e.D.S + "'::uuid"
	case types.PhysInterval:
		return fmt.Sprintf("interval(%dmon %dd %dns)", e.D.IV.Months, e.D.IV.Days, e.D.IV.Nanoseconds)
	case types.PhysList:
		return "'" + strings.ReplaceAll(types.TextOf(e.D, e.T), "'", "''") + "'::text[]"
	}
	return "?"
}
func (e *Param) String() string { return fmt.Sprintf("$%d", e.Idx+1) }
func (e *Cast) String() string  { return fmt.Sprintf("CAST(%s AS %s)", e.E, e.T) }
func (e *Func) String() string {
	args := make([]string, len(e.Args))
	for i, a := range e.Args {
		args[i] = a.String()
	}
	switch {
	case len(e.Args) == 2 && isInfix(e.Name):
		return "(" + args[0] + " " + e.Name + " " + args[1] + ")"
	}
	return e.Name + "(" + strings.Join(args, ", ") + ")"
}
func (e *Case) String() string {
	var b strings.Builder
	b.WriteString("CASE")
	for _, w := range e.Whens {
		fmt.Fprintf(&b, " WHEN %s THEN %s", w.Cond, w.Then)
	}
	if e.Else != nil {
		fmt.Fprintf(&b, " ELSE %s", e.Else)
	}
	b.WriteString(" END")
	return b.String()
}
func (e *InList) String() string {
	args := make([]string, len(e.List))
	for i, a := range e.List {
		args[i] = a.String()
	}
	not := ""
	if e.Not {
		not = "NOT "
	}
	return fmt.Sprintf("%s %sIN (%s)", e.E, not, strings.Join(args, ", "))
}

func isInfix(name string) bool {
	switch name {
	case "+", "-", "*", "/", "%", "=", "<>", "<", "<=", ">", ">=", "and", "or", "like", "ilike", "||":
		return true
	}
	return false
}

// Types returns the result types of es.
func Types(es []Expr) []types.T {
	ts := make([]types.T, len(es))
	for i, e := range es {
		ts[i] = e.Type()
	}
	return ts
}

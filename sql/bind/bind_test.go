package bind

import (
	"flag"
	"fmt"
	"os"
	"strings"
	"testing"

	"github.com/apache/arrow-go/v18/arrow"
	"github.com/pingcap/tidb/pkg/parser"
	"github.com/pingcap/tidb/pkg/parser/ast"
	"github.com/pingcap/tidb/pkg/parser/mysql"
	_ "github.com/pingcap/tidb/pkg/parser/test_driver"
	"github.com/streamdb/streamdb/exec/expr"
	"github.com/streamdb/streamdb/planner"
	"github.com/streamdb/streamdb/sqlerr"
	"github.com/streamdb/streamdb/storage"
	"github.com/streamdb/streamdb/types"
)

var rewrite = flag.Bool("rewrite", false, "rewrite testdata golden files")

type fakeCatalog map[string]*storage.TableDef

func (c fakeCatalog) Table(name string) (*storage.TableDef, bool) {
	t, ok := c[name]
	return t, ok
}

func col(name string, t types.T) storage.ColumnDef { return storage.ColumnDef{Name: name, Type: t} }

func testCatalog() fakeCatalog {
	c := fakeCatalog{}
	add := func(name string, kind storage.TableKind, cols ...storage.ColumnDef) {
		c[name] = &storage.TableDef{Name: name, Kind: kind, Columns: cols}
	}
	add("words", storage.KindStream, col("word", types.T{Kind: types.Text, Prec: 20}), col("n", types.TInt64), col("ts", types.TTimestamp))
	add("t", storage.KindStream, col("a", types.TInt32), col("b", types.TInt32), col("s", types.TText),
		col("x", types.NumericOf(10, 2)), col("f", types.TFloat64), col("d", types.TDate), col("sm", types.TInt16),
		col("ok", types.TBool), col("iv", types.TInterval))
	add("u", storage.KindStream, col("a", types.TInt32), col("c", types.TText))
	add("wc", storage.KindView, col("word", types.TText), col("cnt", types.TInt64))
	add("nn", storage.KindStream, storage.ColumnDef{Name: "id", Type: types.TInt64, NotNull: true}, col("v", types.TText))
	add("kd", storage.KindStream, storage.ColumnDef{Name: "k", Type: types.TInt32, NotNull: true}, col("v", types.TText))
	c["kd"].KeyCols = []int{0}
	return c
}

func parseOne(t *testing.T, sql string) ast.StmtNode {
	t.Helper()
	p := parser.New()
	p.SetSQLMode(mysql.ModeANSIQuotes | mysql.ModePipesAsConcat)
	stmts, _, err := p.Parse(sql, "", "")
	if err != nil {
		t.Fatalf("parse %q: %v", sql, err)
	}
	if len(stmts) != 1 {
		t.Fatalf("parse %q: %d statements", sql, len(stmts))
	}
	return stmts[0]
}

// bindSQL binds one statement and prints the plan, or the error with its SQLSTATE.
func bindSQL(t *testing.T, b *Binder, sql string) (string, error) {
	t.Helper()
	switch n := parseOne(t, sql).(type) {
	case *ast.InsertStmt:
		def, p, err := b.BindInsert(n)
		if err != nil {
			return "", err
		}
		return "Insert " + def.Name + "\n" + Format(p), nil
	case ast.ResultSetNode:
		p, err := b.BindQuery(n)
		if err != nil {
			return "", err
		}
		return Format(p), nil
	default:
		t.Fatalf("unexpected statement %T", n)
	}
	return "", nil
}

// TestGolden binds each query of testdata/plans.txt and compares the
// printed plan (or "error CODE: message") with the expected output.
// Blocks are: SQL lines, "----", expected lines, blank line.
func TestGolden(t *testing.T) {
	const path = "testdata/plans.txt"
	data, err := os.ReadFile(path)
	if err != nil {
		t.Fatal(err)
	}
	var out strings.Builder
	blocks := strings.Split(strings.TrimSpace(string(data)), "\n\n")
	for _, block := range blocks {
		sqlPart, want, found := strings.Cut(block, "----\n")
		if !found {
			sqlPart, want = strings.TrimSuffix(block, "----"), ""
		}
		sql := strings.TrimSpace(sqlPart)
		got, err := bindSQL(t, &Binder{Cat: testCatalog()}, sql)
		if err != nil {
			got = fmt.Sprintf("error %s: %s\n", sqlerr.Code(err), err)
		}
		if !*rewrite && strings.TrimSpace(got) != strings.TrimSpace(want) {
			t.Errorf("%s\n--- got:\n%s--- want:\n%s", sql, got, want)
		}
		fmt.Fprintf(&out, "%s\n----\n%s\n\n", sql, strings.TrimSuffix(got, "\n"))
	}
	if *rewrite {
		if err := os.WriteFile(path, []byte(out.String()), 0o644); err != nil {
			t.Fatal(err)
		}
	}
}

func TestErrors(t *testing.T) {
	for _, tc := range []struct{ sql, code, msg string }{
		{"select nope from t", sqlerr.UndefinedColumn, `column "nope" does not exist`},
		{"select t.nope from t", sqlerr.UndefinedColumn, `column t.nope does not exist`},
		{"select z.a from t", sqlerr.UndefinedTable, `missing FROM-clause entry for table "z"`},
		{"select * from missing", sqlerr.UndefinedTable, `relation "missing" does not exist`},
		{"select a from t, u", sqlerr.AmbiguousColumn, `column reference "a" is ambiguous`},
		{"select * from t, t", "42712", `table name "t" specified more than once`},
		{"select foo(a) from t", sqlerr.UndefinedFunction, `function foo(integer) does not exist`},
		{"select s + a from t", sqlerr.UndefinedFunction, `operator does not exist: text + integer`},
		{"select a from t where a = s", sqlerr.UndefinedFunction, `operator does not exist: integer = text`},
		{"select a from t where a", sqlerr.DatatypeMismatch, `argument of WHERE must be type boolean, not type integer`},
		{"select a from t where count(*) > 1", sqlerr.GroupingError, `aggregate functions are not allowed in WHERE`},
		{"select a, count(*) from t", sqlerr.GroupingError, `column "t.a" must appear in the GROUP BY clause or be used in an aggregate function`},
		{"select a, b from t group by a", sqlerr.GroupingError, `column "t.b" must appear in the GROUP BY clause or be used in an aggregate function`},
		{"select * from t group by a", sqlerr.GroupingError, `column "t.b" must appear in the GROUP BY clause or be used in an aggregate function`},
		{"select a from t group by a order by b", sqlerr.GroupingError, `column "t.b" must appear in the GROUP BY clause or be used in an aggregate function`},
		{"select sum(count(*)) from t", sqlerr.GroupingError, `aggregate function calls cannot be nested`},
		{"select count(*) from t group by count(*)", sqlerr.GroupingError, `aggregate functions are not allowed in GROUP BY`},
		{"select a from t group by 3", "42P10", `GROUP BY position 3 is not in select list`},
		{"select a from t order by 2", "42P10", `ORDER BY position 2 is not in select list`},
		{"select distinct a from t order by b", "42P10", `for SELECT DISTINCT, ORDER BY expressions must appear in select list`},
		{"select sum(s) from t", sqlerr.UndefinedFunction, `function sum(text) does not exist`},
		{"select a from t having a > 1", sqlerr.GroupingError, `column "t.a" must appear in the GROUP BY clause or be used in an aggregate function`},
		{"select a from t group by a having sum(a)", sqlerr.DatatypeMismatch, `argument of HAVING must be type boolean, not type bigint`},
		{"select pg_cast('abc', 'integer')", sqlerr.InvalidTextRep, `invalid input syntax for type integer: "abc"`},
		{"select pg_cast('99999', 'smallint')", sqlerr.NumericOutOfRange, `value "99999" is out of range for type smallint`},
		{"select pg_cast('2026-13-01', 'timestamp')", sqlerr.DatetimeFieldOverflow, `date/time field value out of range: "2026-13-01"`},
		{"select pg_cast('yesterdayish', 'timestamp')", sqlerr.InvalidDatetimeFormat, `invalid input syntax for type timestamp: "yesterdayish"`},
		{"select a from t where ts > 'garbage'", sqlerr.UndefinedColumn, `column "ts" does not exist`},
		{"select word from words where ts > 'garbage'", sqlerr.InvalidDatetimeFormat, `invalid input syntax for type timestamp: "garbage"`},
		{"select pg_cast(ts, 'integer') from words", "42846", `cannot cast type timestamp without time zone to integer`},
		{"select a from t where a in (select a from u) or a = 1", sqlerr.FeatureNotSupported, `EXISTS and IN (subquery) are supported only as conditions of WHERE, joined by AND (not under OR, in the select list or in JOIN ... ON)`},
		{"select a from t where a in (select t.a from u where u.a = t.a)", sqlerr.FeatureNotSupported, `subqueries whose select list uses columns of the outer query are not supported`},
		{"select a, (select max(c) from u where u.a = t.a group by c) from t", sqlerr.FeatureNotSupported, `correlated subqueries in a subquery used as a value are supported only as SELECT ... FROM ... WHERE, without GROUP BY, aggregates, window functions, LIMIT or set operations`},
		{"select a, (select c, a from u where u.a = t.a) from t", sqlerr.SyntaxError, `subquery has too many columns`},
		{"select pg_array_subquery((select pg_cast('{1}', 'integer[]') from u where u.a = t.a)) from t", sqlerr.FeatureNotSupported, `ARRAY(subquery) of an array (a multidimensional array) is not supported`},
		{"select count(*), pg_array_subquery((select c from u)) from t", sqlerr.FeatureNotSupported, `ARRAY(subquery) is supported only in WHERE and in the select list of a query without GROUP BY or aggregates`},
		{"select a, ntile(2) over (order by a) from t", sqlerr.FeatureNotSupported, `window function ntile is not supported (supported: row_number, rank, dense_rank, count, sum, avg, min, max, lag, lead, first_value, last_value, nth_value, array_agg, string_agg, jsonb_agg, jsonb_object_agg)`},
		{"select a, first_value(a) over (order by a, a range between 1 preceding and current row) from t", sqlerr.WindowingError, `RANGE with offset PRECEDING/FOLLOWING requires exactly one ORDER BY column`},
		{"select a from t where row_number() over () > 1", sqlerr.WindowingError, `window functions are not allowed in WHERE`},
		{"select a from t union select s from t", sqlerr.DatatypeMismatch, `UNION types integer and text cannot be matched`},
		{"select a from t union all select a, b from t", sqlerr.SyntaxError, `each UNION query must have the same number of columns`},
		{"select a from t intersect select a from u", sqlerr.FeatureNotSupported, `INTERSECT and EXCEPT are not supported`},
		{"select x.a from (select a from t)", sqlerr.UndefinedTable, `missing FROM-clause entry for table "x"`},
		{"select a from (select a from t), (select a from u)", sqlerr.AmbiguousColumn, `column reference "a" is ambiguous`},
		{"select * from t join u using (zz)", sqlerr.UndefinedColumn, `column "zz" specified in USING clause does not exist in left table`},
		{"select * from t join u on t.a", sqlerr.DatatypeMismatch, `argument of JOIN/ON must be type boolean, not type integer`},
		{"select not a from t", sqlerr.DatatypeMismatch, `argument of NOT must be type boolean, not type integer`},
		{"select a and ok from t", sqlerr.DatatypeMismatch, `argument of AND must be type boolean, not type integer`},
		{"select a || b from t", sqlerr.UndefinedFunction, `operator does not exist: integer || integer`},
		{"select a like 'x' from t", sqlerr.UndefinedFunction, `operator does not exist: integer ~~ text`},
		{"select round(f, 2) from t", sqlerr.UndefinedFunction, `function round(double precision, integer) does not exist`},
		{"select f % f from t", sqlerr.UndefinedFunction, `operator does not exist: double precision % double precision`},
		{"select case when a then 1 end from t", sqlerr.DatatypeMismatch, `argument of CASE/WHEN must be type boolean, not type integer`},
		{"select case when ok then 1 else 'x' end from t", sqlerr.InvalidTextRep, `invalid input syntax for type integer: "x"`},
		{"select coalesce(a, s) from t", sqlerr.DatatypeMismatch, `COALESCE types integer and text cannot be matched`},
		{"select * from t as of timestamp pg_asof_savepoint('sp')", sqlerr.FeatureNotSupported, `AS OF is only supported for materialized views; "t" is a table`},
		{"select a, b as a from t order by a", sqlerr.AmbiguousColumn, `ORDER BY "a" is ambiguous`},
		{"select a from t union all select b from t order by a + 1", sqlerr.FeatureNotSupported, `invalid UNION/INTERSECT/EXCEPT ORDER BY clause: only result column names can be used`},
		{"select *", sqlerr.SyntaxError, `SELECT * with no tables specified is not valid`},
		{"select a from t join u on count(*) > 0", sqlerr.GroupingError, `aggregate functions are not allowed in JOIN conditions`},
		{"select $1 + $2", "42725", `operator is not unique: unknown + unknown`},
		{"insert into missing values (1)", sqlerr.UndefinedTable, `relation "missing" does not exist`},
		{"insert into u (zz) values (1)", sqlerr.UndefinedColumn, `column "zz" of relation "u" does not exist`},
		{"insert into u (a, a) values (1, 2)", sqlerr.DuplicateColumn, `column "a" specified more than once`},
		{"insert into u values (1, 'x', 3)", sqlerr.SyntaxError, `INSERT has more expressions than target columns`},
		{"insert into u (a, c) values (1)", sqlerr.SyntaxError, `INSERT has more target columns than expressions`},
		{"insert into u values (1, 'x'), (2)", sqlerr.SyntaxError, `VALUES lists must all be the same length`},
		{"insert into u values ('x', 'y')", sqlerr.InvalidTextRep, `invalid input syntax for type integer: "x"`},
		{"insert into u values (pg_cast('1', 'text'), 'y')", sqlerr.DatatypeMismatch, `column "a" is of type integer but expression is of type text`},
		{"insert into words values (pg_cast('a string longer than twenty characters', 'text'), 1, now())", sqlerr.StringDataRightTrunc, `value too long for type character varying(20)`},
		{"insert into words values ('a string longer than twenty characters', 1, now())", sqlerr.StringDataRightTrunc, `value too long for type character varying(20)`},
		{"insert into u values (3000000000, 'y')", sqlerr.NumericOutOfRange, `integer out of range`},
		{"insert into nn values (null, 'x')", sqlerr.NotNullViolation, `null value in column "id" of relation "nn" violates not-null constraint`},
		{"insert into nn (v) values ('x')", sqlerr.NotNullViolation, `null value in column "id" of relation "nn" violates not-null constraint`},
		{"insert into u select a, b, s from t", sqlerr.SyntaxError, `INSERT has more expressions than target columns`},
		{"insert into wc values ('x', 1)", "42809", `cannot change materialized view "wc"`},
		{"insert into u values (count(*), 'x')", sqlerr.GroupingError, `aggregate functions are not allowed in VALUES`},
		{"select x + s from t", sqlerr.UndefinedFunction, `operator does not exist: numeric + text`},
		{"select 1.5 / 0", sqlerr.DivisionByZero, `division by zero`},
		{"select a from t limit 18446744073709551615", "2201W", `LIMIT must not be negative`},
		{"select a from t limit 1 offset 18446744073709551613", "2201X", `OFFSET must not be negative`},
		{"select pg_extract('fortnight', d) from t", "22023", `unit "fortnight" not recognized for type date`},
		{"insert into u select 'x', 'y'", sqlerr.InvalidTextRep, `invalid input syntax for type integer: "x"`},
		{"insert into u (a) select d from t", sqlerr.DatatypeMismatch, `column "a" is of type integer but expression is of type date`},
	} {
		if tc.msg == "" {
			continue
		}
		_, err := bindSQL(t, &Binder{Cat: testCatalog()}, tc.sql)
		if err == nil {
			t.Errorf("%s: no error, want %s", tc.sql, tc.code)
			continue
		}
		if sqlerr.Code(err) != tc.code || err.Error() != tc.msg {
			t.Errorf("%s:\n got %s %q\nwant %s %q", tc.sql, sqlerr.Code(err), err, tc.code, tc.msg)
		}
	}
}

func TestParams(t *testing.T) {
	for _, tc := range []struct {
		sql    string
		preset []types.T
		want   []types.T
	}{
		{"select word from words where n = $1", nil, []types.T{types.TInt64}},
		{"select word from words where n = $2 and word = $1", nil, []types.T{types.TText, types.TInt64}},
		{"select $1", nil, []types.T{types.TText}},
		{"select word from words where ts > now() - $1", nil, []types.T{types.TInterval}},
		{"select word from words where ts > $1", nil, []types.T{types.TTimestamp}},
		{"select x from t where x = $1", nil, []types.T{types.TNumeric}},
		{"select $1 + 1", []types.T{types.TInt64}, []types.T{types.TInt64}},
		{"select a from t where a in ($1, $2)", []types.T{types.TUnknown}, []types.T{types.TInt32, types.TInt32}},
		{"insert into u values ($1, $2)", nil, []types.T{types.TInt32, types.TText}},
		{"insert into u (c) values ($1)", []types.T{types.TUnknown}, []types.T{types.TText}},
	} {
		b := &Binder{Cat: testCatalog(), Params: tc.preset}
		if _, err := bindSQL(t, b, tc.sql); err != nil {
			t.Errorf("%s: %v", tc.sql, err)
			continue
		}
		if fmt.Sprint(b.Params) != fmt.Sprint(tc.want) {
			t.Errorf("%s: params %v, want %v", tc.sql, b.Params, tc.want)
		}
	}
}

func TestOutputColumns(t *testing.T) {
	// NUMERIC(38,s) is NUMERIC whose values print with s digits (numeric.go).
	for _, tc := range []struct{ sql, want string }{
		{"select * from words", "word:character varying(20) n:bigint ts:timestamp without time zone"},
		{"select x + 1, x * x, x / 3, 7.0 / 2, 1.50 / 3, avg(x), sum(x), round(x, 1), pg_cast(x, 'numeric'), pg_cast('1.50', 'numeric'), pg_cast(f, 'numeric'), coalesce(x, 0), coalesce(x, x) from t group by x, f",
			"?column?:numeric(38,2) ?column?:numeric(38,4) ?column?:numeric ?column?:numeric(38,16) ?column?:numeric(38,20) avg:numeric sum:numeric(38,2) round:numeric(38,1) x:numeric(38,2) numeric:numeric(38,2) f:numeric coalesce:numeric coalesce:numeric(10,2)"},
		{"select word, count(*), sum(n), avg(n), min(ts), max(word) from words group by word",
			"word:character varying(20) count:bigint sum:numeric(38,0) avg:numeric min:timestamp without time zone max:character varying(20)"},
		{"select sum(a), sum(sm), sum(f), avg(f), sum(x), count(distinct s) from t", "sum:bigint sum:bigint sum:double precision avg:double precision sum:numeric(38,2) count:bigint"},
		{"select 1, 1.5, 3000000000, 99999999999999999999, 'x', null, true", "?column?:integer ?column?:numeric(38,1) ?column?:bigint ?column?:numeric(38,0) ?column?:text ?column?:text ?column?:boolean"},
		{"select pg_cast(1, 'int'), pg_cast(a, 'text'), pg_cast('5', 'bigint') as five from t", "int4:integer a:text five:bigint"},
		{"select a + 1 as b, case when ok then 1 end, lower(s), upper(s) u, length(s), s || 'x' from t",
			"b:integer case:integer lower:text u:text length:integer ?column?:text"},
		{"select sm + sm, sm + a, a + 3000000000, a + x, a + f, a / 2, x * 2, f * 1.5 from t",
			"?column?:smallint ?column?:integer ?column?:bigint ?column?:numeric(38,2) ?column?:double precision ?column?:integer ?column?:numeric(38,2) ?column?:double precision"},
		{"select now(), current_timestamp, date_trunc('hour', ts), extract(year from ts), ts + pg_interval('5 minutes'), ts - ts from words",
			"now:timestamp without time zone current_timestamp:timestamp without time zone date_trunc:timestamp without time zone extract:numeric(38,0) ?column?:timestamp without time zone ?column?:interval"},
		{"select coalesce(a, 0), nullif(s, ''), greatest(a, b, 3), abs(sm), round(x), round(a), floor(f), substr(s, 2), substring(s, 1, 2), concat(s, a) from t",
			"coalesce:integer nullif:text greatest:integer abs:smallint round:numeric(38,0) round:double precision floor:double precision substr:text substring:text concat:text"},
		{"select a from t union all select 1.5 from u", "a:numeric"},
		{"select 'a' union all select 'b'", "?column?:text"},
		{"select * from t join u using (a)", "a:integer b:integer s:text x:numeric(10,2) f:double precision d:date sm:smallint ok:boolean iv:interval c:text"},
		{"select * from t right join u using (a)", "a:integer b:integer s:text x:numeric(10,2) f:double precision d:date sm:smallint ok:boolean iv:interval c:text"},
		{"select * from (select word, count(*) as c from words group by word) as q where c > 1", "word:character varying(20) c:bigint"},
		{"select d + 1, d + pg_interval('1 day'), d - ts from t, words", "?column?:date ?column?:timestamp without time zone ?column?:interval"},
	} {
		b := &Binder{Cat: testCatalog()}
		p, err := b.BindQuery(parseOne(t, tc.sql).(ast.ResultSetNode))
		if err != nil {
			t.Errorf("%s: %v", tc.sql, err)
			continue
		}
		var got []string
		for _, c := range p.Schema() {
			got = append(got, c.Name+":"+c.T.String())
		}
		if g := strings.Join(got, " "); g != tc.want {
			t.Errorf("%s:\n got %s\nwant %s", tc.sql, g, tc.want)
		}
	}
}

// TestLiteralFolding checks that typed literals are constants in the plan.
func TestLiteralFolding(t *testing.T) {
	b := &Binder{Cat: testCatalog()}
	p, err := b.BindQuery(parseOne(t, "select pg_cast('2026-01-01 10:00:00', 'timestamp'), pg_interval('1 day 02:00:00'), pg_cast('1.5', 'numeric(4,2)'), -5, -1.25").(ast.ResultSetNode))
	if err != nil {
		t.Fatal(err)
	}
	proj := p.(*planner.Project)
	want := []types.Datum{
		types.Int(1767261600000000),
		{IV: ivOf(0, 1, 2*3600e9)},
	}
	for i, w := range want {
		c, ok := proj.Exprs[i].(*expr.Const)
		if !ok || c.D != w {
			t.Errorf("expr %d = %#v, want const %v", i, proj.Exprs[i], w)
		}
	}
	for i, s := range []string{"1.50", "-5", "-1.25"} {
		c, ok := proj.Exprs[2+i].(*expr.Const)
		if !ok || c.String() != s {
			t.Errorf("expr %d = %v, want const %s", 2+i, proj.Exprs[2+i], s)
		}
	}
}

func ivOf(m, d int32, ns int64) (iv arrow.MonthDayNanoInterval) {
	return arrow.MonthDayNanoInterval{Months: m, Days: d, Nanoseconds: ns}
}

func TestBindExpr(t *testing.T) {
	b := &Binder{}
	scope := []planner.Column{{Name: "n", T: types.TInt64, Table: "w"}}
	sel := parseOne(t, "select n * 2 + 1, 'x', w.n = '7'").(*ast.SelectStmt)
	var got []string
	for _, f := range sel.Fields.Fields {
		e, err := b.BindExpr(f.Expr, scope)
		if err != nil {
			t.Fatal(err)
		}
		got = append(got, e.String()+":"+e.Type().String())
	}
	want := "((w.n * 2) + 1):bigint 'x':text (w.n = 7):boolean"
	if g := strings.Join(got, " "); g != want {
		t.Errorf("got %s, want %s", g, want)
	}
}

package parse

import (
	"errors"
	"fmt"
	"math"
	"strings"
	"testing"

	"github.com/pingcap/tidb/pkg/parser/ast"
	"github.com/pingcap/tidb/pkg/parser/format"
	"github.com/streamdb/streamdb/sqlerr"
)

// describe prints a statement for the golden table: TiDB queries as their
// restored text, our own statements as their Go value.
func describe(s Statement) string {
	switch s := s.(type) {
	case *Query:
		return "query" + emitFlag(s) + ": " + restore(s)
	case *CreateView:
		q := s.Query
		s2 := *s
		s2.Query, s2.SQL = nil, ""
		return fmt.Sprintf("%+v%s: %s", s2, emitFlag(q), restore(q))
	case *Declare:
		return fmt.Sprintf("declare %s%s: %s", s.Cursor, emitFlag(s.Query), restore(s.Query))
	case *Copy:
		if s.Query != nil {
			q := s.Query
			s2 := *s
			s2.Query = nil
			return fmt.Sprintf("%+v%s: %s", s2, emitFlag(q), restore(q))
		}
	case *CreateTable:
		s2 := *s
		s2.SQL = ""
		return fmt.Sprintf("%+v", s2)
	}
	return strings.TrimPrefix(fmt.Sprintf("%+v", s), "&")
}

func emitFlag(q *Query) string {
	if q.EmitChanges {
		return " emit"
	}
	return ""
}

func restore(q *Query) string {
	var b strings.Builder
	if err := q.Node.Restore(format.NewRestoreCtx(format.DefaultRestoreFlags, &b)); err != nil {
		return "restore error: " + err.Error()
	}
	return b.String()
}

func run(sql string) string {
	stmts, err := ParseAll(sql)
	if err != nil {
		var e *sqlerr.Error
		if !errors.As(err, &e) {
			return fmt.Sprintf("non-sqlerr error %T: %v", err, err)
		}
		return fmt.Sprintf("error %s at %d: %s", e.Code, e.Position, e.Msg)
	}
	var out []string
	for _, s := range stmts {
		out = append(out, describe(s))
	}
	return strings.Join(out, "\n")
}

var golden = []struct{ in, want string }{
	{"",
		""},
	{"   ;  ; -- nothing",
		""},
	{"SELECT 1; SELECT 2",
		"query: SELECT 1\nquery: SELECT 2"},
	{"select 'a;b' ; select 2",
		"query: SELECT _UTF8MB4'a;b'\nquery: SELECT 2"},
	{"select ';' -- ;",
		"query: SELECT _UTF8MB4';'"},
	{"select /* a /* nested */ ; */ 1",
		"query: SELECT 1"},
	{"select 'it''s', '::x', E'a\\'b\\\\c\\n', $$dollar 'q' \\x$$, $t$a$$b$t$",
		"query: SELECT _UTF8MB4'it''s',_UTF8MB4'::x',_UTF8MB4'a''b\\c\n',_UTF8MB4'dollar ''q'' \\x',_UTF8MB4'a$$b'"},
	{"select 'a\\b' from t",
		"query: SELECT _UTF8MB4'a\\b' FROM `t`"},
	{"select \"MixedCase\", Unquoted from \"T\"",
		"query: SELECT `MixedCase`,`unquoted` FROM `T`"},
	{"select x::int, x::bigint, x::numeric(10,2), x::varchar(5), x::double precision from t",
		"query: SELECT PG_CAST(`x`, _UTF8MB4'integer'),PG_CAST(`x`, _UTF8MB4'bigint'),PG_CAST(`x`, _UTF8MB4'numeric(10,2)'),PG_CAST(`x`, _UTF8MB4'character varying(5)'),PG_CAST(`x`, _UTF8MB4'double precision') FROM `t`"},
	{"select a::text::int from t",
		"query: SELECT PG_CAST(PG_CAST(`a`, _UTF8MB4'text'), _UTF8MB4'integer') FROM `t`"},
	{"select (a+b)::text from t",
		"query: SELECT PG_CAST((`a`+`b`), _UTF8MB4'text') FROM `t`"},
	{"select count(*)::float8 from t",
		"query: SELECT PG_CAST(COUNT(1), _UTF8MB4'double precision') FROM `t`"},
	{"select -x::int2 from t",
		"query: SELECT -PG_CAST(`x`, _UTF8MB4'smallint') FROM `t`"},
	{"select t.a::text, 'x'::date, $1::int8, 1.5::real from t",
		"query: SELECT PG_CAST(`t`.`a`, _UTF8MB4'text'),PG_CAST(_UTF8MB4'x', _UTF8MB4'date'),PG_CAST(`$1`, _UTF8MB4'bigint'),PG_CAST(1.5, _UTF8MB4'real') FROM `t`"},
	{"select x::timestamp without time zone, x::timestamptz from t",
		"query: SELECT PG_CAST(`x`, _UTF8MB4'timestamp without time zone'),PG_CAST(`x`, _UTF8MB4'timestamp with time zone') FROM `t`"},
	{"select cast(a as bigint), cast((a+1) as text) from t",
		"query: SELECT PG_CAST(`a`, _UTF8MB4'bigint'),PG_CAST((`a`+1), _UTF8MB4'text') FROM `t`"},
	{"select cast(a as int)::text from t",
		"query: SELECT PG_CAST(PG_CAST(`a`, _UTF8MB4'integer'), _UTF8MB4'text') FROM `t`"},
	{"select f(cast(x as numeric(5)))::text from t",
		"query: SELECT PG_CAST(F(PG_CAST(`x`, _UTF8MB4'numeric(5,0)')), _UTF8MB4'text') FROM `t`"},
	{"select x::foo from t",
		"error 42704 at 11: type \"foo\" does not exist"},
	{"select x:: from t",
		"error 42601 at 12: syntax error at or near \"from\""},
	{"select ::int",
		"error 42601 at 8: syntax error at or near \"::\""},
	{"select cast(x) from t",
		"error 42601 at 14: syntax error at or near \")\""},
	{"select ts + interval '5 minutes', interval '10' second, interval 5 second, interval '1' day from t",
		"query: SELECT `ts`+PG_INTERVAL(_UTF8MB4'5 minutes'),PG_INTERVAL(_UTF8MB4'10 second'),PG_INTERVAL(_UTF8MB4'5 second'),PG_INTERVAL(_UTF8MB4'1 day') FROM `t`"},
	{"select interval '2 hours 30 minutes'::text",
		"query: SELECT PG_CAST(PG_INTERVAL(_UTF8MB4'2 hours 30 minutes'), _UTF8MB4'text')"},
	{"SELECT word, count(*) FROM t GROUP BY TUMBLE(ts, INTERVAL '10' SECOND)",
		"query: SELECT `word`,COUNT(1) FROM `t` GROUP BY TUMBLE(`ts`, PG_INTERVAL(_UTF8MB4'10 second'))"},
	{"select * from v as of savepoint s1",
		"query: SELECT * FROM `v` AS OF TIMESTAMP PG_ASOF_SAVEPOINT(_UTF8MB4's1')"},
	{"SELECT * FROM v AS OF SAVEPOINT \"S1\"",
		"query: SELECT * FROM `v` AS OF TIMESTAMP PG_ASOF_SAVEPOINT(_UTF8MB4'S1')"},
	{"select * from v as of checkpoint 42",
		"query: SELECT * FROM `v` AS OF TIMESTAMP PG_ASOF_CHECKPOINT(42)"},
	{"select * from v as of checkpoint x",
		"error 42601 at 34: syntax error at or near \"x\""},
	{"SELECT a, count(*) FROM t GROUP BY a EMIT CHANGES",
		"query emit: SELECT `a`,COUNT(1) FROM `t` GROUP BY `a`"},
	{"select emit, changes from t",
		"query: SELECT `emit`,`changes` FROM `t`"},
	{"INSERT INTO t VALUES (1,'a'),(2,'b')",
		"query: INSERT INTO `t` VALUES (1,_UTF8MB4'a'),(2,_UTF8MB4'b')"},
	{"insert into words values ('hello', 1, '2026-01-01 00:00:00'), ('world', 2, now())",
		"query: INSERT INTO `words` VALUES (_UTF8MB4'hello',1,_UTF8MB4'2026-01-01 00:00:00'),(_UTF8MB4'world',2,NOW())"},
	{"select * from t where a not ilike '%x%' and b like 'y' and c between 1 and 2 and d in (1,2) and e is not null",
		"query: SELECT * FROM `t` WHERE `a` NOT ILIKE _UTF8MB4'%x%' AND `b` LIKE _UTF8MB4'y' AND `c` BETWEEN 1 AND 2 AND `d` IN (1,2) AND `e` IS NOT NULL"},
	{"select coalesce(a, 0), nullif(b, 1), case when a > 1 then 'x' else 'y' end from t",
		"query: SELECT COALESCE(`a`, 0),NULLIF(`b`, 1),CASE WHEN `a`>1 THEN _UTF8MB4'x' ELSE _UTF8MB4'y' END FROM `t`"},
	{"select a || b, date_trunc('hour', ts), extract(hour from ts) from t",
		"query: SELECT CONCAT(`a`, `b`),DATE_TRUNC(_UTF8MB4'hour', `ts`),PG_EXTRACT(_UTF8MB4'hour', `ts`) FROM `t`"},
	{"select * from (select 1 as a) s left join t on s.a = t.a union all select 1",
		"query: SELECT * FROM (SELECT 1 AS `a`) AS `s` LEFT JOIN `t` ON `s`.`a`=`t`.`a` UNION ALL SELECT 1"},
	{"select date '2026-01-01'::text",
		"query: SELECT PG_CAST(PG_CAST(_UTF8MB4'2026-01-01', _UTF8MB4'date'), _UTF8MB4'text')"},
	{"select date '2026-01-01', timestamp '2026-01-01 10:00', boolean 'yes', double precision '1.5', t.date from t",
		"query: SELECT PG_CAST(_UTF8MB4'2026-01-01', _UTF8MB4'date'),PG_CAST(_UTF8MB4'2026-01-01 10:00', _UTF8MB4'timestamp without time zone'),PG_CAST(_UTF8MB4'yes', _UTF8MB4'boolean'),PG_CAST(_UTF8MB4'1.5', _UTF8MB4'double precision'),`t`.`date` FROM `t`"},
	{"select extract(dow from ts), extract('epoch' from d) + 1, extract(year from extract(hour from ts)) from t",
		"query: SELECT PG_EXTRACT(_UTF8MB4'dow', `ts`),PG_EXTRACT(_UTF8MB4'epoch', `d`)+1,PG_EXTRACT(_UTF8MB4'year', PG_EXTRACT(_UTF8MB4'hour', `ts`)) FROM `t`"},
	{"select a from t order by a nulls first, b desc nulls last, c + 1 asc nulls first, (d), e",
		"query: SELECT `a` FROM `t` ORDER BY PG_NULLS_FIRST(`a`),PG_NULLS_LAST(`b`) DESC,PG_NULLS_FIRST(`c`+1),(`d`),`e`"},
	{"select a from (select a from t order by a desc nulls last limit 1) s union all select 2 order by 1 nulls first",
		"query: SELECT `a` FROM (SELECT `a` FROM `t` ORDER BY PG_NULLS_LAST(`a`) DESC LIMIT 0,1) AS `s` UNION ALL SELECT 2 ORDER BY PG_NULLS_FIRST(1)"},
	{"select a from t offset 2", "query: SELECT `a` FROM `t` LIMIT 2,9223372036854775807"},
	{"select a from t offset 2 rows limit all", "query: SELECT `a` FROM `t` LIMIT 2,9223372036854775807"},
	{"select a from t limit null offset 1 row", "query: SELECT `a` FROM `t` LIMIT 1,9223372036854775807"},
	{"select a from t order by a offset 1 fetch first 3 rows only", "query: SELECT `a` FROM `t` ORDER BY `a` LIMIT 1,3"},
	{"select a from t fetch next row only", "query: SELECT `a` FROM `t` LIMIT 0,1"},
	{"select a from t limit -1 offset -2", "query: SELECT `a` FROM `t` LIMIT 18446744073709551614,18446744073709551615"},
	{"select a from t limit 99999999999999999999", "error 22003 at 23: bigint out of range"},
	{"select trim('a', 'b' from 'c')", "error 42601 at 22: syntax error at or near \"from\""},
	{"select trim(both from , 'x')", "error 42601 at 23: syntax error at or near \",\""},
	{"select trim(both 'x' from 'a', )", "error 42601 at 32: syntax error at or near \")\""},
	{"select overlay('a' placing 'b')", "error 42601 at 31: syntax error at or near \")\""},
	{"select overlay('a' placing from 2)", "error 42601 at 28: syntax error at or near \"from\""},
	{"select ~~ 'a'", "error 42883 at 8: operator does not exist: ~~ with no left operand"},
	{"select a from t limit 1.5", "error 0A000 at 23: LIMIT and OFFSET must be integer constants"},
	{"select a from t fetch first 2 rows with ties", "error 0A000 at 36: FETCH FIRST ... WITH TIES is not supported"},
	{"create table bad (a int,)", "error 42601 at 25: syntax error at or near \")\""},
	{"select a <> b, a != b, a <= b, a >= b from t",
		"query: SELECT `a`!=`b`,`a`!=`b`,`a`<=`b`,`a`>=`b` FROM `t`"},
	{"select 1 +",
		"error 42601 at 11: syntax error at end of input"},
	{"select from t",
		"error 42601 at 8: syntax error at or near \"from\""},
	{"select a b c from t",
		"error 42601 at 12: syntax error at or near \"c\""},
	{"select a, from t where x = 'longer text'",
		"error 42601 at 11: syntax error at or near \"from\""},
	{"select 'é', b c from t",
		"query: SELECT _UTF8MB4'é',`b` AS `c` FROM `t`"},
	{"select 'unterminated",
		"error 42601 at 8: unterminated quoted string at or near \"'unterminated\""},
	{"select $$never closed",
		"error 42601 at 8: unterminated dollar-quoted string at or near \"$$never closed\""},
	{"select \"unterminated",
		"error 42601 at 8: unterminated quoted identifier at or near \"\\\"unterminated\""},
	{"select /* unterminated",
		"error 42601 at 8: unterminated /* comment at or near \"/* unterminated\""},
	{"select 123abc",
		"error 42601 at 8: trailing junk after numeric literal at or near \"123abc\""},
	// PostgreSQL's scanner reads ^- and #+ as one operator, which does not exist.
	{"select 2^-1",
		"error 42883 at 9: operator does not exist: ^-"},
	{"select a#+b, 1 from t",
		"error 42883 at 9: operator does not exist: #+"},
	{"select 2^--c\n3, 2 ^ -1",
		"query: SELECT 2 DIV 3,2 DIV -1"},
	{"select a # b from t", // PostgreSQL's xor, not a MySQL comment
		"query: SELECT `a`^`b` FROM `t`"},
	{"select `x` from t",
		"error 42601 at 8: syntax error at or near \"`\""},
	{"select ? from t",
		"error 42601 at 8: syntax error at or near \"?\""},
	// PostgreSQL's json operators: DIV around a marker the binder collapses (sql/parse jsonops.go).
	{"select p->'a'->>0, p#>'{a}', p#>>'{a,b}' from t",
		"query: SELECT `p` DIV PG_JSONOP(_UTF8MB4'->') DIV _UTF8MB4'a' DIV PG_JSONOP(_UTF8MB4'->>') DIV 0,`p` DIV PG_JSONOP(_UTF8MB4'#>') DIV _UTF8MB4'{a}',`p` DIV PG_JSONOP(_UTF8MB4'#>>') DIV _UTF8MB4'{a,b}' FROM `t`"},
	{"select * from t where p @> '{}' and p<@q and p ? 'k' and p ?| array['a'] and p?&b",
		"query: SELECT * FROM `t` WHERE `p` DIV PG_JSONOP(_UTF8MB4'@>') DIV _UTF8MB4'{}' AND `p` DIV PG_JSONOP(_UTF8MB4'<@') DIV `q` AND `p` DIV PG_JSONOP(_UTF8MB4'?') DIV _UTF8MB4'k' AND `p` DIV PG_JSONOP(_UTF8MB4'?|') DIV PG_ARRAY_CTOR(_UTF8MB4'a') AND `p` DIV PG_JSONOP(_UTF8MB4'?&') DIV `b`"},
	{"select '{\"a\": \"->\"}' -- -> a comment\n",
		"query: SELECT _UTF8MB4'{\"a\": \"->\"}'"},
	{"select ->'a'",
		"error 42601 at 8: syntax error at or near \"->\""},
	{"select x::int y z from t",
		"error 42601 at 17: syntax error at or near \"z\""},
	{"select 'é' x y",
		"error 42601 at 14: syntax error at or near \"y\""},
	{"select interval '1' day to second",
		"error 42601 at 25: syntax error at or near \"to\""},
	{"select a is not distinct from b from t",
		"query: SELECT `a`<=>`b` FROM `t`"},
	{"select a <=> b from t", // MySQL's null-safe =, lexed as <= and >
		"error 42883 at 10: operator does not exist: <=>"},
	{"select x'41', 1", // a bit string in PostgreSQL, a number in MySQL
		"error 0A000 at 8: bit string literals (B'...', X'...') are not supported"},
	{"select B'101'",
		"error 0A000 at 8: bit string literals (B'...', X'...') are not supported"},
	{"select 'a' regexp 'b'", // MySQL's operators: PostgreSQL reads an alias, then fails
		"error 42601 at 19: syntax error at or near \"'b'\""},
	{"select a rlike b from t",
		"error 42601 at 16: syntax error at or near \"b\""},
	{"select 3 mod 2, mod(3, 2) from t",
		"error 42601 at 14: syntax error at or near \"2\""},
	{"select mod(3, 2), x mod, t.mod, regexp from t where mod = 1",
		"query: SELECT 3%2,`x` AS `mod`,`t`.`mod`,`regexp` FROM `t` WHERE `mod`=1"},
	{"select a <= b, a<=b from t",
		"query: SELECT `a`<=`b`,`a`<=`b` FROM `t`"},
	{"select stddev(x), variance(x), std(x), group_concat(x), t.stddev(x) from t", // PostgreSQL's sample forms, by marker (pgaggs.go)
		"query: SELECT GROUP_CONCAT(`x` SEPARATOR '\x00streamdb:stddev'),GROUP_CONCAT(`x` SEPARATOR '\x00streamdb:variance'),STD(`x`),GROUP_CONCAT(`x`),`t`.`stddev`(`x`) FROM `t`"},
	{"select a is distinct from b from t",
		"query: SELECT `a`<=>PG_IS_DISTINCT_FROM()<=>`b` FROM `t`"},
	{"select string_agg(x, ',') filter (where x > 'a') from t",
		"query: SELECT GROUP_CONCAT(CASE WHEN PG_FILTER(`x`>_UTF8MB4'a') THEN `x` END SEPARATOR ',') FROM `t`"},
	{"select string_agg(x) from t", // group_concat would take it, with ',' between
		"error 42883 at 20: function string_agg with 1 argument does not exist"},
	{"select string_agg() from t",
		"error 42883 at 19: function string_agg() does not exist"},
	{"select string_agg(x, ',' order by y desc, z) from t", // group_concat's ORDER BY precedes its separator
		"query: SELECT GROUP_CONCAT(`x` ORDER BY `y` DESC,`z` SEPARATOR ',') FROM `t`"},
	{"select string_agg(x, ',' order by y) filter (where x > 'a'), string_agg(x, ';') filter (where true) from t",
		"query: SELECT GROUP_CONCAT(CASE WHEN PG_FILTER(`x`>_UTF8MB4'a') THEN `x` END ORDER BY `y` SEPARATOR ','),GROUP_CONCAT(CASE WHEN PG_FILTER(TRUE) THEN `x` END SEPARATOR ';') FROM `t`"},
	{"select string_agg(distinct x, ',') filter (where x > 'a') from t",
		"query: SELECT GROUP_CONCAT(DISTINCT CASE WHEN PG_FILTER(`x`>_UTF8MB4'a') THEN `x` END SEPARATOR ',') FROM `t`"},
	{"select array_agg(x order by y desc nulls first, z), array_agg(distinct x), array_agg(x) from t", // a marker separator (sortedagg.go)
		"query: SELECT GROUP_CONCAT(`x` ORDER BY PG_NULLS_FIRST(`y`) DESC,`z` SEPARATOR '\x00streamdb:array_agg'),GROUP_CONCAT(DISTINCT `x` SEPARATOR '\x00streamdb:array_agg'),BIT_XOR(`x`) FROM `t`"},
	{"select jsonb_object_agg(k, v order by (t)), jsonb_agg(x order by f(y, z)) from t",
		"query: SELECT GROUP_CONCAT(`k`, `v` ORDER BY (`t`) SEPARATOR '\x00streamdb:jsonb_object_agg'),GROUP_CONCAT(`x` ORDER BY F(`y`, `z`) SEPARATOR '\x00streamdb:jsonb_agg') FROM `t`"},
	{"select lower(x) filter (where true) from t",
		"error 42809 at 17: FILTER specified, but lower is not an aggregate function"},
	{"Select A, \"B\" FROM T",
		"query: SELECT `a`,`B` FROM `t`"},
	{"select $$a::b;c$$, '--x', '/*y*/'",
		"query: SELECT _UTF8MB4'a::b;c',_UTF8MB4'--x',_UTF8MB4'/*y*/'"},
	{"-- leading comment\nselect 1;;select 2",
		"query: SELECT 1\nquery: SELECT 2"},
	{"select x::numeric(50,2)",
		"error 22023 at 11: NUMERIC precision 50 must be between 1 and 38"},
	{"create table t (a varchar(0))",
		"error 22023 at 19: length for type varchar must be at least 1"},
	{"create table t (a char(0))",
		"error 22023 at 19: length for type char must be at least 1"},
	{"create table t (a bpchar)",
		"error 0A000 at 19: type bpchar without a length is not supported, use character(n) or text"},
	{"with x as (select 1 as a) select a::text from x",
		"query: WITH `x` AS (SELECT 1 AS `a`) SELECT PG_CAST(`a`, _UTF8MB4'text') FROM `x`"},
	{"select count(*) filter (where a > 1) from t",
		"query: SELECT COUNT(CASE WHEN PG_FILTER(`a`>1) THEN 1 END) FROM `t`"},
	{"select count(distinct b) filter (where a) from t",
		"query: SELECT COUNT(DISTINCT CASE WHEN PG_FILTER(`a`) THEN `b` END) FROM `t`"},
	{"select upper(s) filter (where a) from t",
		"error 42809 at 17: FILTER specified, but upper is not an aggregate function"},
	{"select 123456789012345678901234567890123456789.5, 12345678901234567890",
		"query: SELECT PG_CAST(_UTF8MB4'123456789012345678901234567890123456789.5', _UTF8MB4'numeric'),12345678901234567890"},
	{"explain select 1",
		"query: EXPLAIN FORMAT = 'row' SELECT 1"},
	{"begin",
		"query: START TRANSACTION"},
	{"BEGIN ISOLATION LEVEL SERIALIZABLE",
		"query: START TRANSACTION"},
	{"start transaction read only",
		"query: START TRANSACTION"},
	{"commit",
		"query: COMMIT"},
	{"end transaction",
		"query: COMMIT"},
	{"rollback",
		"query: ROLLBACK"},
	{"abort",
		"query: ROLLBACK"},
	{"rollback work to x",
		"{Op:2 Name:x}"},
	{"select É, Ab from t",
		"query: SELECT `É`,`ab` FROM `t`"},
	{"savepoint x",
		"{Op:0 Name:x}"},
	{"release savepoint x",
		"{Op:1 Name:x}"},
	{"release \"X\"",
		"{Op:1 Name:X}"},
	{"rollback to savepoint x",
		"{Op:2 Name:x}"},
	{"savepoint",
		"error 42601 at 10: syntax error at end of input"},
	{"CREATE TABLE words (word VARCHAR, n BIGINT, ts TIMESTAMP)",
		"{Name:words IfNotExists:false Columns:[{Name:word Type:text NotNull:false Default:} {Name:n Type:bigint NotNull:false Default:} {Name:ts Type:timestamp without time zone NotNull:false Default:}] WatermarkCol: WatermarkUS:0 WatermarkSQL: With:map[] SQL: PrimaryKey:[]}"},
	{"create table if not exists \"T\" (a int not null, b text null, \"C\" numeric(10,2), d double precision, e varchar(20), f character varying(3), g timestamp without time zone, h timestamptz, i date, j interval, k bool, l int2, m real, n float, o decimal)",
		"{Name:T IfNotExists:true Columns:[{Name:a Type:integer NotNull:true Default:} {Name:b Type:text NotNull:false Default:} {Name:C Type:numeric(10,2) NotNull:false Default:} {Name:d Type:double precision NotNull:false Default:} {Name:e Type:character varying(20) NotNull:false Default:} {Name:f Type:character varying(3) NotNull:false Default:} {Name:g Type:timestamp without time zone NotNull:false Default:} {Name:h Type:timestamp with time zone NotNull:false Default:} {Name:i Type:date NotNull:false Default:} {Name:j Type:interval NotNull:false Default:} {Name:k Type:boolean NotNull:false Default:} {Name:l Type:smallint NotNull:false Default:} {Name:m Type:real NotNull:false Default:} {Name:n Type:double precision NotNull:false Default:} {Name:o Type:numeric NotNull:false Default:}] WatermarkCol: WatermarkUS:0 WatermarkSQL: With:map[] SQL: PrimaryKey:[]}"},
	{"CREATE TABLE bids (auction BIGINT, price BIGINT, ts TIMESTAMP, WATERMARK FOR ts AS ts - INTERVAL '5' SECOND)",
		"{Name:bids IfNotExists:false Columns:[{Name:auction Type:bigint NotNull:false Default:} {Name:price Type:bigint NotNull:false Default:} {Name:ts Type:timestamp without time zone NotNull:false Default:}] WatermarkCol:ts WatermarkUS:5000000 WatermarkSQL:WATERMARK FOR ts AS ts - INTERVAL '5' SECOND With:map[] SQL: PrimaryKey:[]}"},
	{"create table b (ts timestamp, watermark for ts as ts - interval '5 seconds') with (partitions = 4, retention = '1d')",
		"{Name:b IfNotExists:false Columns:[{Name:ts Type:timestamp without time zone NotNull:false Default:}] WatermarkCol:ts WatermarkUS:5000000 WatermarkSQL:watermark for ts as ts - interval '5 seconds' With:map[partitions:4 retention:1d] SQL: PrimaryKey:[]}"},
	{"create table b (ts timestamp, watermark for ts as ts - interval 500 millisecond)",
		"{Name:b IfNotExists:false Columns:[{Name:ts Type:timestamp without time zone NotNull:false Default:}] WatermarkCol:ts WatermarkUS:500000 WatermarkSQL:watermark for ts as ts - interval 500 millisecond With:map[] SQL: PrimaryKey:[]}"},
	{"create table b (ts timestamp, watermark for ts as ts)",
		"{Name:b IfNotExists:false Columns:[{Name:ts Type:timestamp without time zone NotNull:false Default:}] WatermarkCol:ts WatermarkUS:0 WatermarkSQL:watermark for ts as ts With:map[] SQL: PrimaryKey:[]}"},
	{"create table b (a int, ts timestamp, primary key (a))",
		"{Name:b IfNotExists:false Columns:[{Name:a Type:integer NotNull:true Default:} {Name:ts Type:timestamp without time zone NotNull:false Default:}] WatermarkCol: WatermarkUS:0 WatermarkSQL: With:map[] SQL: PrimaryKey:[a]}"},
	{"create table b (a int primary key, ts timestamp)",
		"{Name:b IfNotExists:false Columns:[{Name:a Type:integer NotNull:true Default:} {Name:ts Type:timestamp without time zone NotNull:false Default:}] WatermarkCol: WatermarkUS:0 WatermarkSQL: With:map[] SQL: PrimaryKey:[a]}"},
	{"create table b (a int primary key, b int, primary key (b))",
		"error 42P16 at 43: multiple primary keys for table \"b\" are not allowed"},
	{"create table b (a int, ts timestamp) append only with (partitions = 2)",
		"{Name:b IfNotExists:false Columns:[{Name:a Type:integer NotNull:false Default:} {Name:ts Type:timestamp without time zone NotNull:false Default:}] WatermarkCol: WatermarkUS:0 WatermarkSQL: With:map[partitions:2] SQL: PrimaryKey:[]}"},
	{"create table b (a int primary key) APPEND ONLY",
		"error 42P16 at 36: an APPEND ONLY table cannot have a PRIMARY KEY: a key makes it a changelog table, whose rows UPDATE and DELETE change"},
	{"create table b (a int) append",
		"error 42601 at 24: syntax error at or near \"append\""},
	{"create table b (a int, primary key (c))",
		"error 42703 at 24: column \"c\" named in key does not exist"},
	{"create table b (a int, watermark for x as x)",
		"error 42703 at 24: column \"x\" named in WATERMARK does not exist"},
	{"create table b (a int, watermark for a as a)",
		"error 42804 at 24: watermark column \"a\" must be of type timestamp, not integer"},
	{"create table b (a int, a text)",
		"error 42701 at 24: column \"a\" specified more than once"},
	{"create table b (a foo)",
		"error 42704 at 19: type \"foo\" does not exist"},
	{"create table b (a int default 1 default 2)",
		"error 42601 at 33: multiple default values specified for column \"a\""},
	{"create table b (a int unique)",
		"error 0A000 at 23: column option UNIQUE is not supported"},
	{"create table b (a int, b int",
		"error 42601 at 29: syntax error at end of input"},
	{"create table b as select 1",
		"error 0A000 at 16: CREATE TABLE AS is not supported, use CREATE MATERIALIZED VIEW"},
	{"CREATE MATERIALIZED VIEW word_counts AS SELECT word, count(*) AS cnt, sum(n) AS total FROM words WHERE n > 0 GROUP BY word",
		"{Name:word_counts OrReplace:false IfNotExists:false Query:<nil> FromSavepoint: With:map[] SQL:}: SELECT `word`,COUNT(1) AS `cnt`,SUM(`n`) AS `total` FROM `words` WHERE `n`>0 GROUP BY `word`"},
	{"create or replace materialized view wc as select * from t from savepoint wc_final",
		"{Name:wc OrReplace:true IfNotExists:false Query:<nil> FromSavepoint:wc_final With:map[] SQL:}: SELECT * FROM `t`"},
	{"create materialized view if not exists wc as select a::text from t with (restart.strategy = 'fixed-delay', restart.attempts = 5)",
		"{Name:wc OrReplace:false IfNotExists:true Query:<nil> FromSavepoint: With:map[restart.attempts:5 restart.strategy:fixed-delay] SQL:}: SELECT PG_CAST(`a`, _UTF8MB4'text') FROM `t`"},
	{"create materialized view wc as select * from t from savepoint sp with (parallelism = 2)",
		"{Name:wc OrReplace:false IfNotExists:false Query:<nil> FromSavepoint:sp With:map[parallelism:2] SQL:}: SELECT * FROM `t`"},
	{"create materialized view wc as select from t",
		"error 42601 at 39: syntax error at or near \"from\""},
	{"create materialized view wc as",
		"error 42601 at 31: syntax error at end of input"},
	{"drop table t",
		"{Kind:table Names:[t] IfExists:false Cascade:false}"},
	{"DROP TABLE IF EXISTS a, b CASCADE",
		"{Kind:table Names:[a b] IfExists:true Cascade:true}"},
	{"drop materialized view wc restrict",
		"{Kind:materialized view Names:[wc] IfExists:false Cascade:false}"},
	{"drop savepoint wc_sp",
		"{Kind:savepoint Names:[wc_sp] IfExists:false Cascade:false}"},
	{"drop table",
		"error 42601 at 11: syntax error at end of input"},
	{"COPY words FROM STDIN (FORMAT csv)",
		"{Table:words Columns:[] Query:<nil> From:true Options:map[format:csv]}"},
	{"copy words (word, n) from stdin with (format CSV, header true, delimiter ',', null '')",
		"{Table:words Columns:[word n] Query:<nil> From:true Options:map[delimiter:, format:csv header:true null:]}"},
	{"copy words from stdin csv header delimiter ';' null 'NULL'",
		"{Table:words Columns:[] Query:<nil> From:true Options:map[delimiter:; format:csv header:true null:NULL]}"},
	{"copy words from stdin with delimiter as '|'",
		"{Table:words Columns:[] Query:<nil> From:true Options:map[delimiter:|]}"},
	{"copy words to stdout (format csv, force_quote *)",
		"{Table:words Columns:[] Query:<nil> From:false Options:map[force_quote:* format:csv]}"},
	{"COPY (SELECT * FROM v EMIT CHANGES) TO STDOUT",
		"{Table: Columns:[] Query:<nil> From:false Options:map[]} emit: SELECT * FROM `v`"},
	{"copy (select a::text from t) to stdout with csv",
		"{Table: Columns:[] Query:<nil> From:false Options:map[format:csv]}: SELECT PG_CAST(`a`, _UTF8MB4'text') FROM `t`"},
	{"copy words from '/tmp/x'",
		"error 0A000 at 17: COPY to or from a file or program is not supported, use STDIN or STDOUT"},
	{"copy words from stdin (format csv, format text)",
		"error 42601 at 36: conflicting or redundant options"},
	{"copy (select 1) from stdin",
		"error 42601 at 17: syntax error at or near \"from\""},
	{"SET checkpoint.interval = '1s'",
		"{Name:checkpoint.interval Value:1s Default:false Local:false}"},
	{"set checkpoint.max_concurrent to 1",
		"{Name:checkpoint.max_concurrent Value:1 Default:false Local:false}"},
	{"SET SESSION extra_float_digits = 3",
		"{Name:extra_float_digits Value:3 Default:false Local:false}"},
	{"set local search_path to \"$user\", public",
		"{Name:search_path Value:$user, public Default:false Local:true}"},
	{"set datestyle = ISO, MDY",
		"{Name:datestyle Value:iso, mdy Default:false Local:false}"},
	{"set application_name to default",
		"{Name:application_name Value: Default:true Local:false}"},
	{"SET TIME ZONE 'UTC'",
		"{Name:timezone Value:UTC Default:false Local:false}"},
	{"set time zone local",
		"{Name:timezone Value: Default:true Local:false}"},
	{"set names 'UTF8'",
		"{Name:client_encoding Value:UTF8 Default:false Local:false}"},
	{"SET SESSION CHARACTERISTICS AS TRANSACTION ISOLATION LEVEL READ COMMITTED",
		"{Name:session_characteristics Value:isolation level read committed Default:false Local:false}"},
	{"set transaction read only",
		"{Name:transaction Value:read only Default:false Local:false}"},
	{"set x = -5",
		"{Name:x Value:-5 Default:false Local:false}"},
	{"set x",
		"error 42601 at 6: syntax error at end of input"},
	{"SHOW checkpoint.interval",
		"{Name:checkpoint.interval}"},
	{"show all",
		"{Name:all}"},
	{"SHOW TABLES",
		"{What:tables}"},
	{"show materialized views",
		"{What:materialized views}"},
	{"show jobs",
		"{What:jobs}"},
	{"show checkpoints",
		"{What:checkpoints}"},
	{"show savepoints",
		"{What:savepoints}"},
	{"show create table t",
		"{Kind:table Name:t}"},
	{"SHOW CREATE MATERIALIZED VIEW wc",
		"{Kind:materialized view Name:wc}"},
	{"SHOW TRANSACTION ISOLATION LEVEL",
		"{Name:transaction_isolation}"},
	{"show time zone",
		"{Name:timezone}"},
	{"show",
		"error 42601 at 5: syntax error at end of input"},
	{"reset checkpoint.interval",
		"{Name:checkpoint.interval}"},
	{"reset all",
		"{Name:all}"},
	{"CHECKPOINT",
		"{}"},
	{"checkpoint now",
		"error 42601 at 12: syntax error at or near \"now\""},
	{"CREATE SAVEPOINT before_upgrade",
		"{Name:before_upgrade Views:[]}"},
	{"create savepoint wc_sp for word_counts, other",
		"{Name:wc_sp Views:[word_counts other]}"},
	{"RESTORE FROM SAVEPOINT before_upgrade",
		"{View: Savepoint:before_upgrade Checkpoint:0}"},
	{"restore word_counts from savepoint wc_sp",
		"{View:word_counts Savepoint:wc_sp Checkpoint:0}"},
	{"restore word_counts from checkpoint 42",
		"{View:word_counts Savepoint: Checkpoint:42}"},
	{"restore word_counts from checkpoint -1",
		"error 42601 at 37: syntax error at or near \"-\""},
	{"STOP JOB word_counts WITH SAVEPOINT wc_final",
		"{View:word_counts Savepoint:wc_final}"},
	{"stop job wc",
		"{View:wc Savepoint:}"},
	{"START JOB word_counts FROM SAVEPOINT wc_final",
		"{View:word_counts Savepoint:wc_final Options:map[]}"},
	{"start job wc",
		"{View:wc Savepoint: Options:map[]}"},
	{"START JOB wc FROM SAVEPOINT sp WITH (parallelism = 4)",
		"{View:wc Savepoint:sp Options:map[parallelism:4]}"},
	{"ALTER MATERIALIZED VIEW word_counts SET (restart.strategy = 'fixed-delay', restart.attempts = 5)",
		"{Name:word_counts Options:map[restart.attempts:5 restart.strategy:fixed-delay]}"},
	{"alter materialized view wc set (a = 1, a = 2)",
		"error 42601 at 40: option \"a\" specified more than once"},
	{"DECLARE c NO SCROLL CURSOR WITH HOLD FOR SELECT * FROM t",
		"declare c: SELECT * FROM `t`"},
	{"declare c cursor for select x::int from t emit changes",
		"declare c emit: SELECT PG_CAST(`x`, _UTF8MB4'integer') FROM `t`"},
	{"declare c binary cursor for select 1",
		"error 0A000 at 11: binary cursors are not supported"},
	{"FETCH FORWARD 5 FROM c",
		"{Cursor:c Count:5}"},
	{"fetch all in c",
		"{Cursor:c Count:-1}"},
	{"fetch next from c",
		"{Cursor:c Count:1}"},
	{"fetch c",
		"{Cursor:c Count:1}"},
	{"fetch forward all c",
		"{Cursor:c Count:-1}"},
	{"fetch 10 c",
		"{Cursor:c Count:10}"},
	{"fetch backward 1 from c",
		"error 0A000 at 7: cursors can only fetch forward"},
	{"close c",
		"{Cursor:c}"},
	{"close all",
		"{Cursor:}"},
	{"discard all",
		"{Deallocate: Name:all}"},
	{"deallocate prepare s1",
		"{Deallocate:s1 Name:}"},
	{"deallocate all",
		"{Deallocate:all Name:}"},
	{"select 1; bogus statement; select 2",
		"error 42601 at 11: syntax error at or near \"bogus\""},
	{"select (1; 2)",
		"error 42601 at 10: syntax error at or near \";\""},
	{"select 1)",
		"error 42601 at 9: syntax error at or near \")\""},
	{"select (1",
		"error 42601 at 10: syntax error at end of input"},
}

// TestGolden runs every input of the golden table through ParseAll.
func TestGolden(t *testing.T) {
	if len(golden) < 80 {
		t.Fatalf("golden table has %d cases, want at least 80", len(golden))
	}
	for _, c := range golden {
		if got := run(c.in); got != c.want {
			t.Errorf("ParseAll(%q)\n got: %q\nwant: %q", c.in, got, c.want)
		}
	}
}

// TestQueryText checks what a Query carries besides its AST: the user's
// text of the statement and the exact text given to TiDB.
func TestQueryText(t *testing.T) {
	cases := []struct{ in, sql, rewritten string }{
		{"  select x::int from t ; ", "select x::int from t", "select pg_cast(x, 'integer') from t"},
		{"select (a+b)::text, cast(c as numeric(10,2))", "select (a+b)::text, cast(c as numeric(10,2))",
			"select pg_cast((a+b), 'text'), pg_cast(c, 'numeric(10,2)')"},
		// CASE ... END is a primary: the cast covers the whole CASE, nested ones too.
		{"select case when a then case b when 1 then 2 end::int end::text, x::int",
			"select case when a then case b when 1 then 2 end::int end::text, x::int",
			"select pg_cast(case when a then pg_cast(case b when 1 then 2 end, 'integer') end, 'text'), pg_cast(x, 'integer')"},
		// PostgreSQL: 'a\b' is a backslash and b; E'c\\d' is c, backslash, d; E'x\qy' is xqy.
		{`select 'a\b', E'c\\d', E'x\qy', $$it's$$`, `select 'a\b', E'c\\d', E'x\qy', $$it's$$`, `select 'a\\b', 'c\\d', 'xqy', 'it''s'`},
		{"select * from v as of savepoint s1 emit changes", "select * from v as of savepoint s1 emit changes",
			"select * from v as of timestamp pg_asof_savepoint('s1')"},
		{"SELECT ts + INTERVAL '5' SECOND FROM \"T\"", "SELECT ts + INTERVAL '5' SECOND FROM \"T\"",
			`select ts + pg_interval('5 second') from "T"`},
		{"select window_start from tumble(bids, ts, interval '10' second) group by 1",
			"select window_start from tumble(bids, ts, interval '10' second) group by 1",
			`select window_start from (select *, tumble_start("ts",pg_interval('10 second')) as window_start, tumble_end("ts",pg_interval('10 second')) as window_end from "bids") as "bids" group by 1`},
		{"select (regexp_match(url, '(&|^)channel_id=([^&]*)'))[2] from bid", "select (regexp_match(url, '(&|^)channel_id=([^&]*)'))[2] from bid",
			"select pg_subscript((regexp_match(url, '(&|^)channel_id=([^&]*)')),2) from bid"},
		// # is PostgreSQL's xor (TiDB's ^), never a comment; a prefix ~ stays.
		{"select a # b, ~a, '#' from t", "select a # b, ~a, '#' from t", "select a ^ b, ~a, '#' from t"},
		// ~~ and its kin are LIKE's operator names, one token each (~~a is no double NOT).
		{"select a ~~ 'x%', a !~~ b, a~~*'X', a !~~* 'y', ~ ~a, a ~ 'r' from t", "select a ~~ 'x%', a !~~ b, a~~*'X', a !~~* 'y', ~ ~a, a ~ 'r' from t",
			"select a like 'x%', a not like b, a ilike'X', a not ilike 'y', ~ ~a, a regexp 'r' from t"},
		// TRIM with a comma, as PostgreSQL's grammar reads it; without one TiDB parses TRIM.
		{"select trim(both from s, 'x'), trim(leading 'x' from s, 'y'), trim(trailing s, f(a, b))::text, trim(both 'x' from s) from t",
			"select trim(both from s, 'x'), trim(leading 'x' from s, 'y'), trim(trailing s, f(a, b))::text, trim(both 'x' from s) from t",
			"select btrim(s,'x'), ltrim(s,'y','x'), pg_cast(rtrim(s,f(a, b)), 'text'), trim(both 'x' from s) from t"},
		// OVERLAY(... PLACING ... FROM ... [FOR ...]) is the call overlay(...); without PLACING it is left alone.
		{"select overlay(s placing 'x' from 2 for n + 1), overlay(b placing c from f(a, b)), overlay(s, t, 1) from t",
			"select overlay(s placing 'x' from 2 for n + 1), overlay(b placing c from f(a, b)), overlay(s, t, 1) from t",
			"select overlay(s,'x',2,n + 1), overlay(b,c,f(a, b)), overlay(s, t, 1) from t"},
		// Named arguments: each name a marker argument before its value.
		{"select make_interval(1, days => 3, secs := 1.5) from t", "select make_interval(1, days => 3, secs := 1.5) from t",
			"select make_interval(1, pg_argname('days'), 3, pg_argname('secs'), 1.5) from t"},
		// ^ is TiDB's DIV (the binder gives it PostgreSQL's level); a column div is quoted.
		{"select 2 ^ 3 ^ -x, div, a operator(pg_catalog.^) 2 from t", "select 2 ^ 3 ^ -x, div, a operator(pg_catalog.^) 2 from t",
			`select 2 div 3 div -x, "div", a div 2 from t`},
		// ^ written without spaces: the div it becomes is never glued to
		// its operands (2^3 once read as 2 AS div3); strings, comments
		// and quoted identifiers keep their ^.
		{`select 2^3, (2^3), 5^2+1, -2^2, 2^3^2, 2*3^2, a^b, x^(y), '2^3', E'2^3' "a^b" from t -- x^y`,
			`select 2^3, (2^3), 5^2+1, -2^2, 2^3^2, 2*3^2, a^b, x^(y), '2^3', E'2^3' "a^b" from t`,
			`select 2 div 3, (2 div 3), 5 div 2+1, -2 div 2, 2 div 3 div 2, 2*3 div 2, a div b, x div(y), '2^3', '2^3' "a^b" from t`},
		{"select a~b, a~~b, a!~*b, 2^/* c */3 from t", "select a~b, a~~b, a!~*b, 2^/* c */3 from t",
			"select a regexp b, a like b, a not regexp '(?i)' ||b, 2 div 3 from t"},
		{"select a operator(pg_catalog.~~) 'x' from t", "select a operator(pg_catalog.~~) 'x' from t", "select a like 'x' from t"},
		{"select regexp_match(url, 'a[b]')[2]::int, a[i + 1], 'x[1]' from t", "select regexp_match(url, 'a[b]')[2]::int, a[i + 1], 'x[1]' from t",
			"select pg_cast(pg_subscript(regexp_match(url, 'a[b]'),2), 'integer'), pg_subscript(a,i + 1), 'x[1]' from t"},
		{`select (information_schema._pg_expandarray(i.indkey)).n, (r.keys)."X", ((r.k).a).b, (r).a.b, (a[1]).f::int from t where (t.r).x = 1`,
			`select (information_schema._pg_expandarray(i.indkey)).n, (r.keys)."X", ((r.k).a).b, (r).a.b, (a[1]).f::int from t where (t.r).x = 1`,
			`select pg_field((information_schema._pg_expandarray(i.indkey)), 'n'), pg_field((r.keys), 'X'), pg_field((pg_field((r.k), 'a')), 'b'), pg_field(pg_field((r), 'a'), 'b'), pg_cast(pg_field((pg_subscript(a,1)), 'f'), 'integer') from t where pg_field((t.r), 'x') = 1`},
		{"select ARRAY(SELECT b.x FROM b WHERE b.k = t.k) as m, array (select 1) from t",
			"select ARRAY(SELECT b.x FROM b WHERE b.k = t.k) as m, array (select 1) from t",
			`select pg_array_subquery((select b.x from b where b.k = t.k)) as "m", pg_array_subquery((select 1)) from t`},
		{"VALUES (1, 'a'), (2, 'b')", "VALUES (1, 'a'), (2, 'b')",
			"select 1 as column1, 'a' as column2 union all select 2, 'b'"},
		{"select * from (values (1)) as t(x), (select 2) u(y, z)", "select * from (values (1)) as t(x), (select 2) u(y, z)",
			"select * from (select 1 as column1) as \"t" + AliasColumnSep + "x\", (select 2) \"u" + AliasColumnSep + "y" + AliasColumnSep + "z\""},
	}
	for _, c := range cases {
		stmts, err := ParseAll(c.in)
		if err != nil {
			t.Fatalf("ParseAll(%q): %v", c.in, err)
		}
		q := stmts[0].(*Query)
		if q.SQL != c.sql || q.Rewritten != c.rewritten {
			t.Errorf("ParseAll(%q):\n SQL %q, want %q\n Rewritten %q, want %q", c.in, q.SQL, c.sql, q.Rewritten, c.rewritten)
		}
	}
}

// TestStatementText checks the SQL kept by CREATE TABLE and CREATE MATERIALIZED VIEW.
func TestStatementText(t *testing.T) {
	const ct = "CREATE TABLE t (a int) WITH (x = 1)"
	const cv = "create materialized view v as select a::text from t from savepoint s"
	stmts, err := ParseAll(" " + ct + "; -- x\n" + cv + " ;")
	if err != nil {
		t.Fatal(err)
	}
	if got := stmts[0].(*CreateTable).SQL; got != ct {
		t.Errorf("CreateTable.SQL = %q, want %q", got, ct)
	}
	v := stmts[1].(*CreateView)
	if v.SQL != cv || v.Query.SQL != "select a::text from t" || v.Query.Rewritten != "select pg_cast(a, 'text') from t" {
		t.Errorf("CreateView: SQL %q, Query.SQL %q, Rewritten %q", v.SQL, v.Query.SQL, v.Query.Rewritten)
	}
}

// TestStringValues checks that string literals reach TiDB with their
// PostgreSQL value: backslashes are ordinary characters in '..', escapes in E'..'.
func TestStringValues(t *testing.T) {
	cases := []struct{ in, want string }{
		{`select 'a\b'`, `a\b`},
		{`select 'it''s'`, `it's`},
		{`select E'a\\b\'c\td'`, "a\\b'c\td"},
		{`select $$x\y 'z'$$`, `x\y 'z'`},
		{`select $q$a$$b$q$`, `a$$b`},
		{`select '\'`, `\`},
	}
	for _, c := range cases {
		stmts, err := ParseAll(c.in)
		if err != nil {
			t.Fatalf("ParseAll(%q): %v", c.in, err)
		}
		sel := stmts[0].(*Query).Node.(*ast.SelectStmt)
		v := sel.Fields.Fields[0].Expr.(ast.ValueExpr)
		if got := v.GetString(); got != c.want {
			t.Errorf("ParseAll(%q): value %q, want %q", c.in, got, c.want)
		}
	}
}

// TestErrorPositionLongStatement maps a TiDB error far into a long
// statement (TiDB cuts its "near" text at 2048 bytes) back to the user's text.
func TestErrorPositionLongStatement(t *testing.T) {
	in := "select " + strings.Repeat("x::int + ", 500) + "1 2" + strings.Repeat(" + 1", 1000)
	_, err := ParseAll(in)
	e, ok := err.(*sqlerr.Error)
	if !ok || e.Code != sqlerr.SyntaxError {
		t.Fatalf("err = %v, want a 42601 *sqlerr.Error", err)
	}
	if want := strings.Index(in, "1 2") + 3; e.Position != want || e.Msg != `syntax error at or near "2"` {
		t.Errorf("error %q at %d, want at %d", e.Msg, e.Position, want)
	}
}

func TestParseTypeName(t *testing.T) {
	cases := []struct{ in, want string }{
		{"bigint", "bigint"}, {"int8", "bigint"}, {"INT", "integer"}, {"int4", "integer"},
		{"smallint", "smallint"}, {"bool", "boolean"}, {"float4", "real"}, {"float", "double precision"},
		{"float(10)", "real"}, {"double precision", "double precision"}, {"DOUBLE", "double precision"}, {"numeric", "numeric"},
		{"numeric(10,2)", "numeric(10,2)"}, {"decimal(5)", "numeric(5,0)"}, {"varchar", "text"},
		{"varchar(5)", "character varying(5)"}, {"character varying(7)", "character varying(7)"},
		{"char(3)", "character(3)"}, {"character", "character(1)"}, {"bpchar(2)", "character(2)"},
		{"timestamp without time zone", "timestamp without time zone"}, {"timestamptz", "timestamp with time zone"},
		{"timestamp(3) with time zone", "timestamp with time zone"}, {"date", "date"}, {"interval", "interval"},
	}
	for _, c := range cases {
		typ, err := ParseTypeName(c.in)
		if err != nil || typ.String() != c.want {
			t.Errorf("ParseTypeName(%q) = %v, %v; want %s", c.in, typ, err, c.want)
		}
		// The normalized name parses back to the same type, as pg_cast needs.
		if again, err := ParseTypeName(typ.String()); err != nil || again != typ {
			t.Errorf("ParseTypeName(%q) = %v, %v; want %v", typ.String(), again, err, typ)
		}
	}
	for _, c := range []struct{ in, code string }{
		{"foo", sqlerr.UndefinedObject}, {"int(3)", sqlerr.SyntaxError}, {"numeric(2,5)", sqlerr.InvalidParameterValue},
		{"double(5)", sqlerr.SyntaxError}, {"bigint x", sqlerr.SyntaxError}, {"", sqlerr.SyntaxError},
	} {
		if _, err := ParseTypeName(c.in); sqlerr.Code(err) != c.code {
			t.Errorf("ParseTypeName(%q): error %v (%s), want %s", c.in, err, sqlerr.Code(err), c.code)
		}
	}
	if _, err := TypeFromName("nosuchtype", nil); err == nil || err.Error() != `type "nosuchtype" does not exist` {
		t.Errorf("TypeFromName(nosuchtype) error = %v", err)
	}
}

func TestIntervalMicros(t *testing.T) {
	cases := []struct {
		in   string
		want int64
		ok   bool
	}{
		{"5 second", 5e6, true}, {"5 seconds", 5e6, true}, {"1 minute 30 seconds", 90e6, true},
		{"500 millisecond", 5e5, true}, {"2h", 7200e6, true}, {"1.5 s", 15e5, true},
		{"00:00:05", 5e6, true}, {"01:02", 3720e6, true}, {"1 day", 86400e6, true},
		{"1 month", 0, false}, {"", 0, false}, {"five seconds", 0, false}, {"5", 0, false},
		{"1e300 days", 0, false}, {fmt.Sprint(math.MaxInt64) + " weeks", 0, false},
	}
	for _, c := range cases {
		got, ok := intervalMicros(c.in)
		if got != c.want || ok != c.ok {
			t.Errorf("intervalMicros(%q) = %d, %v; want %d, %v", c.in, got, ok, c.want, c.ok)
		}
	}
}

// FuzzParseAll checks that ParseAll never panics and that every error it
// returns is a positioned *sqlerr.Error.
func FuzzParseAll(f *testing.F) {
	for _, c := range golden {
		f.Add(c.in)
	}
	f.Add("select x::numeric(10,2)::text, cast(a as int), interval '1' day from t emit changes")
	f.Add("create table t (ts timestamp, watermark for ts as ts - interval 5 second) with (a = 'b')")
	f.Fuzz(func(t *testing.T, sql string) {
		_, err := ParseAll(sql)
		if err == nil {
			return
		}
		e, ok := err.(*sqlerr.Error)
		if !ok {
			t.Fatalf("ParseAll(%q): error %T %v is not a *sqlerr.Error", sql, err, err)
		}
		if e.Code == sqlerr.SyntaxError && (e.Position < 1 || e.Position > len(sql)+1) {
			t.Fatalf("ParseAll(%q): position %d out of range", sql, e.Position)
		}
	})
}

// BenchmarkParseAllInsert parses a bulk INSERT with casts in every row.
func BenchmarkParseAllInsert(b *testing.B) {
	var sb strings.Builder
	sb.WriteString("INSERT INTO t VALUES ")
	for i := 0; i < 10000; i++ {
		if i > 0 {
			sb.WriteString(", ")
		}
		fmt.Fprintf(&sb, "(%d, 'row %d', '2026-01-01 00:00:%02d'::timestamp)", i, i, i%60)
	}
	sql := sb.String()
	b.SetBytes(int64(len(sql)))
	for b.Loop() {
		if _, err := ParseAll(sql); err != nil {
			b.Fatal(err)
		}
	}
}

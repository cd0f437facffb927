// Package sqllogic is streamdb's end-to-end test harness: a sqllogictest
// runner that talks to a real server over the PostgreSQL wire protocol (pgx),
// and helpers that build, start, kill and restart the streamdb binary, with
// the in-process services and query helpers that tests/crash and
// tests/cluster share (kafka.go, fakes3.go, etcd.go, rows.go, metrics.go,
// psql.go).
//
// # File format
//
// A test file is a sequence of records separated by blank lines; lines that
// start with '#' between records are comments. The format follows
// CockroachDB's logictest:
//
//	statement ok
//	CREATE TABLE t (a INT, b TEXT)
//
//	statement count 2
//	INSERT INTO t VALUES (1, 'x'), (2, NULL)
//
//	statement error 42P01
//	SELECT * FROM nope
//
//	statement error relation "nope" does not exist
//	SELECT * FROM nope
//
//	query IT rowsort
//	SELECT a, b FROM t
//	----
//	1 x
//	2 NULL
//
//	query error 22012
//	SELECT 1 / 0
//
//	halt
//
// After `error`, text that is exactly five characters of [0-9A-Z] is a
// SQLSTATE; a SQLSTATE followed by more text checks the code and matches the
// rest as a regular expression on the message; anything else is only the
// regular expression; nothing at all accepts any error. `statement count N`
// checks the number of rows the statement affected.
//
// A query header is `query <types> [nosort|rowsort|valuesort] [colnames]
// [retry[=DURATION]] [label]`. Types has one letter per column: T text (any
// value), I integer, R real or numeric, B boolean; the runner checks the
// column count and that each value fits its letter. Values are rendered in
// PostgreSQL's text format and separated by a single space; NULL prints as
// NULL and the empty string as (empty). rowsort compares the rows as a set,
// valuesort puts every value on its own line and compares them as a set,
// colnames puts the column names on the first expected line, and retry re-runs
// the query until it matches or the timeout (default 10s) passes, for results
// that converge asynchronously such as streaming views. Queries that share a
// label must return the same results. A result with more than HashThreshold
// values may be written as "N values hashing to <md5>".
//
// Directives: `mode simple` / `mode extended` switch the protocol pgx uses
// from there on (extended is the default; both read results in text format),
// `restart` stops the server gracefully and starts it again on the same data,
// `crash` does the same with kill -9, and `halt` ends the file.
//
// With Runner.Rewrite set (the -rewrite test flag), expected results and
// expected SQLSTATEs are replaced in place by what the server returned.
//
// # Running
//
//	go test ./tests/sqllogic/                          # every testdata/*.slt, one fresh streamdb per file
//	go test ./tests/sqllogic/ -run 'TestSQLLogic/joins' # one file
//	go test ./tests/sqllogic/ -rewrite                 # regenerate expected results
//
// Expected results must come from an independent oracle. Files whose first
// line contains "# pg-compatible" are valid PostgreSQL; their results are
// generated and checked against a real PostgreSQL 15:
//
//	STREAMDB_TEST_ADDR=127.0.0.1:55432 go test ./tests/sqllogic/ -rewrite -log-errors -v
//
// (a role and database named streamdb must exist there). With
// STREAMDB_TEST_ADDR set, TestSQLLogic and TestPsql use that server instead
// of starting streamdb, give every file its own schema, and skip files not
// marked pg-compatible unless STREAMDB_TEST_ALL is set. The other files use
// streamdb-only statements; their results are derived by hand. Files under
// testdata/pending/ wait for features not built yet and are not run.
// STREAMDB_BIN names a prebuilt binary to use instead of building one.
package sqllogic

import (
	"bytes"
	"context"
	"crypto/md5"
	"errors"
	"fmt"
	"os"
	"regexp"
	"slices"
	"strconv"
	"strings"
	"testing"
	"time"
	"unicode"

	"github.com/jackc/pgx/v5"
	"github.com/jackc/pgx/v5/pgconn"
)

// HashThreshold is the number of values above which rewrite records a query
// result as a hash rather than in full.
const HashThreshold = 1000

// DefaultRetryTimeout bounds a `retry` query without an explicit duration.
const DefaultRetryTimeout = 10 * time.Second

// Kind is the type of a record.
type Kind int

// Record kinds.
const (
	KindStatement Kind = iota
	KindQuery
	KindHalt
	KindMode
	KindRestart
	KindCrash
)

// SortMode says how query results are ordered before comparison.
type SortMode int

// Sort modes.
const (
	NoSort SortMode = iota
	RowSort
	ValueSort
)

// Record is one parsed record of a test file.
type Record struct {
	Kind Kind
	Line int    // 1-based line of the record's header
	SQL  string // statement or query text

	// Statement and query errors.
	ExpectError bool
	ErrCode     string         // expected SQLSTATE, "" for any
	ErrRegexp   *regexp.Regexp // expected message pattern, nil for any
	Count       int64          // `statement count N`; -1 if unchecked

	// Queries.
	Types    string
	Sort     SortMode
	ColNames bool
	Retry    time.Duration // 0: no retry
	Label    string
	Expected []string // expected result lines (after ----)
	HasSep   bool     // the record has a ---- line (rewrite adds a missing one)

	Mode string // KindMode: "simple" or "extended"

	// Line indexes (0-based) used by rewrite: the header, the end of the SQL
	// text, and the end of the record (exclusive).
	headerIdx, sqlEnd, end int
}

// File is a parsed test file.
type File struct {
	Path    string
	Lines   []string // the file's lines, without line terminators
	Records []*Record
}

var (
	sqlstateRe = regexp.MustCompile(`^[0-9A-Z]{5}$`)
	hashLineRe = regexp.MustCompile(`^(\d+) values hashing to ([0-9a-f]{32})$`)
)

// ParseFile reads and parses a test file.
func ParseFile(path string) (*File, error) {
	src, err := os.ReadFile(path)
	if err != nil {
		return nil, err
	}
	return Parse(path, src)
}

// Parse parses the text of a test file; name is used in error messages.
func Parse(name string, src []byte) (*File, error) {
	text := strings.ReplaceAll(string(src), "\r\n", "\n")
	text = strings.TrimSuffix(text, "\n")
	f := &File{Path: name}
	if text != "" {
		f.Lines = strings.Split(text, "\n")
	}
	lines := f.Lines
	i := 0
	for i < len(lines) {
		line := strings.TrimSpace(lines[i])
		if line == "" || strings.HasPrefix(line, "#") {
			i++
			continue
		}
		rec, next, err := parseRecord(lines, i)
		if err != nil {
			return nil, fmt.Errorf("%s:%d: %w", name, i+1, err)
		}
		f.Records = append(f.Records, rec)
		i = next
	}
	return f, nil
}

// parseRecord parses the record whose header is lines[i] and returns it with
// the index of the first line after it.
func parseRecord(lines []string, i int) (*Record, int, error) {
	header := strings.TrimSpace(lines[i])
	fields := strings.Fields(header)
	rec := &Record{Line: i + 1, headerIdx: i, Count: -1}
	// The record's body runs to the next blank line.
	end := i + 1
	for end < len(lines) && strings.TrimSpace(lines[end]) != "" {
		end++
	}
	body := lines[i+1 : end]
	rec.end = end

	switch fields[0] {
	case "halt", "restart", "crash":
		if len(fields) != 1 || len(body) != 0 {
			return nil, 0, fmt.Errorf("%q takes no arguments and no body", fields[0])
		}
		rec.Kind = map[string]Kind{"halt": KindHalt, "restart": KindRestart, "crash": KindCrash}[fields[0]]
		return rec, end, nil

	case "mode":
		if len(fields) != 2 || (fields[1] != "simple" && fields[1] != "extended") || len(body) != 0 {
			return nil, 0, fmt.Errorf("want `mode simple` or `mode extended`")
		}
		rec.Kind, rec.Mode = KindMode, fields[1]
		return rec, end, nil

	case "statement":
		rec.Kind = KindStatement
		if len(fields) < 2 {
			return nil, 0, fmt.Errorf("statement needs ok, count or error")
		}
		switch fields[1] {
		case "ok":
			if len(fields) != 2 {
				return nil, 0, fmt.Errorf("unexpected text after `statement ok`")
			}
		case "count":
			if len(fields) != 3 {
				return nil, 0, fmt.Errorf("want `statement count N`")
			}
			n, err := strconv.ParseInt(fields[2], 10, 64)
			if err != nil || n < 0 {
				return nil, 0, fmt.Errorf("bad row count %q", fields[2])
			}
			rec.Count = n
		case "error":
			if err := rec.parseErrorSpec(header, "statement"); err != nil {
				return nil, 0, err
			}
		default:
			return nil, 0, fmt.Errorf("unknown statement kind %q", fields[1])
		}
		rec.SQL = strings.Join(body, "\n")
		rec.sqlEnd = end

	case "query":
		rec.Kind = KindQuery
		if len(fields) < 2 {
			return nil, 0, fmt.Errorf("query needs a type string or error")
		}
		if fields[1] == "error" {
			if err := rec.parseErrorSpec(header, "query"); err != nil {
				return nil, 0, err
			}
			rec.SQL = strings.Join(body, "\n")
			rec.sqlEnd = end
			break
		}
		if err := rec.parseQueryOptions(fields[1:]); err != nil {
			return nil, 0, err
		}
		sep := slices.Index(body, "----")
		if sep < 0 {
			rec.SQL = strings.Join(body, "\n")
			rec.sqlEnd = end
			break
		}
		rec.SQL = strings.Join(body[:sep], "\n")
		rec.sqlEnd = i + 1 + sep
		rec.HasSep = true
		rec.Expected = slices.Clone(body[sep+1:])

	default:
		return nil, 0, fmt.Errorf("unknown record type %q", fields[0])
	}
	if strings.TrimSpace(rec.SQL) == "" {
		return nil, 0, fmt.Errorf("record has no SQL")
	}
	return rec, end, nil
}

// parseErrorSpec reads what follows "<what> error" in header.
func (rec *Record) parseErrorSpec(header, what string) error {
	rest := strings.TrimSpace(strings.TrimPrefix(header, what))
	rest = strings.TrimSpace(strings.TrimPrefix(rest, "error"))
	rec.ExpectError = true
	if rest == "" {
		return nil
	}
	code, msg, _ := strings.Cut(rest, " ")
	if sqlstateRe.MatchString(code) {
		rec.ErrCode = code
		rest = strings.TrimSpace(msg)
		if rest == "" {
			return nil
		}
	}
	re, err := regexp.Compile(rest)
	if err != nil {
		return fmt.Errorf("bad error pattern: %w", err)
	}
	rec.ErrRegexp = re
	return nil
}

func (rec *Record) parseQueryOptions(fields []string) error {
	rec.Types = fields[0]
	for _, c := range rec.Types {
		if !strings.ContainsRune("TIRB", c) {
			return fmt.Errorf("bad column type %q in %q (want T, I, R or B)", c, rec.Types)
		}
	}
	for _, opt := range fields[1:] {
		switch {
		case opt == "nosort":
			rec.Sort = NoSort
		case opt == "rowsort":
			rec.Sort = RowSort
		case opt == "valuesort":
			rec.Sort = ValueSort
		case opt == "colnames":
			rec.ColNames = true
		case opt == "retry":
			rec.Retry = DefaultRetryTimeout
		case strings.HasPrefix(opt, "retry="):
			d, err := time.ParseDuration(strings.TrimPrefix(opt, "retry="))
			if err != nil || d <= 0 {
				return fmt.Errorf("bad retry duration in %q", opt)
			}
			rec.Retry = d
		default:
			if rec.Label != "" {
				return fmt.Errorf("unknown query option %q", opt)
			}
			rec.Label = opt
		}
	}
	return nil
}

// Render formats a query result the way expected results are written:
// column names first if colnames is set, then rows (one line per row, values
// separated by a space), or with valuesort one value per line; rowsort and
// valuesort sort the lines. Results with more than HashThreshold values are
// reduced to a hash line when hashLarge is set.
func Render(rec *Record, colNames []string, rows [][]string, hashLarge bool) []string {
	var out []string
	nvalues := 0
	if rec.Sort == ValueSort {
		for _, row := range rows {
			out = append(out, row...)
			nvalues += len(row)
		}
	} else {
		for _, row := range rows {
			out = append(out, strings.Join(row, " "))
			nvalues += len(row)
		}
	}
	out = trimAll(out) // editors drop trailing spaces from expected lines
	if rec.Sort != NoSort {
		slices.Sort(out)
	}
	if hashLarge && nvalues > HashThreshold {
		out = []string{hashLine(nvalues, out)}
	}
	if rec.ColNames {
		out = append([]string{strings.Join(colNames, " ")}, out...)
	}
	return out
}

func hashLine(nvalues int, lines []string) string {
	return fmt.Sprintf("%d values hashing to %s", nvalues, hashOf(lines))
}

// hashOf is the md5 of the lines, each terminated by a newline; the value
// count in a hash line is informational and not compared.
func hashOf(lines []string) string {
	h := md5.New()
	for _, l := range lines {
		h.Write([]byte(l))
		h.Write([]byte{'\n'})
	}
	return fmt.Sprintf("%x", h.Sum(nil))
}

// Matches reports whether actual (as rendered by Render without hashing)
// equals the expected lines, ignoring trailing spaces, the order of lines
// under rowsort and valuesort, and accepting a hash line for large results.
func Matches(rec *Record, expected, actual []string) bool {
	exp := trimAll(expected)
	act := trimAll(actual)
	if rec.ColNames {
		if len(exp) == 0 || len(act) == 0 || exp[0] != act[0] {
			return false
		}
		exp, act = exp[1:], act[1:]
	}
	if len(exp) == 1 {
		if m := hashLineRe.FindStringSubmatch(exp[0]); m != nil {
			return hashOf(act) == m[2]
		}
	}
	if rec.Sort != NoSort {
		exp = slices.Clone(exp)
		slices.Sort(exp)
	}
	return slices.Equal(exp, act)
}

func trimAll(lines []string) []string {
	out := make([]string, len(lines))
	for i, l := range lines {
		out[i] = strings.TrimRight(l, " \t")
	}
	return out
}

// FormatValue renders one text-format value: NULL, (empty) for the empty
// string, and a Go-quoted string for values with leading or trailing spaces
// or control characters, so every value stays visible and on one line.
func FormatValue(v []byte) string {
	switch {
	case v == nil:
		return "NULL"
	case len(v) == 0:
		return "(empty)"
	}
	s := string(v)
	if strings.TrimSpace(s) != s || strings.ContainsFunc(s, unicode.IsControl) {
		return strconv.Quote(s)
	}
	return s
}

var (
	intValueRe  = regexp.MustCompile(`^-?[0-9]+$`)
	realValueRe = regexp.MustCompile(`^(-?[0-9]+(\.[0-9]*)?([eE][-+]?[0-9]+)?|-?Infinity|NaN)$`)
)

// checkTypes reports the first value that does not fit its column's type
// letter.
func checkTypes(types string, colNames []string, rows [][]string) error {
	if len(colNames) != len(types) {
		return fmt.Errorf("query returned %d columns %q, type string %q has %d", len(colNames), colNames, types, len(types))
	}
	for r, row := range rows {
		for c, v := range row {
			if v == "NULL" {
				continue
			}
			ok := true
			switch types[c] {
			case 'I':
				ok = intValueRe.MatchString(v)
			case 'R':
				ok = realValueRe.MatchString(v)
			case 'B':
				ok = v == "t" || v == "f"
			}
			if !ok {
				return fmt.Errorf("row %d column %d (%s): value %q is not of type %c", r+1, c+1, colNames[c], v, types[c])
			}
		}
	}
	return nil
}

// Runner executes test files against a server.
type Runner struct {
	// Connect opens a new connection to the server under test.
	Connect func(ctx context.Context) (*pgx.Conn, error)
	// Restart restarts the server on the same data (crash: with kill -9).
	// Nil makes `restart` and `crash` records fail.
	Restart func(t testing.TB, crash bool)
	// Rewrite replaces expected results in the file with actual ones.
	Rewrite bool
	// LogErrors logs every expected error the server returned, to review
	// SQLSTATEs and messages by eye.
	LogErrors bool
	// StatementTimeout bounds each statement or query attempt (default 60s).
	StatementTimeout time.Duration
}

// result is what one execution of a record's SQL returned.
type result struct {
	colNames []string
	rows     [][]string
	tag      pgconn.CommandTag
	err      error
}

// fileRun is the state of one file's execution.
type fileRun struct {
	r       *Runner
	t       *testing.T
	f       *File
	conn    *pgx.Conn
	simple  bool
	labels  map[string][]string // label -> rendered result
	rewrite map[*Record][]string
	codes   map[*Record]string // rewritten SQLSTATEs
}

// RunFile runs every record of the file at path as part of t; failures are
// reported with the file and line of the record. With Rewrite set, the file
// is rewritten afterwards if every record could be executed.
func (r *Runner) RunFile(t *testing.T, path string) {
	t.Helper()
	f, err := ParseFile(path)
	if err != nil {
		t.Fatal(err)
	}
	fr := &fileRun{r: r, t: t, f: f, labels: map[string][]string{},
		rewrite: map[*Record][]string{}, codes: map[*Record]string{}}
	fr.connect()
	defer func() { fr.conn.Close(context.Background()) }()
	for _, rec := range f.Records {
		if rec.Kind == KindHalt {
			break
		}
		if !fr.run(rec) {
			break // the connection is gone; later records cannot run
		}
	}
	if r.Rewrite && !t.Failed() {
		if err := os.WriteFile(path, []byte(fr.rewritten()), 0o644); err != nil {
			t.Fatal(err)
		}
	}
}

func (fr *fileRun) connect() {
	ctx, cancel := context.WithTimeout(context.Background(), 30*time.Second)
	defer cancel()
	conn, err := fr.r.Connect(ctx)
	if err != nil {
		fr.t.Fatalf("%s: connect: %v", fr.f.Path, err)
	}
	fr.conn = conn
}

func (fr *fileRun) errorf(rec *Record, format string, args ...any) {
	fr.t.Helper()
	fr.t.Errorf("%s:%d: %s\n%s", fr.f.Path, rec.Line, fmt.Sprintf(format, args...), indent(rec.SQL))
}

func indent(s string) string {
	return "    " + strings.ReplaceAll(s, "\n", "\n    ")
}

// run executes one record and reports whether the file can go on.
func (fr *fileRun) run(rec *Record) bool {
	fr.t.Helper()
	switch rec.Kind {
	case KindMode:
		fr.simple = rec.Mode == "simple"
		return true
	case KindRestart, KindCrash:
		if fr.r.Restart == nil {
			fr.errorf(rec, "this server cannot be restarted by the runner")
			return false
		}
		fr.conn.Close(context.Background())
		fr.r.Restart(fr.t, rec.Kind == KindCrash)
		fr.connect()
		return true
	case KindStatement:
		res := fr.exec(rec)
		if !fr.checkError(rec, res) {
			return !fr.conn.IsClosed()
		}
		if !rec.ExpectError && rec.Count >= 0 && res.tag.RowsAffected() != rec.Count {
			fr.errorf(rec, "statement affected %d rows (tag %q), want %d", res.tag.RowsAffected(), res.tag.String(), rec.Count)
		}
		return true
	case KindQuery:
		if rec.ExpectError {
			res := fr.exec(rec)
			fr.checkError(rec, res)
			return !fr.conn.IsClosed()
		}
		return fr.runQuery(rec)
	}
	panic("unreachable")
}

// checkError compares a statement's outcome with the record's error
// expectation; it reports whether the outcome was as expected (rewriting the
// expected SQLSTATE when allowed).
func (fr *fileRun) checkError(rec *Record, res result) bool {
	fr.t.Helper()
	var pgErr *pgconn.PgError
	isPg := errors.As(res.err, &pgErr)
	switch {
	case res.err == nil && !rec.ExpectError:
		return true
	case res.err == nil:
		fr.errorf(rec, "expected error %s, statement succeeded", describeErr(rec))
		return false
	case !isPg:
		fr.errorf(rec, "connection error: %v", res.err)
		return false
	case !rec.ExpectError:
		fr.errorf(rec, "unexpected error: %s", formatPgErr(pgErr))
		return false
	}
	codeOK := rec.ErrCode == "" || rec.ErrCode == pgErr.Code
	msgOK := rec.ErrRegexp == nil || rec.ErrRegexp.MatchString(pgErr.Message)
	if codeOK && msgOK {
		if fr.r.LogErrors {
			fr.t.Logf("%s:%d: expected error %s", fr.f.Path, rec.Line, formatPgErr(pgErr))
		}
		return true
	}
	if fr.r.Rewrite && !codeOK && msgOK {
		fr.codes[rec] = pgErr.Code
		fr.t.Logf("%s:%d: rewriting expected SQLSTATE %s -> %s (%s)", fr.f.Path, rec.Line, rec.ErrCode, pgErr.Code, pgErr.Message)
		return true
	}
	fr.errorf(rec, "expected error %s, got %s", describeErr(rec), formatPgErr(pgErr))
	return false
}

func describeErr(rec *Record) string {
	s := rec.ErrCode
	if rec.ErrRegexp != nil {
		s = strings.TrimSpace(s + " matching " + strconv.Quote(rec.ErrRegexp.String()))
	}
	if s == "" {
		s = "(any)"
	}
	return s
}

func formatPgErr(e *pgconn.PgError) string {
	return fmt.Sprintf("%s: %s", e.Code, e.Message)
}

// runQuery runs a query record, retrying if asked, and compares the results.
func (fr *fileRun) runQuery(rec *Record) bool {
	fr.t.Helper()
	deadline := time.Now().Add(rec.Retry)
	backoff := 10 * time.Millisecond
	for {
		res := fr.exec(rec)
		if res.err != nil {
			var pgErr *pgconn.PgError
			retryable := errors.As(res.err, &pgErr) && rec.Retry > 0 && time.Now().Before(deadline)
			if !retryable {
				fr.checkError(rec, res)
				return !fr.conn.IsClosed()
			}
		} else {
			if err := checkTypes(rec.Types, res.colNames, res.rows); err != nil {
				fr.errorf(rec, "%v", err)
				return true
			}
			actual := Render(rec, res.colNames, res.rows, false)
			if Matches(rec, rec.Expected, actual) {
				if fr.r.Rewrite && !rec.HasSep {
					fr.rewrite[rec] = Render(rec, res.colNames, res.rows, true)
				}
				fr.checkLabel(rec, actual)
				return true
			}
			if rec.Retry == 0 || !time.Now().Before(deadline) {
				if fr.r.Rewrite {
					fr.rewrite[rec] = Render(rec, res.colNames, res.rows, true)
				} else {
					fr.errorf(rec, "results differ%s\nexpected:\n%s\nactual:\n%s", retryNote(rec),
						indent(strings.Join(rec.Expected, "\n")), indent(strings.Join(actual, "\n")))
				}
				fr.checkLabel(rec, actual)
				return true
			}
		}
		time.Sleep(backoff)
		backoff = min(2*backoff, 250*time.Millisecond)
	}
}

func retryNote(rec *Record) string {
	if rec.Retry == 0 {
		return ""
	}
	return fmt.Sprintf(" after retrying for %v", rec.Retry)
}

func (fr *fileRun) checkLabel(rec *Record, actual []string) {
	fr.t.Helper()
	if rec.Label == "" {
		return
	}
	body := actual
	if rec.ColNames && len(body) > 0 {
		body = body[1:]
	}
	if prev, ok := fr.labels[rec.Label]; ok {
		if !slices.Equal(prev, body) {
			fr.errorf(rec, "results differ from the earlier query labelled %q\nearlier:\n%s\nthis one:\n%s",
				rec.Label, indent(strings.Join(prev, "\n")), indent(strings.Join(body, "\n")))
		}
		return
	}
	fr.labels[rec.Label] = body
}

// exec runs the record's SQL and reads every value in text format.
func (fr *fileRun) exec(rec *Record) result {
	timeout := fr.r.StatementTimeout
	if timeout == 0 {
		timeout = 60 * time.Second
	}
	ctx, cancel := context.WithTimeout(context.Background(), timeout)
	defer cancel()
	pc := fr.conn.PgConn()
	if fr.simple {
		// Several statements may share a record; the last result counts.
		results, err := pc.Exec(ctx, rec.SQL).ReadAll()
		if err != nil {
			return result{err: err}
		}
		var res result
		for _, r := range results {
			res = result{tag: r.CommandTag, rows: textRows(r.Rows), colNames: fieldNames(r.FieldDescriptions)}
		}
		return res
	}
	rr := pc.ExecParams(ctx, rec.SQL, nil, nil, nil, nil)
	var res result
	for rr.NextRow() {
		res.rows = append(res.rows, textRow(rr.Values()))
	}
	res.colNames = fieldNames(rr.FieldDescriptions())
	res.tag, res.err = rr.Close()
	return res
}

func fieldNames(fds []pgconn.FieldDescription) []string {
	names := make([]string, len(fds))
	for i, fd := range fds {
		names[i] = fd.Name
	}
	return names
}

func textRows(rows [][][]byte) [][]string {
	out := make([][]string, len(rows))
	for i, r := range rows {
		out[i] = textRow(r)
	}
	return out
}

func textRow(values [][]byte) []string {
	row := make([]string, len(values))
	for i, v := range values {
		row[i] = FormatValue(v)
	}
	return row
}

// rewritten returns the file's text with new results and SQLSTATEs spliced in.
func (fr *fileRun) rewritten() string {
	var b bytes.Buffer
	lines := fr.f.Lines
	next := 0 // next line of the original to copy
	for _, rec := range fr.f.Records {
		newRows, hasRows := fr.rewrite[rec]
		code, hasCode := fr.codes[rec]
		if !hasRows && !hasCode {
			continue
		}
		for ; next < rec.headerIdx; next++ {
			b.WriteString(lines[next] + "\n")
		}
		header := lines[rec.headerIdx]
		if hasCode {
			if rec.ErrCode != "" {
				header = strings.Replace(header, " "+rec.ErrCode, " "+code, 1)
			} else {
				header = strings.TrimRight(header, " ") + " " + code
			}
		}
		b.WriteString(header + "\n")
		next = rec.headerIdx + 1
		if !hasRows {
			continue
		}
		for ; next < rec.sqlEnd; next++ {
			b.WriteString(lines[next] + "\n")
		}
		b.WriteString("----\n")
		for _, l := range newRows {
			b.WriteString(l + "\n")
		}
		next = rec.end
	}
	for ; next < len(lines); next++ {
		b.WriteString(lines[next] + "\n")
	}
	return b.String()
}

package sql

import (
	"bytes"
	"context"
	"fmt"
	"math"
	"strconv"
	"strings"

	"github.com/apache/arrow-go/v18/arrow"
	"github.com/apache/arrow-go/v18/arrow/array"
	"github.com/streamdb/streamdb/exec"
	"github.com/streamdb/streamdb/exec/batch"
	"github.com/streamdb/streamdb/exec/expr"
	"github.com/streamdb/streamdb/exec/plan"
	"github.com/streamdb/streamdb/planner"
	"github.com/streamdb/streamdb/sql/parse"
	"github.com/streamdb/streamdb/sqlerr"
	"github.com/streamdb/streamdb/storage"
	"github.com/streamdb/streamdb/types"
)

// insert runs src (rows in the target's column order and types) and appends
// them to the stream's log as one atomic, durable write.
// The rows collected count against a budget of workMem bytes (<= 0: none).
// Inside a transaction (tx not nil) the rows are buffered in it instead.
func (e *Engine) insert(ctx context.Context, t *storage.TableDef, src planner.Node, ectx *expr.Ctx, workMem int64, tx *txn, seen func(arrow.RecordBatch) error) (int64, error) {
	phys, err := planner.Physical(src, e)
	if err != nil {
		return 0, err
	}
	var recs []arrow.RecordBatch
	defer func() {
		for _, r := range recs {
			r.Release()
		}
	}()
	budget := plan.NewBudget(workMem, e.queryMem)
	defer budget.Close()
	ectx.Mem = budget.Allocator()
	var n int64
	snap, release, err := e.readSnapshot(ctx, phys)
	if err != nil {
		return 0, err
	}
	defer release()
	err = batch.Run(&plan.Ctx{Context: ctx, DB: e.db, Expr: ectx, Mem: budget, Snap: snap}, phys, func(r arrow.RecordBatch) error {
		if err := checkNotNull(t, r, 0); err != nil {
			r.Release()
			return err
		}
		n += r.NumRows()
		recs = append(recs, r)
		return seen(r)
	})
	if err != nil {
		return 0, err
	}
	if tx != nil {
		return n, tx.addRecs(e.db, t, recs)
	}
	if err := e.appendRows(t, recs); err != nil {
		return 0, err
	}
	return n, nil
}

func (e *Engine) appendRows(t *storage.TableDef, recs []arrow.RecordBatch) error {
	if len(recs) == 0 {
		return nil
	}
	part, err := e.appendPartition(t)
	if err != nil {
		return err
	}
	if e.streamLog != nil && logTopic(t) != "" {
		return produceRows(e, t, recs) // cluster mode: the shared log
	}
	_, err = e.db.Log().Append(t.ID, part, recs)
	return err
}

// appendPartition checks that t is still a stream and picks the partition
// an append goes to.
func (e *Engine) appendPartition(t *storage.TableDef) (uint32, error) {
	if cur, ok := e.Table(t.Name); !ok || cur.ID != t.ID {
		return 0, sqlerr.New(sqlerr.UndefinedTable, "relation %q does not exist", t.Name)
	} else if cur.Kind != storage.KindStream {
		return 0, sqlerr.New(sqlerr.WrongObjectType, "cannot insert into %q: it is not a table", t.Name)
	}
	return e.rr.Add(1) % uint32(max(1, t.Partitions)), nil
}

// copyOutQuery is the query COPY TO runs (its own, or SELECT * FROM the
// table), its options checked; it marks st as a COPY TO.
func copyOutQuery(st *Stmt, n *parse.Copy, opts copyOpts) (*parse.Query, error) {
	q := n.Query
	if q == nil {
		stmts, err := parse.ParseAll("SELECT * FROM " + quoteIdent(n.Table))
		if err != nil {
			return nil, err
		}
		q = stmts[0].(*parse.Query)
	}
	if opts.headerMatch {
		return nil, sqlerr.New(sqlerr.FeatureNotSupported, `cannot use "match" with HEADER in COPY TO`)
	}
	if opts.csv {
		return nil, sqlerr.New(sqlerr.FeatureNotSupported, "COPY TO supports the text and binary formats only")
	}
	if opts.header {
		return nil, sqlerr.New(sqlerr.FeatureNotSupported, "COPY TO does not support HEADER")
	}
	st.CopyOut, st.CopyBinary = true, opts.binary
	return q, nil
}

func checkNotNull(t *storage.TableDef, r arrow.RecordBatch, line int) error {
	for c, col := range t.Columns {
		if col.NotNull && r.Column(c).NullN() > 0 {
			return &sqlerr.Error{Code: sqlerr.NotNullViolation,
				Msg: fmt.Sprintf("null value in column %q of relation %q violates not-null constraint", col.Name, t.Name)}
		}
	}
	return nil
}

func (s *Session) execCopy(ctx context.Context, st *Stmt, n *parse.Copy) (*Result, error) {
	opts, err := copyOptions(n.Options)
	if err != nil {
		return nil, err
	}
	if !n.From {
		q, err := copyOutQuery(st, n, opts)
		if err != nil {
			return nil, err
		}
		return s.execQuery(ctx, st, q, nil)
	}
	t, ok := s.e.Table(n.Table)
	if !ok || t.Kind != storage.KindStream {
		if ok {
			return nil, sqlerr.New(sqlerr.WrongObjectType, "cannot copy to %s %q: only tables (streams) take rows", kindWord(t), n.Table)
		}
		return nil, sqlerr.New(sqlerr.UndefinedTable, "relation %q does not exist", n.Table)
	}
	var kc *keyedCopy
	if plan.Keyed(t) {
		d := sessionDML{s}
		if err := d.keyedTx("COPY FROM"); err != nil {
			return nil, err
		}
		kc = &keyedCopy{d: d}
	}
	cols := make([]int, 0, len(t.Columns))
	if len(n.Columns) == 0 {
		for i := range t.Columns {
			cols = append(cols, i)
		}
	} else {
		for _, name := range n.Columns {
			i := t.Column(name)
			if i < 0 {
				return nil, sqlerr.New(sqlerr.UndefinedColumn, "column %q of relation %q does not exist", name, t.Name)
			}
			cols = append(cols, i)
		}
	}
	defs, err := copyDefaults(s.e, t, cols)
	if err != nil {
		return nil, err
	}
	if err := s.e.queryMem.Process().Admit("COPY " + t.Name + " FROM STDIN"); err != nil {
		return nil, err
	}
	c := newCopyIn(s.e, t, cols, opts)
	if logTopic(t) != "" && s.e.streamLog != nil {
		c.stageAt = math.MaxInt // cluster mode: Done produces the kept batches
	}
	c.tx = s.txn
	c.defs = defs
	if kc != nil {
		// The rows go through the table's key check as one statement:
		// kept in memory (the table's rows are too), never staged.
		c.keyed, c.tx, c.stageAt = kc, nil, math.MaxInt
	}
	if opts.binary {
		return &Result{CopyIn: &copyBinaryIn{c: c}}, nil
	}
	return &Result{CopyIn: c}, nil
}

func quoteIdent(s string) string { return `"` + strings.ReplaceAll(s, `"`, `""`) + `"` }

type copyOpts struct {
	csv    bool
	binary bool // PostgreSQL's binary format (copybinary.go)
	header bool
	// headerMatch: the header line must name the columns copied, in order
	// (HEADER MATCH, COPY FROM only).
	headerMatch bool
	delim       byte
	null        string
	quote       byte
	escape      byte
}

func copyOptions(o map[string]string) (copyOpts, error) {
	c := copyOpts{delim: '\t', null: `\N`, quote: '"', escape: '"'}
	if f, ok := o["format"]; ok {
		switch strings.ToLower(f) {
		case "csv":
			c.csv, c.delim, c.null = true, ',', ""
		case "text":
		case "binary":
			c.binary = true
		default:
			return c, sqlerr.New(sqlerr.FeatureNotSupported, "COPY format %q not supported (text, csv, binary)", f)
		}
	}
	if c.binary {
		for _, k := range []string{"delimiter", "null", "header"} {
			if _, ok := o[k]; ok {
				code := sqlerr.SyntaxError
				if k == "header" {
					code = sqlerr.FeatureNotSupported // as PostgreSQL 15
				}
				return c, sqlerr.New(code, "cannot specify %s in BINARY mode", strings.ToUpper(k))
			}
		}
	}
	for k, v := range o {
		switch k {
		case "format":
		case "header":
			switch strings.ToLower(v) {
			case "", "true", "on", "1":
				c.header = true
			case "match":
				c.header, c.headerMatch = true, true
			case "false", "off", "0":
			default:
				return c, sqlerr.New(sqlerr.SyntaxError, `header requires a Boolean value or "match"`)
			}
		case "delimiter":
			if len(v) != 1 {
				return c, sqlerr.New(sqlerr.FeatureNotSupported, "COPY delimiter must be a single one-byte character")
			}
			c.delim = v[0]
		case "null":
			c.null = v
		case "quote":
			if len(v) != 1 {
				return c, sqlerr.New(sqlerr.FeatureNotSupported, "COPY quote must be a single one-byte character")
			}
			c.quote = v[0]
		case "escape":
			if len(v) != 1 {
				return c, sqlerr.New(sqlerr.FeatureNotSupported, "COPY escape must be a single one-byte character")
			}
			c.escape = v[0]
		default:
			return c, sqlerr.New(sqlerr.SyntaxError, "option %q not recognized", k)
		}
	}
	return c, nil
}

// copyIn parses COPY data into column builders as it arrives. Completed
// batches are kept in memory up to copyStageBytes of input; past that they
// are staged in storage (storage.Stage) as they are made, so a COPY of any
// size holds a bounded amount of memory. Done appends the rows atomically
// either way: the kept batches in one log write, or by publishing the stage.
type copyIn struct {
	e       *Engine
	t       *storage.TableDef
	cols    []int
	opts    copyOpts
	ts      []types.T
	bls     []array.Builder                 // per column: its builder, or nil if in ints
	ints    []*intCol                       // per column: its values if one 8-byte value (integers, floats, dates and times), else nil
	strs    []*array.StringBuilder          // per column: its builder if TEXT/VARCHAR (the fast path), else nil
	uuids   []*array.FixedSizeBinaryBuilder // per column: its builder if UUID, else nil
	uuidBuf [][16]byte                      // fastLines: the line's uuids, by field
	jsonbs  []*array.StringBuilder          // per column: its builder if JSONB, else nil
	jp      types.JSONBParser               // the jsonb input function, its scratch kept across rows
	jbuf    []byte                          // jsonb values as encoded, of the line (fastLines) or the field
	jends   []int                           // fastLines: the end in jbuf of the line's jsonb values, by field
	kinds   []copyKind                      // per column: how fastLines parses it
	fast    bool                            // every column is listed and fastLines can parse it
	datums  []types.Datum                   // fastLines: the line's values of kindDatum columns, by field
	stops   *[256]bool                      // the bytes that stop fastLines' scan of a TEXT field
	eol     int                             // how lines end (eolUnknown until the first line's end)
	rows    int                             // rows in the builders
	capRows int                             // row capacity of the BIGINT columns
	bytes   int                             // input bytes of those rows
	recs    []arrow.RecordBatch             // completed batches not staged
	kept    int                             // input bytes of recs
	stage   *storage.Stage                  // nil until the COPY outgrows stageAt
	stager  *stager                         // writes batches to stage beside the parsing
	stageAt int                             // input bytes kept before staging: copyStageBytes
	sc      recordScanner
	line    int
	total   int64
	ended   bool
	fields  [][]byte
	scratch []byte // unescaped CSV fields of the current record
	// tx is the transaction the COPY is part of: Done hands it the rows
	// instead of appending them.
	tx *txn
	// defs are the defaults of the columns the column list leaves out
	// (coldefaults.go); nil if none has one.
	defs []types.Datum
	// keyed writes the rows of a COPY into a table with a primary key
	// (nil for an append-only table).
	keyed *keyedCopy
}

// copyBatchRows and copyBatchBytes bound a batch: by rows, and by input
// bytes for wide rows.
const (
	copyBatchRows  = 64 << 10
	copyBatchBytes = 2 << 20
)

// copyStageBytes is the input a COPY keeps in memory before it stages its
// batches in storage. Smaller COPYs make one log write at the end and pay
// no staging (an sstable ingestion and a sync per 64 MB).
const copyStageBytes = 8 << 20

func newCopyIn(e *Engine, t *storage.TableDef, cols []int, opts copyOpts) *copyIn {
	c := &copyIn{e: e, t: t, cols: cols, opts: opts, stageAt: copyStageBytes}
	c.sc = recordScanner{csv: opts.csv, quote: opts.quote, escape: opts.escape}
	special := byte('\\') // text format: an escape, \N or \.
	if opts.csv {
		special = opts.quote
	}
	c.stops = fastStops(opts.delim, special)
	c.fast = len(cols) == len(t.Columns)
	for _, col := range t.Columns {
		k := kindOf(col.Type, opts.csv)
		c.ts = append(c.ts, col.Type)
		c.kinds = append(c.kinds, k)
		c.fast = c.fast && k != kindSlow
		if k <= kindFixed {
			c.bls = append(c.bls, nil)
			c.ints = append(c.ints, &intCol{float: col.Type.Physical() == types.PhysFloat64, f32: col.Type.Kind == types.Float32})
			c.strs = append(c.strs, nil)
			c.uuids = append(c.uuids, nil)
			c.jsonbs = append(c.jsonbs, nil)
			continue
		}
		bl := types.NewBuilder(exec.Allocator(), col.Type)
		sb, _ := bl.(*array.StringBuilder)
		if col.Type.Kind != types.Text {
			sb = nil
		}
		ub, _ := bl.(*array.FixedSizeBinaryBuilder)
		jb, _ := bl.(*array.StringBuilder)
		if col.Type.Kind != types.JSONB {
			jb = nil
		}
		c.jsonbs = append(c.jsonbs, jb)
		c.bls = append(c.bls, bl)
		c.ints = append(c.ints, nil)
		c.strs = append(c.strs, sb)
		c.uuids = append(c.uuids, ub)
	}
	c.datums = make([]types.Datum, len(cols))
	c.uuidBuf = make([][16]byte, len(cols))
	c.jends = make([]int, len(cols))
	return c
}

func (c *copyIn) NumColumns() int { return len(c.cols) }

func (c *copyIn) Write(data []byte) error {
	for len(data) > 0 && !c.ended {
		// At a record's start (nothing carried over from the last chunk,
		// and never the header), plain lines take the fast path.
		if c.fast && len(c.sc.carry) == 0 && (c.line > 0 || !c.opts.header) && c.eol <= eolNL {
			n, err := c.fastLines(data)
			if err != nil {
				return err
			}
			if data = data[n:]; len(data) == 0 {
				return nil
			}
		}
		i := c.sc.end(data)
		if i < 0 {
			c.sc.keep(data)
			return nil
		}
		line := data[:i]
		data = data[i+1:]
		if len(c.sc.carry) > 0 {
			c.sc.keep(line)
			line = c.sc.carry
		}
		err := c.addRecord(line, true)
		c.sc.reset()
		if err != nil {
			return err
		}
	}
	return nil // data after \. is ignored, as PostgreSQL does
}

// How the lines of a COPY end. As in PostgreSQL, the first line's end
// fixes it for the whole COPY: a newline, a carriage return and newline,
// or a carriage return alone. A line end of another kind in the data is
// an error (text format: a carriage return or newline in a value is
// written \r or \n; CSV: in a quoted field).
const (
	eolUnknown = iota
	eolNL
	eolCRNL
	eolCR
)

// addRecord parses rec, the bytes up to a newline outside CSV quotes (nl)
// or up to the end of the data, as one line or, once lines end in a
// carriage return, as several.
func (c *copyIn) addRecord(rec []byte, nl bool) error {
	for !c.ended {
		k := -1
		if bytes.IndexByte(rec, '\r') >= 0 {
			k = c.lineCR(rec)
		}
		switch {
		case k < 0:
			if nl {
				if c.eol == eolUnknown {
					c.eol = eolNL
				} else if c.eol != eolNL {
					return c.eolErr('\n')
				}
			}
			return c.addLine(rec)
		case k == len(rec)-1 && nl && c.eol != eolCR:
			if c.eol == eolUnknown {
				c.eol = eolCRNL
			} else if c.eol != eolCRNL {
				return c.eolErr('\r')
			}
			return c.addLine(rec[:k])
		}
		// A carriage return alone ends the line.
		if c.eol == eolUnknown {
			c.eol = eolCR
		} else if c.eol != eolCR {
			return c.eolErr('\r')
		}
		if err := c.addLine(rec[:k]); err != nil {
			return err
		}
		if rec = rec[k+1:]; len(rec) == 0 && !nl {
			return nil
		}
	}
	return nil
}

// lineCR is the index of the first carriage return in rec that is a line
// end: not escaped by a backslash (text format) nor inside quotes (CSV);
// -1 if there is none.
func (c *copyIn) lineCR(rec []byte) int {
	inQuote := false
	q, e := c.opts.quote, c.opts.escape
	for i := 0; i < len(rec); i++ {
		switch ch := rec[i]; {
		case !c.opts.csv:
			if ch == '\\' {
				i++
			} else if ch == '\r' {
				return i
			}
		case inQuote:
			if ch == e && e != q && i+1 < len(rec) {
				i++
			} else if ch == q {
				inQuote = false
			}
		case ch == q:
			inQuote = true
		case ch == '\r':
			return i
		}
	}
	return -1
}

// eolErr is PostgreSQL's error for a line end (ch: '\r' or '\n') of the
// kind the COPY's lines do not end with, found in the next line.
func (c *copyIn) eolErr(ch byte) error {
	c.line++
	what, text, csv := "carriage return", `"\r"`, "quoted CSV field"
	if ch == '\n' {
		what, text = "newline", `"\n"`
	}
	err := c.lineErr(sqlerr.BadCopyFileFormat, "literal %s found in data", what).(*sqlerr.Error)
	err.Hint = "Use " + text + " to represent " + what + "."
	if c.opts.csv {
		err.Msg = "unquoted " + what + " found in data"
		err.Hint = "Use " + csv + " to represent " + what + "."
	}
	return err
}

// addLine parses one line, without its line end.
func (c *copyIn) addLine(line []byte) error {
	c.line++
	if string(line) == `\.` {
		c.ended = true
		return nil
	}
	// Every line is valid UTF-8 with no NUL, the header too (PostgreSQL
	// checks each line as it reads it, before its fields).
	if err := types.CheckText(line); err != nil {
		return c.textErr(err)
	}
	if c.line == 1 && c.opts.header {
		if c.opts.headerMatch {
			return c.matchHeader(line)
		}
		return nil
	}
	if err := c.split(line); err != nil {
		return err
	}
	if len(c.fields) != len(c.cols) {
		if len(c.fields) < len(c.cols) {
			return c.lineErr(sqlerr.BadCopyFileFormat, "missing data for column %q", c.t.Columns[c.cols[len(c.fields)]].Name)
		}
		return c.lineErr(sqlerr.BadCopyFileFormat, "extra data after last expected column")
	}
	if c.rows == c.capRows {
		c.growRows()
	}
	for fi, col := range c.cols {
		f := c.fields[fi]
		if f == nil {
			if err := c.appendNull(col); err != nil {
				return err
			}
			continue
		}
		if ic := c.ints[col]; ic != nil {
			if c.kinds[col] == kindBig {
				if v, ok := parseInt64(f); ok {
					ic.vals[c.rows] = v
					continue
				}
			}
			d, err := types.ParseTextBytes(f, c.ts[col])
			if err != nil {
				return c.fieldErr(err, col, f)
			}
			ic.set(c.rows, d)
			continue
		}
		bl, t := c.bls[col], c.ts[col]
		if sb := c.strs[col]; sb != nil && !t.Pad && (t.Prec <= 0 || len(f) <= int(t.Prec)) {
			// Within any length limit: the bytes as they are, with no
			// string made of them (types.ParseText would only check it).
			sb.BinaryBuilder.Append(f)
			continue
		}
		if ub := c.uuids[col]; ub != nil {
			var u [16]byte
			if types.ParseCanonicalUUID(u[:], f) { // else ParseText: other spellings, errors
				ub.Append(u[:])
				continue
			}
		}
		if jb := c.jsonbs[col]; jb != nil { // encoded into the scratch, not a string per value
			var err error
			if c.jbuf, err = c.jp.Append(c.jbuf[:0], f); err != nil {
				return c.fieldErr(err, col, f)
			}
			jb.BinaryBuilder.Append(c.jbuf)
			continue
		}
		d, err := types.ParseTextBytes(f, t)
		if err != nil {
			return c.fieldErr(err, col, f)
		}
		types.AppendDatum(bl, d, t)
	}
	if len(c.cols) < len(c.t.Columns) {
		for i := range c.t.Columns {
			if !contains(c.cols, i) {
				if err := appendMissing(c, i); err != nil {
					return err
				}
			}
		}
	}
	c.rows++
	c.bytes += len(line) + 1
	return c.rowDone()
}

// appendNull makes column col NULL in the current row, unless it is NOT
// NULL.
func (c *copyIn) appendNull(col int) error {
	if c.t.Columns[col].NotNull {
		return c.lineErr(sqlerr.NotNullViolation, "null value in column %q of relation %q violates not-null constraint", c.t.Columns[col].Name, c.t.Name)
	}
	if ic := c.ints[col]; ic != nil {
		ic.vals[c.rows] = 0
		ic.nulls = append(ic.nulls, int32(c.rows))
	} else {
		c.bls[col].AppendNull()
	}
	return nil
}

// fieldErr is err, from parsing field f of column col, naming the line
// and column as PostgreSQL's COPY does.
func (c *copyIn) fieldErr(err error, col int, f []byte) error {
	se := sqlerr.As(err)
	return &sqlerr.Error{Code: se.Code, Msg: se.Msg, Hint: se.Hint,
		Detail: fmt.Sprintf("COPY %s, line %d, column %s: %q", c.t.Name, c.line, c.t.Columns[col].Name, f)}
}

// rowDone completes the batch when a row has filled it.
func (c *copyIn) rowDone() error {
	if c.rows < copyBatchRows && c.bytes < copyBatchBytes {
		return nil
	}
	n := c.rows
	if err := c.flushBatch(); err != nil {
		return err
	}
	// The next batch is likely as long as this one: size the columns for
	// it now. Left to grow by doubling from empty, they copied each
	// batch's values about once more (6-10 % of a COPY's CPU,
	// docs/benchmarks/2026-12-01-first-run.md).
	for _, b := range c.bls {
		if b != nil {
			b.Reserve(n)
		}
	}
	c.reserveRows(n)
	return nil
}

func contains(xs []int, x int) bool {
	for _, v := range xs {
		if v == x {
			return true
		}
	}
	return false
}

// textErr is err, from types.CheckText, naming the line.
func (c *copyIn) textErr(err error) error {
	se := sqlerr.As(err)
	return c.lineErr(se.Code, "%s", se.Msg)
}

// split splits line into c.fields in the COPY's format.
func (c *copyIn) split(line []byte) error {
	if c.opts.csv {
		return c.splitCSV(line)
	}
	return c.splitText(line)
}

// matchHeader checks the header line of HEADER MATCH: its fields must be
// the names of the columns copied, in order, as in PostgreSQL 15.
func (c *copyIn) matchHeader(line []byte) error {
	if err := c.split(line); err != nil {
		return err
	}
	if len(c.fields) != len(c.cols) {
		return c.lineErr(sqlerr.BadCopyFileFormat, "wrong number of fields in header line: got %d, expected %d", len(c.fields), len(c.cols))
	}
	for i, col := range c.cols {
		name := c.t.Columns[col].Name
		switch f := c.fields[i]; {
		case f == nil:
			return c.lineErr(sqlerr.BadCopyFileFormat, `column name mismatch in header line field %d: got null value ("%s"), expected "%s"`, i+1, c.opts.null, name)
		case string(f) != name:
			return c.lineErr(sqlerr.BadCopyFileFormat, `column name mismatch in header line field %d: got "%s", expected "%s"`, i+1, f, name)
		}
	}
	return nil
}

func (c *copyIn) lineErr(code, format string, args ...any) error {
	return &sqlerr.Error{Code: code, Msg: fmt.Sprintf(format, args...), Detail: fmt.Sprintf("COPY %s, line %d", c.t.Name, c.line)}
}

// parseInt64 parses a plain decimal integer of at most 18 digits (so it
// cannot overflow) without allocating. Anything else — more digits, spaces,
// errors — is left to types.ParseText, which has PostgreSQL's rules.
func parseInt64(b []byte) (int64, bool) {
	if len(b) == 0 {
		return 0, false
	}
	neg := false
	i := 0
	if b[0] == '-' || b[0] == '+' {
		neg, i = b[0] == '-', 1
	}
	if len(b)-i == 0 || len(b)-i > 18 {
		return 0, false
	}
	var v int64
	for ; i < len(b); i++ {
		d := b[i] - '0'
		if d > 9 {
			return 0, false
		}
		v = v*10 + int64(d)
	}
	if neg {
		v = -v
	}
	return v, true
}

// splitText splits a text-format line at every delimiter into c.fields
// (nil for the NULL string), in one pass that also notes which fields hold
// a backslash and so need unescaping.
func (c *copyIn) splitText(line []byte) error {
	c.fields = c.fields[:0]
	d := c.opts.delim
	start, esc := 0, false
	for i := 0; i < len(line); i++ {
		switch line[i] {
		case d:
			if err := c.textField(line[start:i], esc); err != nil {
				return err
			}
			start, esc = i+1, false
		case '\\':
			// The next byte is data, even a delimiter or a backslash.
			esc = true
			i++
		}
	}
	return c.textField(line[start:], esc)
}

// textField appends a text-format field to c.fields: nil for the NULL
// string, else its bytes with escapes resolved, which must again be valid
// UTF-8 with no NUL (\xff or \000 make bytes the line's check did not see).
func (c *copyIn) textField(raw []byte, esc bool) error {
	f := raw
	if len(raw) == len(c.opts.null) && string(raw) == c.opts.null {
		f = nil
	} else if esc {
		f = unescapeText(raw)
		if err := types.CheckText(f); err != nil {
			return c.textErr(err)
		}
	}
	c.fields = append(c.fields, f)
	return nil
}

// unescapeText resolves the backslash escapes of a text-format field.
func unescapeText(raw []byte) []byte {
	out := make([]byte, 0, len(raw))
	for k := 0; k < len(raw); k++ {
		ch := raw[k]
		if ch != '\\' || k+1 == len(raw) {
			out = append(out, ch)
			continue
		}
		k++
		switch e := raw[k]; e {
		case 'n':
			out = append(out, '\n')
		case 't':
			out = append(out, '\t')
		case 'r':
			out = append(out, '\r')
		case 'b':
			out = append(out, '\b')
		case 'f':
			out = append(out, '\f')
		case 'v':
			out = append(out, '\v')
		case 'x':
			j := k + 1
			for j < len(raw) && j < k+3 && isHex(raw[j]) {
				j++
			}
			if j == k+1 {
				out = append(out, 'x')
				continue
			}
			v, _ := strconv.ParseUint(string(raw[k+1:j]), 16, 8)
			out = append(out, byte(v))
			k = j - 1
		default:
			if e >= '0' && e <= '7' {
				j := k
				for j < len(raw) && j < k+3 && raw[j] >= '0' && raw[j] <= '7' {
					j++
				}
				v, _ := strconv.ParseUint(string(raw[k:j]), 8, 8)
				out = append(out, byte(v))
				k = j - 1
			} else {
				out = append(out, e)
			}
		}
	}
	return out
}

func isHex(b byte) bool { return b >= '0' && b <= '9' || b >= 'a' && b <= 'f' || b >= 'A' && b <= 'F' }

// splitCSV splits a CSV record into c.fields (nil for an unquoted NULL
// string). A quoted field is a slice of line unless it holds escapes; then
// it is unescaped into c.scratch, which is sized for the whole record first
// so that slices of it stay valid.
func (c *copyIn) splitCSV(line []byte) error {
	c.fields = c.fields[:0]
	q, d, e := c.opts.quote, c.opts.delim, c.opts.escape
	if cap(c.scratch) < len(line) || cap(c.scratch) > maxKeptCarry {
		c.scratch = make([]byte, 0, len(line))
	}
	c.scratch = c.scratch[:0]
	i := 0
	for {
		if i < len(line) && line[i] == q {
			i++
			seg, from, unescaped := i, len(c.scratch), false
			for {
				if e == q {
					// Only a quote can end the field or start an escape.
					j := bytes.IndexByte(line[i:], q)
					if j < 0 {
						i = len(line)
					} else {
						i += j
					}
				}
				if i >= len(line) {
					return c.lineErr(sqlerr.BadCopyFileFormat, "unterminated CSV quoted field")
				}
				ch := line[i]
				if ch == e && i+1 < len(line) && (line[i+1] == q || line[i+1] == e) {
					c.scratch = append(c.scratch, line[seg:i]...)
					c.scratch = append(c.scratch, line[i+1])
					i += 2
					seg, unescaped = i, true
					continue
				}
				if ch == q {
					break
				}
				i++
			}
			f := line[seg:i:i]
			if unescaped {
				c.scratch = append(c.scratch, f...)
				f = c.scratch[from:len(c.scratch):len(c.scratch)]
			}
			c.fields = append(c.fields, f)
			i++
		} else {
			j := bytes.IndexByte(line[i:], d)
			if j < 0 {
				j = len(line)
			} else {
				j += i
			}
			raw := line[i:j:j]
			if string(raw) == c.opts.null {
				c.fields = append(c.fields, nil)
			} else {
				c.fields = append(c.fields, raw)
			}
			i = j
		}
		if i >= len(line) {
			return nil
		}
		if line[i] != d {
			return c.lineErr(sqlerr.BadCopyFileFormat, "extra data after quoted CSV field")
		}
		i++
		if i == len(line) {
			if c.opts.null == "" {
				c.fields = append(c.fields, nil)
			} else {
				c.fields = append(c.fields, line[i:i:i])
			}
			return nil
		}
	}
}

// flushBatch completes the batch in the builders and keeps or stages it.
func (c *copyIn) flushBatch() error {
	if c.rows == 0 {
		return nil
	}
	cols := make([]arrow.Array, len(c.bls))
	for i, b := range c.bls {
		if ic := c.ints[i]; ic != nil {
			cols[i] = ic.finish(c.ts[i].Arrow(), c.rows)
		} else {
			cols[i] = b.NewArray()
			reserveLike(b, cols[i])
		}
	}
	c.capRows = 0
	c.recs = append(c.recs, newRecord(c.ts, cols, c.rows))
	c.total += int64(c.rows)
	c.kept += c.bytes
	if c.stage == nil && c.stageAt == math.MaxInt {
		if err := admitKeptCopy(processMemory(c.e), c.t.Name, c.kept-c.bytes, c.kept); err != nil {
			return err
		}
	}
	c.rows, c.bytes = 0, 0
	if c.stage == nil && c.kept < c.stageAt {
		return nil
	}
	if c.stage == nil {
		st, err := c.e.db.Stages().New(c.t.ID)
		if err != nil {
			return err
		}
		c.stage = st
		c.stager = newStager(st)
	}
	return c.stageRecs()
}

// reserveLike gives a string column's builder, just emptied into a, room
// for a batch like a: the next batch of a COPY is about as big as the
// last, and a builder grown by doubling copies and zeroes its bytes about
// twice over (a fifth of the parsing of a COPY of JSONB events).
func reserveLike(b array.Builder, a arrow.Array) {
	sb, ok := b.(*array.StringBuilder)
	s, ok2 := a.(*array.String)
	if !ok || !ok2 {
		return
	}
	sb.Reserve(s.Len())
	sb.ReserveData(len(s.ValueBytes()))
}

// copyAdmitStep is how much input a COPY that keeps its rows in memory (a
// keyed table's, or any in cluster mode) reads between two admission
// checks against --memory-limit.
const copyAdmitStep = 4 << 20

// processMemory is e's process memory account; nil without an engine (a
// COPY parsed on its own, as the parser's tests do) or without a limit.
func processMemory(e *Engine) *plan.ProcessMemory {
	if e == nil {
		return nil
	}
	return e.queryMem.Process()
}

// admitKeptCopy checks --memory-limit (pm; nil: none) again each time a
// COPY that keeps its rows in memory passes another copyAdmitStep bytes of
// input (kept went from before to after): the check when it started cannot
// see what the COPY itself builds up, so one large COPY is refused (and
// keeps nothing) once the live heap is past its share.
func admitKeptCopy(pm *plan.ProcessMemory, table string, before, after int) error {
	if pm == nil || before/copyAdmitStep == after/copyAdmitStep {
		return nil
	}
	return pm.Admit(fmt.Sprintf("COPY %s FROM STDIN (after %dMB of its input)", table, after>>20))
}

// stageRecs hands the kept batches to the stager.
func (c *copyIn) stageRecs() error {
	for i, r := range c.recs {
		c.recs[i] = nil
		if err := c.stager.add(r); err != nil {
			for _, rest := range c.recs[i+1:] {
				rest.Release()
			}
			c.recs, c.kept = c.recs[:0], 0
			return err
		}
	}
	c.recs, c.kept = c.recs[:0], 0
	return nil
}

// finishStage waits until every batch is in the stage.
func (c *copyIn) finishStage() error {
	if err := c.stageRecs(); err != nil {
		return err
	}
	s := c.stager
	c.stager = nil
	return s.finish()
}

func (c *copyIn) Done() (tag string, err error) {
	defer func() {
		if err != nil {
			c.Abort(err.Error())
		} else {
			c.release()
		}
	}()
	if err := c.finishInput(); err != nil {
		return "", err
	}
	if err := c.flushBatch(); err != nil {
		return "", err
	}
	if c.keyed != nil {
		recs := c.recs
		c.recs = nil
		return c.keyed.write(c.t, c.ts, recs)
	}
	if c.tx != nil {
		return c.doneInTx()
	}
	if c.stage == nil {
		if err := c.e.appendRows(c.t, c.recs); err != nil {
			return "", err
		}
		return fmt.Sprintf("COPY %d", c.total), nil
	}
	if err := c.finishStage(); err != nil {
		return "", err
	}
	part, err := c.e.appendPartition(c.t)
	if err != nil {
		return "", err
	}
	if _, err := c.stage.Publish(part); err != nil {
		return "", err
	}
	return fmt.Sprintf("COPY %d", c.total), nil
}

// doneInTx hands the COPY's rows to its transaction: the staged ones as
// the stage, which the transaction publishes at COMMIT.
func (c *copyIn) doneInTx() (string, error) {
	if c.stage != nil {
		if err := c.finishStage(); err != nil {
			return "", err
		}
		st := c.stage
		c.stage = nil
		if err := c.tx.addStage(c.e.db, c.t, st); err != nil {
			return "", err
		}
	} else if err := c.tx.addRecs(c.e.db, c.t, c.recs); err != nil {
		return "", err
	}
	return fmt.Sprintf("COPY %d", c.total), nil
}

// finishInput parses the last record if the data did not end with a newline.
func (c *copyIn) finishInput() error {
	if len(c.sc.carry) == 0 || c.ended {
		return nil
	}
	err := c.addRecord(c.sc.carry, false)
	c.sc.reset()
	return err
}

// Abort drops the COPY's rows: the kept batches and anything staged.
func (c *copyIn) Abort(string) {
	if c.stager != nil {
		_ = c.stager.finish()
		c.stager = nil
	}
	if c.stage != nil {
		c.stage.Abort()
	}
	c.release()
}

func (c *copyIn) release() {
	for _, r := range c.recs {
		if r != nil {
			r.Release()
		}
	}
	c.recs = nil
	for _, b := range c.bls {
		if b != nil {
			b.Release()
		}
	}
	c.bls = nil
}

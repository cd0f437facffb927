package wire

import (
	"context"
	"encoding/binary"

	"github.com/apache/arrow-go/v18/arrow"
	"github.com/jackc/pgx/v5/pgproto3"
	"github.com/streamdb/streamdb/sql/api"
	"github.com/streamdb/streamdb/sqlerr"
	"github.com/streamdb/streamdb/types"
)

// Format codes of Bind and RowDescription.
const (
	formatText   = 0
	formatBinary = 1
)

// flushSize is how many bytes of rows are assembled before they are written,
// within one batch; every batch is written when it is done.
const flushSize = 256 << 10

// portal is a bound statement. It is executed on its first Execute; its
// rows are then sent over as many Executes as the client's row limits need.
type portal struct {
	stmt    *api.Stmt
	params  []types.Datum
	formats []int16 // result format per column

	ctx    context.Context
	cancel context.CancelFunc
	res    *api.Result // set by the first Execute
	src    rowSource   // res.Rows with the read position
	done   bool        // ran to completion (or failed)
}

// extended runs one extended-protocol message other than Sync and Flush.
func (c *conn) extended(msg pgproto3.FrontendMessage) (err error) {
	defer c.recoverPanic(&err)
	switch m := msg.(type) {
	case *pgproto3.Parse:
		return c.parse(m)
	case *pgproto3.Bind:
		return c.bind(m)
	case *pgproto3.Describe:
		return c.describe(m)
	case *pgproto3.Execute:
		return c.execute(m)
	case *pgproto3.Close:
		return c.closeMsg(m)
	}
	return nil
}

func (c *conn) parse(m *pgproto3.Parse) error {
	if err := types.CheckString(m.Query); err != nil {
		return err
	}
	if m.Name == "" {
		delete(c.stmts, "")
	} else if _, ok := c.stmts[m.Name]; ok || c.sess.HasPrepared(m.Name) {
		return sqlerr.New(sqlerr.DuplicatePreparedStmt, "prepared statement %q already exists", m.Name)
	}
	// OIDs streamdb does not know are left for the engine to infer.
	oids := make([]uint32, len(m.ParameterOIDs))
	for i, oid := range m.ParameterOIDs {
		if _, ok := types.FromOID(oid); ok {
			oids[i] = oid
		}
	}
	ctx, done := c.begin()
	defer done()
	st, err := c.sess.Prepare(ctx, m.Query, oids)
	if err != nil {
		return c.stmtError(ctx, err)
	}
	c.stmts[m.Name] = st
	c.be.Send(&pgproto3.ParseComplete{})
	return nil
}

func (c *conn) statement(name string) (*api.Stmt, error) {
	st, ok := c.stmts[name]
	if !ok {
		if name == "" {
			return nil, sqlerr.New(sqlerr.InvalidSQLStatementName, "unnamed prepared statement does not exist")
		}
		return nil, sqlerr.New(sqlerr.InvalidSQLStatementName, "prepared statement %q does not exist", name)
	}
	return st, nil
}

func (c *conn) portal(name string) (*portal, error) {
	p, ok := c.portals[name]
	if !ok {
		return nil, sqlerr.New(sqlerr.InvalidCursorName, "portal %q does not exist", name)
	}
	return p, nil
}

func (c *conn) bind(m *pgproto3.Bind) error {
	st, err := c.statement(m.PreparedStatement)
	if err != nil {
		return err
	}
	if m.DestinationPortal == "" {
		c.closePortal("")
	} else if _, ok := c.portals[m.DestinationPortal]; ok {
		return sqlerr.New(sqlerr.DuplicateCursor, "portal %q already exists", m.DestinationPortal)
	}
	params, err := decodeParams(st, m.ParameterFormatCodes, m.Parameters)
	if err != nil {
		return err
	}
	formats, err := resultFormats(m.ResultFormatCodes, len(st.Columns))
	if err != nil {
		return err
	}
	ctx, cancel := context.WithCancel(context.Background())
	c.portals[m.DestinationPortal] = &portal{stmt: st, params: params, formats: formats, ctx: ctx, cancel: cancel}
	c.be.Send(&pgproto3.BindComplete{})
	return nil
}

// decodeParams decodes Bind's parameter values as st.ParamTypes. The values
// are only read here, so Receive's buffer may be reused afterwards.
func decodeParams(st *api.Stmt, formats []int16, values [][]byte) ([]types.Datum, error) {
	if len(values) != len(st.ParamTypes) {
		return nil, sqlerr.New(sqlerr.ProtocolViolation,
			"bind message supplies %d parameters, but prepared statement requires %d", len(values), len(st.ParamTypes))
	}
	if len(formats) > 1 && len(formats) != len(values) {
		return nil, sqlerr.New(sqlerr.ProtocolViolation,
			"bind message has %d parameter formats but %d parameters", len(formats), len(values))
	}
	params := make([]types.Datum, len(values))
	for i, v := range values {
		if v == nil {
			params[i] = types.Null
			continue
		}
		t := st.ParamTypes[i]
		f := formatAt(formats, i)
		// Text enters the server valid UTF-8 with no NUL: every parameter
		// in text format here, text in binary format in types.ParseBinary
		// (as PostgreSQL's textrecv checks it).
		if f == formatText || t.Kind == types.Unknown {
			if err := types.CheckText(v); err != nil {
				return nil, err
			}
		}
		var err error
		switch {
		case f == formatText || t.Kind == types.Unknown:
			// An untyped parameter's binary form is its text.
			params[i], err = types.ParseText(string(v), t)
			err = sqlerr.Wrap(sqlerr.InvalidTextRep, err)
		case f == formatBinary:
			params[i], err = types.ParseBinary(v, t)
			err = sqlerr.Wrap("22P03", err) // invalid_binary_representation
		default:
			return nil, sqlerr.New(sqlerr.ProtocolViolation, "unsupported format code: %d", f)
		}
		if err != nil {
			return nil, err
		}
	}
	return params, nil
}

// resultFormats expands Bind's result format codes to one per column.
func resultFormats(codes []int16, ncols int) ([]int16, error) {
	if len(codes) > 1 && len(codes) != ncols {
		return nil, sqlerr.New(sqlerr.ProtocolViolation,
			"bind message has %d result formats but query has %d columns", len(codes), ncols)
	}
	formats := make([]int16, ncols)
	for i := range formats {
		f := formatAt(codes, i)
		if f != formatText && f != formatBinary {
			return nil, sqlerr.New(sqlerr.ProtocolViolation, "unsupported format code: %d", f)
		}
		formats[i] = f
	}
	return formats, nil
}

// formatAt applies the protocol's rule for format code lists: none means
// text, one applies to all, otherwise one per value.
func formatAt(codes []int16, i int) int16 {
	switch len(codes) {
	case 0:
		return formatText
	case 1:
		return codes[0]
	}
	return codes[i]
}

func (c *conn) describe(m *pgproto3.Describe) error {
	switch m.ObjectType {
	case 'S':
		st, err := c.statement(m.Name)
		if err != nil {
			return err
		}
		oids := make([]uint32, len(st.ParamTypes))
		for i, t := range st.ParamTypes {
			oids[i] = t.OID()
		}
		c.be.Send(&pgproto3.ParameterDescription{ParameterOIDs: oids})
		c.describeRows(st, nil)
	case 'P':
		p, err := c.portal(m.Name)
		if err != nil {
			return err
		}
		c.describeRows(p.stmt, p.formats)
	default:
		return sqlerr.New(sqlerr.ProtocolViolation, "invalid DESCRIBE message subtype %d", m.ObjectType)
	}
	return nil
}

// describeRows sends RowDescription for a statement that returns rows (not
// through COPY), NoData otherwise.
func (c *conn) describeRows(st *api.Stmt, formats []int16) {
	if len(st.Columns) == 0 || st.CopyOut || st.CopyIn {
		c.be.Send(&pgproto3.NoData{})
		return
	}
	c.be.Send(rowDescription(st.Columns, formats))
}

func rowDescription(cols []api.Column, formats []int16) *pgproto3.RowDescription {
	fields := make([]pgproto3.FieldDescription, len(cols))
	for i, col := range cols {
		fields[i] = pgproto3.FieldDescription{
			Name:         []byte(col.Name),
			DataTypeOID:  col.T.OID(),
			DataTypeSize: col.T.Size(),
			TypeModifier: col.T.Modifier(),
			Format:       formatAt(formats, i),
		}
	}
	return &pgproto3.RowDescription{Fields: fields}
}

func (c *conn) execute(m *pgproto3.Execute) (err error) {
	p, err := c.portal(m.Portal)
	if err != nil {
		return err
	}
	// A failed portal is closed, so its rows are released at once.
	defer func() {
		if err != nil {
			c.noteFailed(p.stmt.SQL, err)
			c.closePortal(m.Portal)
		}
	}()
	// statement_timeout counts from each Execute; the portal's context
	// outlives it for the rows later Executes read.
	ctx, done := c.beginIn(p.ctx)
	defer done()
	defer func() { err = c.stmtError(ctx, err) }()

	if p.stmt.Empty {
		c.be.Send(&pgproto3.EmptyQueryResponse{})
		return nil
	}
	if p.done {
		// PostgreSQL answers a finished portal with an empty completion.
		c.be.Send(&pgproto3.CommandComplete{CommandTag: []byte(tagWithCount(p.res.Tag, "SELECT", 0))})
		return nil
	}
	if p.res == nil {
		res, err := c.sess.Execute(ctx, p.stmt, p.params)
		if err != nil {
			return err
		}
		p.res = res
		switch {
		case res.CopyIn != nil:
			p.done = true
			tag, err := c.copyIn(ctx, res.CopyIn)
			if err != nil {
				return err
			}
			c.complete(res, tag)
			return nil
		case res.Rows != nil && p.stmt.CopyOut:
			p.done = true
			n, err := c.copyOut(ctx, p.stmt, res.Rows)
			res.Rows.Close()
			if err != nil {
				return err
			}
			c.complete(res, tagWithCount(res.Tag, "COPY", n))
			return nil
		case res.Rows == nil:
			p.done = true
			c.complete(res, res.Tag)
			return nil
		}
		p.src = rowSource{rows: res.Rows, cols: p.stmt.Columns, formats: p.formats}
	}

	n, suspended, err := c.sendRows(ctx, &p.src, int64(m.MaxRows))
	if err != nil {
		return err
	}
	if suspended {
		c.be.Send(&pgproto3.PortalSuspended{})
		return nil
	}
	p.done = true
	p.src.release()
	p.res.Rows.Close()
	c.complete(p.res, tagWithCount(p.res.Tag, "SELECT", n))
	return nil
}

func (c *conn) closeMsg(m *pgproto3.Close) error {
	switch m.ObjectType {
	case 'S':
		delete(c.stmts, m.Name)
	case 'P':
		c.closePortal(m.Name)
	default:
		return sqlerr.New(sqlerr.ProtocolViolation, "invalid CLOSE message subtype %d", m.ObjectType)
	}
	c.be.Send(&pgproto3.CloseComplete{})
	return nil
}

// closePortal releases a portal's rows and cancels its context; closing a
// portal that does not exist is not an error.
func (c *conn) closePortal(name string) {
	p, ok := c.portals[name]
	if !ok {
		return
	}
	delete(c.portals, name)
	p.src.release()
	if p.res != nil && p.res.Rows != nil {
		p.res.Rows.Close()
	}
	p.cancel()
}

// rowSource is a statement's rows with the read position, kept across the
// Executes of a portal.
type rowSource struct {
	rows    api.Rows
	cols    []api.Column
	formats []int16 // nil: all text
	batch   arrow.RecordBatch
	off     int // next row of batch to send
}

func (s *rowSource) release() {
	if s.batch != nil {
		s.batch.Release()
		s.batch = nil
	}
}

// sendRows sends up to max rows (0: all) from src as DataRow messages,
// writing each batch as it is done so that live streams reach the client at
// once. suspended reports that the limit was reached, so there may be more.
func (c *conn) sendRows(ctx context.Context, src *rowSource, max int64) (n int64, suspended bool, err error) {
	for max == 0 || n < max {
		if src.batch == nil {
			b, err := src.rows.Next(ctx)
			if err != nil {
				return n, false, err
			}
			if b == nil {
				return n, false, nil
			}
			if int(b.NumCols()) < len(src.cols) {
				b.Release()
				return n, false, sqlerr.New(sqlerr.Internal, "batch has %d columns, expected %d", b.NumCols(), len(src.cols))
			}
			src.batch, src.off = b, 0
		}
		end := int(src.batch.NumRows())
		if max > 0 && int64(end-src.off) > max-n {
			end = src.off + int(max-n)
		}
		if err := c.sendDataRows(src, end); err != nil {
			return n, false, err
		}
		n += int64(end - src.off)
		src.off = end
		if src.off == int(src.batch.NumRows()) {
			src.release()
		}
	}
	return n, true, nil
}

// sendDataRows writes rows [src.off, end) of the current batch as DataRow
// messages.
func (c *conn) sendDataRows(src *rowSource, end int) error {
	cols := src.batch.Columns()
	out := c.out[:0]
	for i := src.off; i < end; i++ {
		start := len(out)
		out = append(out, 'D', 0, 0, 0, 0)
		out = binary.BigEndian.AppendUint16(out, uint16(len(src.cols)))
		for j, col := range src.cols {
			arr := cols[j]
			if arr.IsNull(i) {
				out = binary.BigEndian.AppendUint32(out, 0xffffffff)
				continue
			}
			lenAt := len(out)
			out = append(out, 0, 0, 0, 0)
			d := types.DatumAt(arr, i, col.T)
			if src.formats != nil && src.formats[j] == formatBinary {
				out = types.AppendBinary(out, d, col.T)
			} else {
				out = types.AppendText(out, d, col.T)
			}
			binary.BigEndian.PutUint32(out[lenAt:], uint32(len(out)-lenAt-4))
		}
		binary.BigEndian.PutUint32(out[start+1:], uint32(len(out)-start-1))
		if len(out) >= flushSize {
			if err := c.writeRaw(out); err != nil {
				return err
			}
			out = out[:0]
		}
	}
	if cap(out) <= 4*flushSize { // keep the buffer unless a huge row grew it
		c.out = out[:0]
	}
	if len(out) == 0 {
		return nil
	}
	return c.writeRaw(out)
}

// protoStmts is the connection's named statements as the session sees
// them: SQL DEALLOCATE drops them (api.ProtocolStatements). The session
// calls it from the connection's own goroutine, while a statement runs.
type protoStmts struct{ c *conn }

func (p protoStmts) Has(name string) bool {
	_, ok := p.c.stmts[name]
	return ok && name != ""
}

func (p protoStmts) Drop(name string) { delete(p.c.stmts, name) }

func (p protoStmts) DropAll() {
	for name := range p.c.stmts {
		if name != "" {
			delete(p.c.stmts, name)
		}
	}
}

package wire

import (
	"context"
	"encoding/binary"
	"errors"
	"os"
	"time"

	"github.com/apache/arrow-go/v18/arrow"
	"github.com/jackc/pgx/v5/pgproto3"
	"github.com/streamdb/streamdb/sql/api"
	"github.com/streamdb/streamdb/sqlerr"
	"github.com/streamdb/streamdb/types"
)

// copyIn runs the COPY FROM STDIN sub-protocol: CopyInResponse, then every
// CopyData payload to ci.Write until CopyDone (ci.Done gives the tag) or
// CopyFail. The payload is only valid during Write, as for io.Writer.
// Flush and Sync are ignored while copying, as the protocol says. On an
// error the client may still be sending; the main loop ignores the rest.
//
// The statement's end (timeout, cancel) interrupts a client that stalls
// mid-COPY: it sets a read deadline in the past, which Receive returns as
// an error with the partial message kept, so the connection goes on.
func (c *conn) copyIn(ctx context.Context, ci api.CopyIn) (tag string, err error) {
	resp := &pgproto3.CopyInResponse{
		OverallFormat:     formatText,
		ColumnFormatCodes: make([]uint16, ci.NumColumns()),
	}
	if b, ok := ci.(interface{ Binary() bool }); ok && b.Binary() {
		resp.OverallFormat = formatBinary
		for i := range resp.ColumnFormatCodes {
			resp.ColumnFormatCodes[i] = formatBinary
		}
	}
	c.be.Send(resp)
	c.flush()
	interrupted := make(chan struct{})
	stop := context.AfterFunc(ctx, func() {
		defer close(interrupted)
		c.raw.SetReadDeadline(time.Unix(1, 0))
	})
	defer func() {
		if !stop() {
			<-interrupted
			c.clearReadDeadline()
		}
	}()
	for {
		if c.dead {
			ci.Abort("connection to client lost")
			return "", errConnDead
		}
		msg, err := c.be.Receive()
		if err != nil && ctx.Err() != nil && errors.Is(err, os.ErrDeadlineExceeded) && !c.isClosing() {
			ci.Abort("canceled")
			return "", ctx.Err()
		}
		if err != nil {
			ci.Abort("connection to client lost")
			c.receiveFailed(err)
			return "", errConnDead
		}
		if ctx.Err() != nil {
			ci.Abort("canceled")
			return "", ctx.Err()
		}
		switch m := msg.(type) {
		case *pgproto3.CopyData:
			if err := ci.Write(m.Data); err != nil {
				ci.Abort(err.Error())
				return "", err
			}
		case *pgproto3.CopyDone:
			return ci.Done()
		case *pgproto3.CopyFail:
			ci.Abort(m.Message)
			return "", sqlerr.New(sqlerr.QueryCanceled, "COPY from stdin failed: %s", m.Message)
		case *pgproto3.Flush, *pgproto3.Sync:
		case *pgproto3.Terminate:
			ci.Abort("client terminated the connection")
			c.dead = true
			return "", errConnDead
		default:
			ci.Abort("unexpected message")
			return "", sqlerr.New(sqlerr.ProtocolViolation, "unexpected message type 0x%02X during COPY from stdin", msgType(msg))
		}
	}
}

// msgType is the protocol's type byte of a message the main loop can get.
func msgType(msg pgproto3.FrontendMessage) byte {
	if b, err := msg.Encode(nil); err == nil && len(b) > 0 {
		return b[0]
	}
	return 0
}

// copyOut runs COPY TO STDOUT: CopyOutResponse, one CopyData per row in
// PostgreSQL's text COPY format (or its binary one: the file's header
// before the first row, its trailer after the last), CopyDone. Each batch
// is written as it arrives, so a live stream shows up in psql at once.
func (c *conn) copyOut(ctx context.Context, st *api.Stmt, rows api.Rows) (n int64, err error) {
	cols := st.Columns
	resp := &pgproto3.CopyOutResponse{
		OverallFormat:     formatText,
		ColumnFormatCodes: make([]uint16, len(cols)),
	}
	appendRow := c.appendCopyTextRow
	if st.CopyBinary {
		resp.OverallFormat = formatBinary
		for i := range resp.ColumnFormatCodes {
			resp.ColumnFormatCodes[i] = formatBinary
		}
		appendRow = appendCopyBinaryRow
	}
	c.be.Send(resp)
	if st.CopyBinary {
		// The header: signature, no flags, no extension.
		c.be.Send(&pgproto3.CopyData{Data: append([]byte("PGCOPY\n\xff\r\n\x00"), 0, 0, 0, 0, 0, 0, 0, 0)})
	}
	for {
		b, err := rows.Next(ctx)
		if err != nil {
			return n, err
		}
		if b == nil {
			break
		}
		if int(b.NumCols()) < len(cols) {
			b.Release()
			return n, sqlerr.New(sqlerr.Internal, "batch has %d columns, expected %d", b.NumCols(), len(cols))
		}
		err = c.sendCopyRows(b.Columns(), cols, int(b.NumRows()), appendRow)
		n += b.NumRows()
		b.Release()
		if err != nil {
			return n, err
		}
	}
	if st.CopyBinary {
		c.be.Send(&pgproto3.CopyData{Data: []byte{0xff, 0xff}})
	}
	c.be.Send(&pgproto3.CopyDone{})
	return n, nil
}

// sendCopyRows writes nrows rows of arrs as CopyData messages, one a
// row, each row's payload appended by appendRow.
func (c *conn) sendCopyRows(arrs []arrow.Array, cols []api.Column, nrows int,
	appendRow func(out []byte, arrs []arrow.Array, cols []api.Column, i int) []byte) error {
	out := c.out[:0]
	for i := range nrows {
		start := len(out)
		out = append(out, 'd', 0, 0, 0, 0)
		out = appendRow(out, arrs, cols, i)
		binary.BigEndian.PutUint32(out[start+1:], uint32(len(out)-start-1))
		if len(out) >= flushSize {
			if err := c.writeRaw(out); err != nil {
				return err
			}
			out = out[:0]
		}
	}
	if cap(out) <= 4*flushSize {
		c.out = out[:0]
	}
	if len(out) == 0 {
		return nil
	}
	return c.writeRaw(out)
}

// appendCopyTextRow appends row i in PostgreSQL's text COPY format.
func (c *conn) appendCopyTextRow(out []byte, arrs []arrow.Array, cols []api.Column, i int) []byte {
	for j, col := range cols {
		if j > 0 {
			out = append(out, '\t')
		}
		arr := arrs[j]
		if arr.IsNull(i) {
			out = append(out, `\N`...)
			continue
		}
		c.scratch = types.AppendText(c.scratch[:0], types.DatumAt(arr, i, col.T), col.T)
		out = appendCopyEscaped(out, c.scratch)
	}
	return append(out, '\n')
}

// appendCopyBinaryRow appends row i in the binary COPY format: a field
// count, then each field's length (-1 for NULL) and binary send form.
func appendCopyBinaryRow(out []byte, arrs []arrow.Array, cols []api.Column, i int) []byte {
	out = binary.BigEndian.AppendUint16(out, uint16(len(cols)))
	for j, col := range cols {
		arr := arrs[j]
		if arr.IsNull(i) {
			out = binary.BigEndian.AppendUint32(out, 0xffffffff)
			continue
		}
		at := len(out)
		out = append(out, 0, 0, 0, 0)
		out = types.AppendBinary(out, types.DatumAt(arr, i, col.T), col.T)
		binary.BigEndian.PutUint32(out[at:], uint32(len(out)-at-4))
	}
	return out
}

// appendCopyEscaped appends v escaped for text COPY: backslash, the tab
// delimiter and the control characters PostgreSQL escapes.
func appendCopyEscaped(dst, v []byte) []byte {
	for _, ch := range v {
		var esc byte
		switch ch {
		case '\\':
			esc = '\\'
		case '\t':
			esc = 't'
		case '\n':
			esc = 'n'
		case '\r':
			esc = 'r'
		case '\b':
			esc = 'b'
		case '\f':
			esc = 'f'
		case '\v':
			esc = 'v'
		default:
			dst = append(dst, ch)
			continue
		}
		dst = append(dst, '\\', esc)
	}
	return dst
}

package sql

import (
	"bytes"
	"encoding/binary"
	"fmt"

	"github.com/streamdb/streamdb/sqlerr"
	"github.com/streamdb/streamdb/types"
)

// COPY FROM STDIN (FORMAT binary): PostgreSQL's binary COPY format, which
// pgx's CopyFrom and other drivers' bulk loaders send. The file is a
// signature, a flags word and a header extension, then one tuple per row
// (a field count, then each field as a length, -1 for NULL, and the
// value's binary send form), then a field count of -1. Tuples may be split
// across CopyData messages anywhere; the rows go into the same builders,
// batches, staging and commit as the text formats (copyIn).

// copySignature begins a binary COPY file.
var copySignature = []byte("PGCOPY\n\xff\r\n\x00")

// copyBinaryIn parses binary COPY data into a copyIn.
type copyBinaryIn struct {
	c       *copyIn
	buf     []byte // data not parsed yet: a partial header or tuple
	started bool   // the header has been read
	ended   bool   // the trailer has been read
}

func (b *copyBinaryIn) NumColumns() int { return b.c.NumColumns() }

// Binary tells wire/ to announce the binary format in CopyInResponse.
func (b *copyBinaryIn) Binary() bool { return true }

func (b *copyBinaryIn) Write(data []byte) error {
	if b.ended {
		if len(data) > 0 {
			return b.err(sqlerr.BadCopyFileFormat, "received copy data after EOF marker")
		}
		return nil
	}
	b.buf = append(b.buf, data...)
	p := 0
	if !b.started {
		n, err := b.header(b.buf)
		if n == 0 || err != nil {
			return err
		}
		p, b.started = n, true
	}
	for !b.ended {
		n, err := b.tuple(b.buf[p:])
		if err != nil {
			return err
		}
		if n == 0 {
			break
		}
		p += n
	}
	b.buf = append(b.buf[:0], b.buf[p:]...)
	if b.ended && len(b.buf) > 0 {
		return b.err(sqlerr.BadCopyFileFormat, "received copy data after EOF marker")
	}
	return nil
}

// header parses the signature, flags and header extension at the start
// of d: the bytes it took, 0 if d is too short yet.
func (b *copyBinaryIn) header(d []byte) (int, error) {
	if len(d) < len(copySignature)+8 {
		if !bytes.HasPrefix(copySignature, d[:min(len(d), len(copySignature))]) {
			return 0, b.err(sqlerr.BadCopyFileFormat, "COPY file signature not recognized")
		}
		return 0, nil
	}
	if !bytes.HasPrefix(d, copySignature) {
		return 0, b.err(sqlerr.BadCopyFileFormat, "COPY file signature not recognized")
	}
	p := len(copySignature)
	flags := binary.BigEndian.Uint32(d[p:])
	if flags&(1<<16) != 0 {
		return 0, b.err(sqlerr.BadCopyFileFormat, "invalid COPY file header (WITH OIDS)")
	}
	if flags&^(0xffff) != 0 {
		return 0, b.err(sqlerr.BadCopyFileFormat, "unrecognized critical flags in COPY file header")
	}
	ext := int(binary.BigEndian.Uint32(d[p+4:]))
	if ext < 0 {
		return 0, b.err(sqlerr.BadCopyFileFormat, "invalid COPY file header (missing length)")
	}
	if len(d) < p+8+ext {
		return 0, nil
	}
	return p + 8 + ext, nil
}

// tuple parses one tuple (or the trailer) at the start of d into the
// copyIn's builders: the bytes it took, 0 if d does not hold all of it.
func (b *copyBinaryIn) tuple(d []byte) (int, error) {
	c := b.c
	if len(d) < 2 {
		return 0, nil
	}
	count := int(int16(binary.BigEndian.Uint16(d)))
	if count == -1 {
		b.ended = true
		return 2, nil
	}
	// The whole tuple must be here before any of it goes in the builders.
	p := 2
	for range count {
		if len(d) < p+4 {
			return 0, nil
		}
		n := int(int32(binary.BigEndian.Uint32(d[p:])))
		p += 4
		if n > 0 {
			if len(d) < p+n {
				return 0, nil
			}
			p += n
		} else if n < -1 {
			c.line++
			return 0, b.err(sqlerr.BadCopyFileFormat, "invalid field size")
		}
	}
	c.line++
	if count != len(c.cols) {
		return 0, b.err(sqlerr.BadCopyFileFormat, fmt.Sprintf("row field count is %d, expected %d", count, len(c.cols)))
	}
	if c.rows == c.capRows {
		c.growRows()
	}
	q := 2
	for _, col := range c.cols {
		n := int(int32(binary.BigEndian.Uint32(d[q:])))
		q += 4
		if n == -1 {
			if err := c.appendNull(col); err != nil {
				return 0, err
			}
			continue
		}
		f := d[q : q+n]
		q += n
		v, err := types.ParseBinary(f, c.ts[col])
		if err != nil {
			se := sqlerr.As(err)
			return 0, &sqlerr.Error{Code: se.Code, Msg: se.Msg, Hint: se.Hint,
				Detail: fmt.Sprintf("COPY %s, line %d, column %s", c.t.Name, c.line, c.t.Columns[col].Name)}
		}
		if ic := c.ints[col]; ic != nil {
			ic.set(c.rows, v)
			continue
		}
		types.AppendDatum(c.bls[col], v, c.ts[col])
	}
	if len(c.cols) < len(c.t.Columns) {
		for i := range c.t.Columns {
			if !contains(c.cols, i) {
				if err := appendMissing(c, i); err != nil {
					return 0, err
				}
			}
		}
	}
	c.rows++
	c.bytes += p
	return p, c.rowDone()
}

// err is a COPY format error naming the row, as PostgreSQL's does.
func (b *copyBinaryIn) err(code, msg string) error {
	return &sqlerr.Error{Code: code, Msg: msg, Detail: fmt.Sprintf("COPY %s, line %d", b.c.t.Name, b.c.line+1)}
}

func (b *copyBinaryIn) Done() (string, error) {
	if !b.ended {
		// PostgreSQL accepts a file that ends without the trailer only
		// where a tuple would start.
		if !b.started || len(b.buf) > 0 {
			b.c.Abort("")
			return "", b.err(sqlerr.BadCopyFileFormat, "unexpected EOF in COPY data")
		}
	}
	return b.c.Done()
}

func (b *copyBinaryIn) Abort(reason string) { b.c.Abort(reason) }

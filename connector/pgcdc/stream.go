package pgcdc

import (
	"context"
	"fmt"
	"strings"
	"time"

	"github.com/apache/arrow-go/v18/arrow"
	"github.com/apache/arrow-go/v18/arrow/array"
	"github.com/apache/arrow-go/v18/arrow/memory"
	"github.com/jackc/pglogrepl"
	"github.com/jackc/pgx/v5/pgconn"
	"github.com/jackc/pgx/v5/pgproto3"
	"github.com/streamdb/streamdb/connector"
	"github.com/streamdb/streamdb/sqlerr"
	"github.com/streamdb/streamdb/types"
)

// SchemaChanged is a permanent failure: the upstream table's columns are
// no longer those the source was created with.
type SchemaChanged struct{ Msg string }

func (e *SchemaChanged) Error() string { return e.Msg }

// batcher builds a changelog batch: the source's columns, then the op.
type batcher struct {
	t   *Table
	bs  []array.Builder
	ops *array.Int64Builder
	n   int
}

func newBatcher(t *Table) *batcher {
	b := &batcher{t: t, ops: array.NewInt64Builder(memory.DefaultAllocator)}
	for _, c := range t.Cols {
		b.bs = append(b.bs, types.NewBuilder(memory.DefaultAllocator, c.Type))
	}
	return b
}

// add appends one row from upstream text values (indexed like Upstream;
// nil: NULL).
func (b *batcher) add(vals [][]byte, null []bool, op connector.Op) error {
	for i, c := range b.t.Cols {
		j := b.t.idx[i]
		if null[j] {
			b.bs[i].AppendNull()
			continue
		}
		d, err := types.ParseText(string(vals[j]), c.Type)
		if err != nil {
			return fmt.Errorf("column %q: %w", c.Name, err)
		}
		types.AppendDatum(b.bs[i], d, c.Type)
	}
	b.ops.Append(int64(op))
	b.n++
	return nil
}

// take returns the batch so far (nil if empty) and starts a new one.
func (b *batcher) take() arrow.RecordBatch {
	if b.n == 0 {
		return nil
	}
	ts := make([]types.T, 0, len(b.t.Cols)+1)
	cols := make([]arrow.Array, 0, len(b.t.Cols)+1)
	for i, c := range b.t.Cols {
		ts = append(ts, c.Type)
		cols = append(cols, b.bs[i].NewArray())
	}
	ts = append(ts, types.TInt64)
	cols = append(cols, b.ops.NewArray())
	n := b.n
	b.n = 0
	return connector.NewBatch(connector.SchemaOf(ts), cols, n)
}

func (b *batcher) release() {
	for _, x := range b.bs {
		x.Release()
	}
	b.ops.Release()
}

func quoteIdent(s string) string { return `"` + strings.ReplaceAll(s, `"`, `""`) + `"` }

// Snapshot creates the replication slot, reads the table in the snapshot
// the creation exports, and returns the slot's consistent point: the
// stream from there holds exactly the transactions the snapshot lacks.
// emit gets batches of inserts (it owns them). A slot of that name that
// exists already is 42710.
func Snapshot(ctx context.Context, c *Config, t *Table, emit func(arrow.RecordBatch) error) (uint64, error) {
	repl, err := c.connect(ctx, true)
	if err != nil {
		return 0, err
	}
	defer repl.Close(context.Background())
	slot, err := pglogrepl.CreateReplicationSlot(ctx, repl, c.Slot, "pgoutput",
		pglogrepl.CreateReplicationSlotOptions{SnapshotAction: "EXPORT_SNAPSHOT", Mode: pglogrepl.LogicalReplication})
	if err != nil {
		return 0, upstreamErr(err)
	}
	lsn, err := pglogrepl.ParseLSN(slot.ConsistentPoint)
	if err != nil {
		return 0, sqlerr.New(sqlerr.Internal, "replication slot %q: consistent point %q: %v", c.Slot, slot.ConsistentPoint, err)
	}
	ok := false
	defer func() {
		if !ok {
			_ = DropSlot(context.Background(), c)
		}
	}()
	conn, err := c.connect(ctx, false)
	if err != nil {
		return 0, err
	}
	defer conn.Close(context.Background())
	for _, q := range []string{"BEGIN ISOLATION LEVEL REPEATABLE READ READ ONLY",
		"SET TRANSACTION SNAPSHOT '" + slot.SnapshotName + "'"} {
		if err := conn.Exec(ctx, q).Close(); err != nil {
			return 0, upstreamErr(err)
		}
	}
	cols := make([]string, len(t.Upstream))
	for j, u := range t.Upstream {
		cols[j] = quoteIdent(u.Name)
	}
	q := fmt.Sprintf("SELECT %s FROM %s.%s", strings.Join(cols, ", "), quoteIdent(c.Schema), quoteIdent(c.Table))
	rr := conn.ExecParams(ctx, q, nil, nil, nil, nil)
	b := newBatcher(t)
	defer b.release()
	vals := make([][]byte, len(t.Upstream))
	null := make([]bool, len(t.Upstream))
	for rr.NextRow() {
		for j, v := range rr.Values() {
			vals[j], null[j] = v, v == nil
		}
		if err := b.add(vals, null, connector.OpInsert); err != nil {
			rr.Close()
			return 0, err
		}
		if b.n >= 4096 {
			if err := emit(b.take()); err != nil {
				rr.Close()
				return 0, err
			}
		}
	}
	if _, err := rr.Close(); err != nil {
		return 0, upstreamErr(err)
	}
	if rec := b.take(); rec != nil {
		if err := emit(rec); err != nil {
			return 0, err
		}
	}
	if err := conn.Exec(ctx, "COMMIT").Close(); err != nil {
		return 0, upstreamErr(err)
	}
	ok = true
	return uint64(lsn), nil
}

// CheckNoSlot is 42710 if the source's replication slot exists already.
func CheckNoSlot(ctx context.Context, c *Config) error {
	n, err := slotQuery(ctx, c, "SELECT 1 FROM pg_replication_slots WHERE slot_name = $1")
	if err == nil && n > 0 {
		err = sqlerr.New(sqlerr.DuplicateObject, "replication slot \"%s\" already exists", c.Slot)
	}
	return err
}

// DropSlot drops the source's replication slot, if it exists.
func DropSlot(ctx context.Context, c *Config) error {
	_, err := slotQuery(ctx, c, "SELECT pg_drop_replication_slot(slot_name) FROM pg_replication_slots WHERE slot_name = $1")
	return err
}

// slotQuery runs q with the slot's name as $1 on a new connection and
// returns its count of rows.
func slotQuery(ctx context.Context, c *Config, q string) (int, error) {
	conn, err := c.connect(ctx, false)
	if err != nil {
		return 0, err
	}
	defer conn.Close(context.Background())
	res := conn.ExecParams(ctx, q, [][]byte{[]byte(c.Slot)}, nil, nil, nil).Read()
	if res.Err != nil {
		return 0, upstreamErr(res.Err)
	}
	return len(res.Rows), nil
}

// Stream reads the slot's committed transactions.
type Stream struct {
	c       *Config
	t       *Table
	conn    *pgconn.PgConn
	from    uint64 // transactions ending at or before it are already stored
	relID   uint32
	b       *batcher
	inTx    bool
	confirm uint64
	sent    time.Time
}

// OpenStream starts replication from the slot at from (the end LSN of the
// last transaction stored).
func OpenStream(ctx context.Context, c *Config, t *Table, from uint64) (*Stream, error) {
	conn, err := c.connect(ctx, true)
	if err != nil {
		return nil, err
	}
	err = pglogrepl.StartReplication(ctx, conn, c.Slot, pglogrepl.LSN(from), pglogrepl.StartReplicationOptions{
		PluginArgs: []string{"proto_version '1'", "publication_names '" + strings.ReplaceAll(c.Publication, "'", "''") + "'"}})
	if err != nil {
		conn.Close(context.Background())
		return nil, upstreamErr(err)
	}
	return &Stream{c: c, t: t, conn: conn, from: from, confirm: from, b: newBatcher(t)}, nil
}

// Close ends the stream.
func (s *Stream) Close() {
	s.b.release()
	s.conn.Close(context.Background())
}

// Confirm says every transaction ending at or before lsn is durable in
// streamdb: the slot may release the WAL before it.
func (s *Stream) Confirm(lsn uint64) {
	if lsn > s.confirm {
		s.confirm = lsn
	}
}

func (s *Stream) status(ctx context.Context) error {
	lsn := pglogrepl.LSN(s.confirm)
	err := pglogrepl.SendStandbyStatusUpdate(ctx, s.conn, pglogrepl.StandbyStatusUpdate{
		WALWritePosition: lsn, WALFlushPosition: lsn, WALApplyPosition: lsn})
	s.sent = time.Now()
	if err != nil {
		return upstreamErr(err)
	}
	return nil
}

// Next returns the next committed transaction's changes to the table
// (nil if it changed nothing of it) and the LSN it ends at.
func (s *Stream) Next(ctx context.Context) (arrow.RecordBatch, uint64, error) {
	for {
		if time.Since(s.sent) >= statusEvery {
			if err := s.status(ctx); err != nil {
				return nil, 0, err
			}
		}
		rctx, cancel := context.WithDeadline(ctx, s.sent.Add(statusEvery))
		msg, err := s.conn.ReceiveMessage(rctx)
		cancel()
		if err != nil {
			if pgconn.Timeout(err) && ctx.Err() == nil {
				continue
			}
			return nil, 0, upstreamErr(err)
		}
		switch m := msg.(type) {
		case *pgproto3.ErrorResponse:
			return nil, 0, upstreamErr(pgconn.ErrorResponseToPgError(m))
		case *pgproto3.CopyData:
			if len(m.Data) == 0 {
				continue
			}
			switch m.Data[0] {
			case pglogrepl.PrimaryKeepaliveMessageByteID:
				ka, err := pglogrepl.ParsePrimaryKeepaliveMessage(m.Data[1:])
				if err != nil {
					return nil, 0, sqlerr.New("08P01", "replication keepalive: %v", err)
				}
				if ka.ReplyRequested {
					s.sent = time.Time{}
				}
			case pglogrepl.XLogDataByteID:
				xld, err := pglogrepl.ParseXLogData(m.Data[1:])
				if err != nil {
					return nil, 0, sqlerr.New("08P01", "replication data: %v", err)
				}
				rec, end, done, err := s.apply(xld.WALData)
				if err != nil || done {
					return rec, end, err
				}
			}
		}
	}
}

// apply decodes one pgoutput message; done reports a commit.
func (s *Stream) apply(data []byte) (rec arrow.RecordBatch, end uint64, done bool, err error) {
	msg, err := pglogrepl.Parse(data)
	if err != nil {
		return nil, 0, false, sqlerr.New("08P01", "pgoutput message: %v", err)
	}
	switch m := msg.(type) {
	case *pglogrepl.BeginMessage:
		s.inTx = true
	case *pglogrepl.RelationMessage:
		if m.Namespace != s.c.Schema || m.RelationName != s.c.Table {
			return nil, 0, false, nil
		}
		if err := s.checkRelation(m); err != nil {
			return nil, 0, false, err
		}
		s.relID = m.RelationID
	case *pglogrepl.InsertMessage:
		if m.RelationID == s.relID {
			err = s.row(m.Tuple, nil, connector.OpInsert)
		}
	case *pglogrepl.UpdateMessage:
		if m.RelationID == s.relID {
			if m.OldTuple != nil && s.keyChanged(m.OldTuple, m.NewTuple) {
				if err = s.row(m.OldTuple, nil, connector.OpDelete); err != nil {
					break
				}
			}
			err = s.row(m.NewTuple, m.OldTuple, connector.OpUpdateAfter)
		}
	case *pglogrepl.DeleteMessage:
		if m.RelationID == s.relID {
			err = s.row(m.OldTuple, nil, connector.OpDelete)
		}
	case *pglogrepl.TruncateMessage:
		for _, id := range m.RelationIDs {
			if id == s.relID {
				return nil, 0, false, &SchemaChanged{Msg: fmt.Sprintf("upstream table \"%s.%s\" was truncated: connector %s does not follow TRUNCATE; recreate the source", s.c.Schema, s.c.Table, Name)}
			}
		}
	case *pglogrepl.CommitMessage:
		s.inTx = false
		rec := s.b.take()
		end := uint64(m.TransactionEndLSN)
		if end <= s.from {
			if rec != nil {
				rec.Release()
			}
			return nil, 0, false, nil
		}
		return rec, end, true, nil
	}
	return nil, 0, false, err
}

// keyChanged reports whether an update's old key differs from its new one.
func (s *Stream) keyChanged(old, new *pglogrepl.TupleData) bool {
	for _, k := range s.t.Key {
		j := s.t.idx[k]
		if j >= len(old.Columns) || j >= len(new.Columns) {
			return true
		}
		o, n := old.Columns[j], new.Columns[j]
		if o.DataType != n.DataType || string(o.Data) != string(n.Data) {
			return true
		}
	}
	return false
}

// row adds a tuple; an unchanged TOASTed value ('u') is taken from old.
func (s *Stream) row(tup, old *pglogrepl.TupleData, op connector.Op) error {
	if tup == nil {
		return sqlerr.New("08P01", "pgoutput: a change without a tuple")
	}
	n := len(s.t.Upstream)
	vals := make([][]byte, n)
	null := make([]bool, n)
	for j := range n {
		if j >= len(tup.Columns) {
			null[j] = true
			continue
		}
		col := tup.Columns[j]
		switch col.DataType {
		case 'n':
			null[j] = true
		case 'u':
			if old == nil || j >= len(old.Columns) || old.Columns[j].DataType != 't' {
				if !s.needed(j) {
					null[j] = true
					continue
				}
				return &SchemaChanged{Msg: fmt.Sprintf("upstream table \"%s.%s\": an UPDATE left TOASTed column %q unchanged and sent no old value; set REPLICA IDENTITY FULL on the table", s.c.Schema, s.c.Table, s.t.Upstream[j].Name)}
			}
			vals[j] = old.Columns[j].Data
		default:
			vals[j] = col.Data
		}
	}
	// A delete carries only the key (REPLICA IDENTITY DEFAULT): the
	// runtime fills the rest from the row it holds.
	if err := s.b.add(vals, null, op); err != nil {
		return sqlerr.New("22P02", "upstream table \"%s.%s\": %v", s.c.Schema, s.c.Table, err)
	}
	return nil
}

func (s *Stream) needed(j int) bool {
	for _, x := range s.t.idx {
		if x == j {
			return true
		}
	}
	return false
}

// checkRelation fails the stream when the upstream columns changed.
func (s *Stream) checkRelation(m *pglogrepl.RelationMessage) error {
	same := len(m.Columns) == len(s.t.Upstream)
	var now []string
	for j, c := range m.Columns {
		now = append(now, fmt.Sprintf("%s (oid %d)", c.Name, c.DataType))
		if same && (c.Name != s.t.Upstream[j].Name || c.DataType != s.t.Upstream[j].OID || c.TypeModifier != s.t.Upstream[j].Typmod) {
			same = false
		}
	}
	if same {
		return nil
	}
	var was []string
	for _, u := range s.t.Upstream {
		was = append(was, fmt.Sprintf("%s (oid %d)", u.Name, u.OID))
	}
	return &SchemaChanged{Msg: fmt.Sprintf("upstream table \"%s.%s\" changed its columns from [%s] to [%s]: connector %s does not follow schema changes; recreate the source",
		s.c.Schema, s.c.Table, strings.Join(was, ", "), strings.Join(now, ", "), Name)}
}

package postgres

import (
	"context"
	"errors"
	"io"
	"strconv"
	"strings"
	"sync"

	"github.com/apache/arrow-go/v18/arrow"
	"github.com/jackc/pgx/v5"
	"github.com/streamdb/streamdb/connector"
	"github.com/streamdb/streamdb/sqlerr"
	"github.com/streamdb/streamdb/types"
)

// stageTable is the sink connection's temporary staging table (upsert).
const stageTable = "streamdb_stage"

// pgSink is the PostgreSQL connector of a sink.
type pgSink struct {
	spec connector.SinkSpec
	o    opts
	gen  string
	ts   []types.T
	conn *pgx.Conn
	t    *target
	tx   pgx.Tx // the transaction Write began, Commit ends
	// sql are the statements of a transaction, built once per connection.
	sql struct{ copyTarget, copyStage, lock, progress, del, upsert, resyncDel string }
}

// NewSink makes the PostgreSQL connector of a sink, which the runtime drives.
func NewSink(spec connector.SinkSpec) (connector.TwoPhaseSink, error) {
	o, err := parseOpts(spec.Options)
	if err != nil {
		return nil, err
	}
	s := &pgSink{spec: spec, o: o, gen: spec.Options[connector.SinkGenOption]}
	for _, c := range spec.Columns {
		s.ts = append(s.ts, c.Type)
	}
	return s, nil
}

// Recover connects, finds the table again (it may have changed while the
// sink was away), creates the staging table and reads the sink's
// committed position from the progress table. A transaction an earlier
// incarnation left open died with its connection: PostgreSQL rolled it
// back.
func (s *pgSink) Recover(ctx context.Context) (uint64, bool, error) {
	s.Close()
	conn, err := connect(ctx, s.o)
	if err != nil {
		return 0, false, err
	}
	s.conn = conn
	t, err := describe(ctx, conn, s.o, s.spec.View, s.spec.Columns, s.spec.KeyCols)
	if err != nil {
		return 0, false, err
	}
	s.t = t
	if err := ensureProgress(ctx, conn, t.schema); err != nil {
		return 0, false, err
	}
	s.buildSQL()
	if s.o.typ == typeUpsert {
		defs := []string{"__seq bigint", "__op smallint"}
		for i, c := range t.cols {
			defs = append(defs, c+" "+t.colTypes[i])
		}
		if _, err := conn.Exec(ctx, "CREATE TEMP TABLE "+stageTable+" ("+strings.Join(defs, ", ")+") ON COMMIT DELETE ROWS"); err != nil {
			return 0, false, opError("create the staging table", err)
		}
	}
	var gen string
	var pos int64
	err = conn.QueryRow(ctx, "SELECT gen, position FROM "+t.schema+"."+ProgressTable+" WHERE sink_name = $1 AND sink_id = $2",
		s.spec.Name, int64(s.spec.ID)).Scan(&gen, &pos)
	switch {
	case errors.Is(err, pgx.ErrNoRows):
		if s.o.typ == typeAppend && s.gen != "" {
			return s.appendResume(false, 0)
		}
		return 0, false, nil
	case err != nil:
		return 0, false, opError("read "+ProgressTable, err)
	case gen == s.gen:
		return uint64(pos), true, nil
	case s.o.typ == typeAppend:
		return s.appendResume(true, uint64(pos))
	}
	return 0, false, nil // an earlier generation's: upsert resyncs
}

// appendResume is where an append sink goes on after RESTORE of its view:
// an appended row cannot be taken back, so, as Kafka's 'json' sink does,
// from where its previous generation got to (the progress row), so no
// change is skipped; else from where the restore began.
func (s *pgSink) appendResume(found bool, pos uint64) (uint64, bool, error) {
	if found {
		return pos, true, nil
	}
	if p, ok, err := s.spec.StoredPosition(); err != nil || ok {
		return p, ok, err
	}
	from, err := strconv.ParseUint(s.spec.Options[connector.SinkFromOption], 10, 64)
	if err != nil {
		return 0, false, sqlerr.New(sqlerr.DataCorrupted, "sink %s: no changelog position for generation %s", s.spec.Name, s.gen)
	}
	return from, true, nil
}

func (s *pgSink) buildSQL() {
	t := s.t
	cols := strings.Join(t.cols, ", ")
	prog := t.schema + "." + ProgressTable
	s.sql.copyTarget = "COPY " + t.name + " (" + cols + ") FROM STDIN"
	s.sql.copyStage = "COPY " + stageTable + " (__seq, __op, " + cols + ") FROM STDIN"
	s.sql.lock = "SELECT gen, position FROM " + prog + " WHERE sink_name = $1 AND sink_id = $2 FOR UPDATE"
	s.sql.progress = "INSERT INTO " + prog + " (sink_name, sink_id, gen, position) VALUES ($1, $2, $3, $4) " +
		"ON CONFLICT (sink_name, sink_id) DO UPDATE SET gen = EXCLUDED.gen, position = EXCLUDED.position, committed_at = now()"
	if s.o.typ != typeUpsert {
		return
	}
	var keys, keyMatch, rowMatch, sets, sel []string
	isKey := map[int]bool{}
	for _, k := range t.keys {
		keys = append(keys, t.cols[k])
		keyMatch = append(keyMatch, "t."+t.cols[k]+" IS NOT DISTINCT FROM s."+t.cols[k])
		isKey[k] = true
	}
	for i, c := range t.cols {
		rowMatch = append(rowMatch, "t."+c+" IS NOT DISTINCT FROM s."+c)
		sel = append(sel, "s."+c)
		if !isKey[i] {
			sets = append(sets, c+" = EXCLUDED."+c)
		}
	}
	k := strings.Join(keys, ", ")
	// A transaction's net change per row: each row's inserts less its
	// deletes (an update's before-image is a delete), so the result does
	// not hang on the order of a key's changes (a top-N may insert a
	// rank's new row before it deletes the old one).
	net := "(SELECT " + cols + ", sum(CASE WHEN __op = 1 THEN 1 ELSE -1 END) AS __n, max(__seq) AS __seq FROM " + stageTable +
		" GROUP BY " + cols + ") s"
	// A row deleted goes only if the table still holds it as it was: a
	// row of its key the same transaction (or an earlier one) wrote stays.
	s.sql.del = "DELETE FROM " + t.name + " t USING " + net + " WHERE s.__n < 0 AND " + strings.Join(rowMatch, " AND ")
	conflict := "DO NOTHING"
	if len(sets) > 0 {
		conflict = "DO UPDATE SET " + strings.Join(sets, ", ")
	}
	s.sql.upsert = "INSERT INTO " + t.name + " (" + cols + ") SELECT DISTINCT ON (" + strings.Join(keysOf("s.", keys), ", ") + ") " +
		strings.Join(sel, ", ") + " FROM " + net + " WHERE s.__n > 0 ORDER BY " + strings.Join(keysOf("s.", keys), ", ") +
		", s.__seq DESC ON CONFLICT (" + k + ") " + conflict
	s.sql.resyncDel = "DELETE FROM " + t.name + " t WHERE NOT EXISTS (SELECT 1 FROM " + stageTable + " s WHERE " +
		strings.Join(keyMatch, " AND ") + ")"
}

func keysOf(prefix string, keys []string) []string {
	out := make([]string, len(keys))
	for i, k := range keys {
		out[i] = prefix + k
	}
	return out
}

// Write writes t in a new PostgreSQL transaction, with the sink's
// progress row set to the changelog position t ends at; Commit commits it.
func (s *pgSink) Write(ctx context.Context, t *connector.SinkTxn) (int, error) {
	if s.conn == nil || s.t == nil {
		return 0, sqlerr.New(sqlerr.ConnectionException, "postgres sink %s: not connected", s.spec.Name)
	}
	tx, err := s.conn.Begin(ctx)
	if err != nil {
		return 0, opError("begin", err)
	}
	s.tx = tx
	n, err := s.write(ctx, tx, t)
	if err != nil {
		_ = tx.Rollback(context.Background())
		s.tx = nil
		return 0, err
	}
	return n, nil
}

func (s *pgSink) write(ctx context.Context, tx pgx.Tx, t *connector.SinkTxn) (int, error) {
	// The progress row, locked: a concurrent incarnation (there should be
	// none) waits, and a position that is not where t starts means the
	// runtime and PostgreSQL disagree, which must not be papered over.
	var gen string
	var pos int64
	err := tx.QueryRow(ctx, s.sql.lock, s.spec.Name, int64(s.spec.ID)).Scan(&gen, &pos)
	switch {
	case errors.Is(err, pgx.ErrNoRows):
	case err != nil:
		return 0, opError("lock "+ProgressTable, err)
	case gen == s.gen && !t.Snapshot && uint64(pos) != t.From:
		return 0, sqlerr.New(sqlerr.DataCorrupted, "postgres sink %s: %s says position %d, and the transaction starts at %d",
			s.spec.Name, ProgressTable, pos, t.From)
	}
	enc := &copyEncoder{ts: s.ts, upsert: s.o.typ == typeUpsert, snapshot: t.Snapshot, sink: s.spec.Name, view: s.spec.View}
	stmt := s.sql.copyTarget
	if enc.upsert {
		stmt = s.sql.copyStage
	}
	n, err := s.copy(ctx, tx, stmt, t, enc)
	if err != nil {
		return 0, err
	}
	if enc.upsert {
		if t.Snapshot && t.Resync {
			if _, err := tx.Exec(ctx, s.sql.resyncDel); err != nil {
				return 0, opError("delete the rows the view no longer has", err)
			}
		}
		if _, err := tx.Exec(ctx, s.sql.del); err != nil {
			return 0, opError("apply deletes to "+s.t.name, err)
		}
		if _, err := tx.Exec(ctx, s.sql.upsert); err != nil {
			return 0, opError("upsert into "+s.t.name, err)
		}
	}
	if _, err := tx.Exec(ctx, s.sql.progress, s.spec.Name, int64(s.spec.ID), s.gen, int64(t.To)); err != nil {
		return 0, opError("update "+ProgressTable, err)
	}
	return n, nil
}

// copy streams t's rows, encoded by enc, into COPY stmt.
func (s *pgSink) copy(ctx context.Context, tx pgx.Tx, stmt string, t *connector.SinkTxn, enc *copyEncoder) (int, error) {
	pr, pw := io.Pipe()
	var (
		wg   sync.WaitGroup
		rerr error
	)
	wg.Add(1)
	go func() {
		defer wg.Done()
		rerr = t.Rows(ctx, func(rec arrow.RecordBatch) error {
			if err := enc.add(rec); err != nil {
				return err
			}
			_, err := pw.Write(enc.buf)
			return err
		})
		pw.CloseWithError(rerr)
	}()
	_, err := tx.Conn().PgConn().CopyFrom(ctx, pr, stmt)
	pr.CloseWithError(io.ErrClosedPipe) // unblocks the writer if COPY stopped early
	wg.Wait()
	if rerr != nil && !errors.Is(rerr, io.ErrClosedPipe) {
		return 0, rerr
	}
	if err != nil {
		return 0, opError("copy into "+s.t.name, err)
	}
	return enc.rows, nil
}

// Commit commits the transaction Write began.
func (s *pgSink) Commit(ctx context.Context) error {
	if s.tx == nil {
		return nil
	}
	tx := s.tx
	s.tx = nil
	if err := tx.Commit(ctx); err != nil {
		return opError("commit", err)
	}
	return nil
}

// Check makes sure the database is there.
func (s *pgSink) Check(ctx context.Context) error {
	if s.conn == nil {
		return sqlerr.New(sqlerr.ConnectionException, "postgres sink %s: not connected", s.spec.Name)
	}
	return opError("ping", s.conn.Ping(ctx))
}

// Close closes the connection; PostgreSQL rolls back an open transaction.
func (s *pgSink) Close() {
	if s.conn != nil {
		_ = s.conn.Close(context.Background())
		s.conn, s.tx = nil, nil
	}
}

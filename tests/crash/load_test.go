package crash

import (
	"bytes"
	"context"
	"errors"
	"fmt"
	"maps"
	"slices"
	"strconv"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/jackc/pgx/v5"
	"github.com/jackc/pgx/v5/pgconn"
	"github.com/streamdb/streamdb/tests/sqllogic"
)

// The load tests share one schema: a stream of rows with unique ids and two
// views over it, one grouped and one global.
const (
	loadKeys  = 64 // distinct group keys
	viewByKey = "mv"
	viewTotal = "mv_total"
	// viewRows holds the stream's rows without aggregation (keyed by their
	// stream position), viewOverRows aggregates it through its changelog.
	viewRows     = "mv_rows"
	viewOverRows = "mv_rows_by_k"
	// viewJoin joins t with a stream of its keys, viewJoinAgg joins the
	// grouped view with it (retractions), viewTop is a top-N over t.
	viewJoin    = "mv_join"
	viewJoinAgg = "mv_join_agg"
	viewTop     = "mv_top"
	// viewSemi keeps t's rows whose key is in d (all are), viewUnion is t's
	// rows UNION ALL none (v is never negative): both equal t.
	viewSemi  = "mv_semi"
	viewUnion = "mv_union"
	topQuery  = "SELECT id, v FROM t ORDER BY v DESC, id LIMIT 5"
)

// How the load clients write: INSERTs of insertRows rows or COPYs of
// copyRows rows (more volume, so jobs fall behind and barriers queue).
type ingestKind struct {
	copy bool
	rows uint32 // rows per statement
}

var (
	insertLoad = ingestKind{copy: false, rows: 100}
	copyLoad   = ingestKind{copy: true, rows: 10_000}
)

// loader runs concurrent clients that INSERT (or COPY) batches into t,
// reconnecting across crashes and restarts, and records each batch's
// outcome. Row ids are client<<32 | seq, and a row's k and v derive from its
// id, so a batch is recorded as a range of seqs.
type loader struct {
	connStr string
	seed    uint64
	kind    ingestKind
	stopped chan struct{}
	wg      sync.WaitGroup

	mu struct {
		sync.Mutex
		batches []batch
		next    []uint32 // per client: the next seq it will use
		acked   int64    // rows acknowledged
		errs    map[string]int
		bad     []string // errors that are not explained by a crash or stop
	}
}

// batch is one statement's rows: seqs [first, first+n) of client.
type batch struct {
	client int
	first  uint32
	n      uint32
	acked  bool // CommandComplete arrived; otherwise the outcome is unknown
}

func rowID(client int, seq uint32) int64 { return int64(client)<<32 | int64(seq) }

// row returns the k and v of the row with the given id.
func (l *loader) row(id int64) (k, v int64) {
	h := mix(l.seed ^ uint64(id))
	return int64(h % loadKeys), int64(h>>32%100) + 1
}

// startLoader starts n clients writing into t at connStr.
func startLoader(connStr string, seed uint64, kind ingestKind, n int) *loader {
	l := &loader{connStr: connStr, seed: seed, kind: kind, stopped: make(chan struct{})}
	l.mu.next = make([]uint32, n)
	l.mu.errs = map[string]int{}
	for c := range n {
		l.wg.Add(1)
		go l.client(c)
	}
	return l
}

// stop ends the load and waits until every client has its last outcome.
func (l *loader) stop() {
	close(l.stopped)
	l.wg.Wait()
}

func (l *loader) isStopped() bool {
	select {
	case <-l.stopped:
		return true
	default:
		return false
	}
}

// ackedRows is how many rows have been acknowledged so far.
func (l *loader) ackedRows() int64 {
	l.mu.Lock()
	defer l.mu.Unlock()
	return l.mu.acked
}

func (l *loader) client(c int) {
	defer l.wg.Done()
	var conn *pgconn.PgConn
	defer func() {
		if conn != nil {
			conn.Close(context.Background())
		}
	}()
	var buf []byte
	var seq uint32
	for !l.isStopped() {
		if conn == nil {
			ctx, cancel := context.WithTimeout(context.Background(), 2*time.Second)
			cn, err := pgconn.Connect(ctx, l.connStr)
			cancel()
			if err != nil { // down or restarting: retry
				time.Sleep(10 * time.Millisecond)
				continue
			}
			conn = cn
		}
		buf = l.statement(buf[:0], c, seq)
		ctx, cancel := context.WithTimeout(context.Background(), stmtTimeout)
		var tag pgconn.CommandTag
		var err error
		if l.kind.copy {
			tag, err = conn.CopyFrom(ctx, bytes.NewReader(buf), "COPY t FROM STDIN")
		} else {
			var res []*pgconn.Result
			if res, err = conn.Exec(ctx, string(buf)).ReadAll(); err == nil {
				tag = res[0].CommandTag
			}
		}
		cancel()
		if err == nil && tag.RowsAffected() != int64(l.kind.rows) {
			err = fmt.Errorf("%w: command tag %q for %d rows", errBadTag, tag, l.kind.rows)
		}
		l.record(batch{client: c, first: seq, n: l.kind.rows, acked: err == nil}, err)
		seq += l.kind.rows
		if err != nil {
			conn.Close(context.Background())
			conn = nil
		}
	}
}

// statement appends to buf the rows of client c from seq on, as an INSERT
// statement or as COPY text data.
func (l *loader) statement(buf []byte, c int, seq uint32) []byte {
	if !l.kind.copy {
		buf = append(buf, "INSERT INTO t VALUES "...)
	}
	for i := range l.kind.rows {
		id := rowID(c, seq+i)
		k, v := l.row(id)
		sep := byte('\t')
		if !l.kind.copy {
			if i > 0 {
				buf = append(buf, ',')
			}
			buf = append(buf, '(')
			sep = ','
		}
		buf = strconv.AppendInt(buf, id, 10)
		buf = append(buf, sep)
		buf = strconv.AppendInt(buf, k, 10)
		buf = append(buf, sep)
		buf = strconv.AppendInt(buf, v, 10)
		if l.kind.copy {
			buf = append(buf, '\n')
		} else {
			buf = append(buf, ')')
		}
	}
	return buf
}

func (l *loader) record(b batch, err error) {
	l.mu.Lock()
	defer l.mu.Unlock()
	l.mu.batches = append(l.mu.batches, b)
	l.mu.next[b.client] = b.first + b.n
	if b.acked {
		l.mu.acked += int64(b.n)
		return
	}
	kind, bad := classify(err)
	l.mu.errs[kind]++
	if bad && len(l.mu.bad) < 10 {
		l.mu.bad = append(l.mu.bad, err.Error())
	}
}

var errBadTag = errors.New("statement succeeded with a wrong row count")

// classify names a statement's error for the log and says whether a crash or
// a shutdown fails to explain it: a statement that hangs until its timeout,
// or an ERROR other than a cancellation, shutdown or connection error.
func classify(err error) (kind string, bad bool) {
	var pe *pgconn.PgError
	switch {
	case errors.Is(err, errBadTag):
		return "wrong command tag", true
	case pgconn.Timeout(err):
		return "timeout", true
	case errors.As(err, &pe):
		class := pe.Code[:2]
		return pe.Severity + " " + pe.Code, class != "57" && class != "08"
	default:
		return "connection lost", false
	}
}

// verify waits until the jobs have caught up and checks every guarantee:
// the stream holds each acknowledged batch exactly once and each batch of
// unknown outcome whole or not at all; the batch queries agree with the
// stored rows; the views equal them (exact) or are never below them
// (at-least-once). It returns whether a view counted rows twice.
func (l *loader) verify(t *testing.T, conn *pgx.Conn, exact bool) (duplicates bool) {
	t.Helper()
	l.mu.Lock()
	if len(l.mu.bad) > 0 {
		t.Errorf("statements failed in ways a crash does not explain: %q", l.mu.bad)
	}
	var acked, unknown int
	for _, b := range l.mu.batches {
		if b.acked {
			acked++
		} else {
			unknown++
		}
	}
	t.Logf("load: %d batches acknowledged (%d rows), %d of unknown outcome; errors: %v",
		acked, l.mu.acked, unknown, l.mu.errs)
	l.mu.Unlock()

	var views []string
	for _, j := range showJobs(t, conn) {
		views = append(views, j.name)
	}
	waitCaughtUp(t, conn, views...)
	stored := l.storedRows(t, conn)

	// The truth is what the stream holds, computed here from the ids.
	truth := aggs{}
	for c, seqs := range stored {
		for seq, n := range seqs {
			k, v := l.row(rowID(c, uint32(seq)))
			for range n {
				truth.add(k, v)
			}
		}
	}
	total := aggs{0: truth.total()}
	if d := diff(truth, queryAggs(t, conn, "SELECT k, count(*), sum(v) FROM t GROUP BY k")); d != "" {
		t.Errorf("batch query over t disagrees with the rows stored in t: %s", d)
	}
	if d := diff(total, queryAggs(t, conn, "SELECT count(*), sum(v) FROM t")); d != "" {
		t.Errorf("global batch query over t disagrees with the rows stored in t: %s", d)
	}
	for _, v := range []struct {
		name  string
		query string
		want  aggs
	}{
		{viewByKey, "SELECT k, c, s FROM " + viewByKey, truth},
		{viewTotal, "SELECT c, s FROM " + viewTotal, total},
		{viewRows, "SELECT k, count(*), sum(v) FROM " + viewRows + " GROUP BY k", truth},
		{viewOverRows, "SELECT k, c, s FROM " + viewOverRows, truth},
		{viewJoin, "SELECT k, count(*), sum(v) FROM " + viewJoin + " GROUP BY k", truth},
		{viewJoinAgg, "SELECT k, c, s FROM " + viewJoinAgg, truth},
		{viewSemi, "SELECT k, count(*), sum(v) FROM " + viewSemi + " GROUP BY k", truth},
		{viewUnion, "SELECT k, count(*), sum(v) FROM " + viewUnion + " GROUP BY k", truth},
	} {
		if !slices.Contains(views, v.name) {
			continue
		}
		got := queryAggs(t, conn, v.query)
		d := diff(v.want, got)
		if d == "" {
			continue
		}
		if exact {
			t.Errorf("view %s after crash and catch-up differs from the batch query over the stored rows: %s", v.name, d)
			continue
		}
		duplicates = true
		for _, k := range slices.Sorted(maps.Keys(v.want)) {
			if w, g := v.want[k], got[k]; g.c < w.c || g.s < w.s {
				t.Errorf("at_least_once view %s lost rows: group %d has count %d sum %d, want at least count %d sum %d",
					v.name, k, g.c, g.s, w.c, w.s)
			}
		}
		wt, gt := v.want.total(), got.total()
		t.Logf("at_least_once view %s counted %d rows twice after the crashes (count %d, the stream holds %d)",
			v.name, gt.c-wt.c, gt.c, wt.c)
	}
	if exact && slices.Contains(views, viewTop) {
		want, got := topRows(t, conn, topQuery), topRows(t, conn, "SELECT id, v FROM "+viewTop)
		if !slices.Equal(want, got) {
			t.Errorf("view %s after crash and catch-up is %v; the batch query %s gives %v", viewTop, got, topQuery, want)
		}
	}
	return duplicates
}

// topRows returns the (id, v) rows of q as sorted text.
func topRows(t *testing.T, conn *pgx.Conn, q string) []string {
	t.Helper()
	rows, err := conn.Query(context.Background(), q)
	if err != nil {
		t.Fatalf("%s: %v", q, err)
	}
	var out []string
	for rows.Next() {
		var id, v int64
		if err := rows.Scan(&id, &v); err != nil {
			t.Fatal(err)
		}
		out = append(out, fmt.Sprintf("(%d, %d)", id, v))
	}
	if err := rows.Err(); err != nil {
		t.Fatalf("%s: %v", q, err)
	}
	slices.Sort(out)
	return out
}

// storedRows reads the stream and returns, per client, how often each seq
// is stored. It fails the test for rows no client sent or whose values do
// not match their id, for acknowledged rows stored other than once, and for
// batches of unknown outcome stored more than once or in part.
func (l *loader) storedRows(t *testing.T, conn *pgx.Conn) [][]uint8 {
	t.Helper()
	l.mu.Lock()
	defer l.mu.Unlock()
	stored := make([][]uint8, len(l.mu.next))
	for c, n := range l.mu.next {
		stored[c] = make([]uint8, n)
	}
	ctx, cancel := context.WithTimeout(context.Background(), stmtTimeout)
	defer cancel()
	rows, err := conn.Query(ctx, "SELECT id, k, v FROM t")
	if err != nil {
		t.Fatalf("SELECT id, k, v FROM t: %v", err)
	}
	var problems []string
	report := func(format string, args ...any) {
		if len(problems) < 20 {
			problems = append(problems, fmt.Sprintf(format, args...))
		}
	}
	var n int64
	for rows.Next() {
		var id, k, v int64
		if err := rows.Scan(&id, &k, &v); err != nil {
			t.Fatalf("SELECT id, k, v FROM t: scan: %v", err)
		}
		n++
		c, seq := int(id>>32), uint32(id)
		if c < 0 || c >= len(stored) || seq >= uint32(len(stored[c])) {
			report("row id %d was never sent", id)
			continue
		}
		if wk, wv := l.row(id); k != wk || v != wv {
			report("row id %d stored as (k=%d, v=%d), sent as (k=%d, v=%d)", id, k, v, wk, wv)
		}
		if stored[c][seq] < 255 {
			stored[c][seq]++
		}
	}
	if err := rows.Err(); err != nil {
		t.Fatalf("SELECT id, k, v FROM t: %v", err)
	}
	var lost, dup, torn int
	for _, b := range l.mu.batches {
		var present uint32
		for seq := b.first; seq < b.first+b.n; seq++ {
			switch cnt := stored[b.client][seq]; {
			case cnt > 1:
				dup++
				report("row id %d (batch acked=%v) stored %d times", rowID(b.client, seq), b.acked, cnt)
			case cnt == 0 && b.acked:
				lost++
				report("acknowledged row id %d is not in the stream", rowID(b.client, seq))
			}
			if stored[b.client][seq] > 0 {
				present++
			}
		}
		if !b.acked && present != 0 && present != b.n {
			torn++
			report("statement writing ids %d..%d (outcome unknown) is stored in part: %d of %d rows",
				rowID(b.client, b.first), rowID(b.client, b.first+b.n-1), present, b.n)
		}
	}
	t.Logf("stream holds %d rows", n)
	if len(problems) > 0 {
		t.Errorf("stream contents break the ingest guarantee (%d acknowledged rows lost, %d rows duplicated, %d statements torn):\n  %s",
			lost, dup, torn, strings.Join(problems, "\n  "))
	}
	return stored
}

// loadServer starts a server (extra flags args), runs setup (SET
// statements) and creates the load tests' stream with the given partitions.
func loadServer(t *testing.T, args []string, partitions int, setup ...string) (*sqllogic.Server, *pgx.Conn) {
	t.Helper()
	srv := sqllogic.StartServer(t, "", args...)
	conn := srv.Conn(t)
	for _, s := range setup {
		exec(t, conn, s)
	}
	exec(t, conn, fmt.Sprintf("CREATE TABLE t (id BIGINT, k BIGINT, v BIGINT) WITH (partitions = %d)", partitions))
	return srv, conn
}

// createViews creates the load tests' views over t: two aggregates, a view
// of its rows without aggregation and an aggregate over that view, joins
// of t and of its grouped view with a stream of its keys, and a top-N.
// verify checks every one of them that exists.
func createViews(t *testing.T, conn *pgx.Conn) {
	t.Helper()
	createAggViews(t, conn)
	exec(t, conn, "CREATE MATERIALIZED VIEW "+viewRows+" AS SELECT id, k, v FROM t")
	exec(t, conn, "CREATE MATERIALIZED VIEW "+viewOverRows+" AS SELECT k, count(*) AS c, sum(v) AS s FROM "+viewRows+" GROUP BY k")
	exec(t, conn, "CREATE TABLE d (k BIGINT, w BIGINT)")
	var keys []string
	for k := range loadKeys {
		keys = append(keys, fmt.Sprintf("(%d, %d)", k, k*10))
	}
	exec(t, conn, "INSERT INTO d VALUES "+strings.Join(keys, ", "))
	exec(t, conn, "CREATE MATERIALIZED VIEW "+viewJoin+" AS SELECT t.id, t.k, t.v, d.w FROM t JOIN d ON t.k = d.k")
	exec(t, conn, "CREATE MATERIALIZED VIEW "+viewJoinAgg+" AS SELECT m.k, m.c, m.s, d.w FROM "+viewByKey+" m JOIN d ON m.k = d.k")
	exec(t, conn, "CREATE MATERIALIZED VIEW "+viewTop+" AS "+topQuery)
	exec(t, conn, "CREATE MATERIALIZED VIEW "+viewSemi+" AS SELECT id, k, v FROM t WHERE k IN (SELECT k FROM d)")
	exec(t, conn, "CREATE MATERIALIZED VIEW "+viewUnion+" AS SELECT id, k, v FROM t UNION ALL SELECT id, k, v FROM t WHERE v < 0")
}

// createAggViews creates the two aggregate views only.
func createAggViews(t *testing.T, conn *pgx.Conn) {
	t.Helper()
	exec(t, conn, "CREATE MATERIALIZED VIEW "+viewByKey+" AS SELECT k, count(*) AS c, sum(v) AS s FROM t GROUP BY k")
	exec(t, conn, "CREATE MATERIALIZED VIEW "+viewTotal+" AS SELECT count(*) AS c, sum(v) AS s FROM t")
}

// checkNotAhead checks, while load goes on, that no view group counts more
// rows than the stream holds for it: a view read before the batch query
// can only be behind it, never ahead (ahead means rows counted twice).
func checkNotAhead(t *testing.T, conn *pgx.Conn, when string) {
	t.Helper()
	views := []aggs{
		queryAggs(t, conn, "SELECT k, c, s FROM "+viewByKey),
		queryAggs(t, conn, "SELECT c, s FROM "+viewTotal),
	}
	batches := []aggs{
		queryAggs(t, conn, "SELECT k, count(*), sum(v) FROM t GROUP BY k"),
		queryAggs(t, conn, "SELECT count(*), sum(v) FROM t"),
	}
	for i, name := range []string{viewByKey, viewTotal} {
		for k, g := range views[i] {
			if b := batches[i][k]; g.c > b.c || g.s > b.s {
				t.Errorf("%s: view %s group %d has count %d sum %d, more than the stream then held (count %d sum %d)",
					when, name, k, g.c, g.s, b.c, b.s)
			}
		}
	}
}

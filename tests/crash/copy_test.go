package crash

import (
	"context"
	"errors"
	"fmt"
	"io"
	"os"
	"path/filepath"
	"strconv"
	"testing"
	"time"

	"github.com/jackc/pgx/v5"
	"github.com/jackc/pgx/v5/pgconn"
	"github.com/streamdb/streamdb/storage"
	"github.com/streamdb/streamdb/tests/sqllogic"
)

const (
	copyRows  = 1_000_000
	copyBatch = 50_000 // rows per COPY statement
	copyKeys  = 1000
	copyChunk = 5000 // rows between the pauses of a paced COPY
)

// copyRow returns the k and v of row i of the COPY test's input.
func copyRow(seed uint64, i int) (k, v int64) {
	h := mix(seed ^ uint64(i))
	return int64(h % copyKeys), int64(h>>32%1000) - 500
}

// copyTruth aggregates rows [0, n) of the input.
func copyTruth(seed uint64, n int) aggs {
	a := aggs{}
	for i := range n {
		a.add(copyRow(seed, i))
	}
	return a
}

var errKilled = errors.New("server was killed")

// copyReader produces rows [next, end) of the input in COPY text format,
// sleeping pace before each chunk of copyChunk rows. At row pause (if in
// range) it closes paused and blocks until resume is closed, then fails: the
// server is killed with the COPY half sent.
type copyReader struct {
	seed        uint64
	next, end   int
	pace        time.Duration
	pause       int
	paused      chan<- struct{}
	resume      <-chan struct{}
	buf, unread []byte
}

func (r *copyReader) Read(p []byte) (int, error) {
	if len(r.unread) == 0 {
		if r.next == r.end {
			return 0, io.EOF
		}
		if r.next == r.pause {
			close(r.paused)
			<-r.resume
			return 0, errKilled
		}
		if r.next%copyChunk == 0 {
			time.Sleep(r.pace)
		}
		stop := min(r.end, r.next+1000)
		if r.next < r.pause && r.pause < stop {
			stop = r.pause
		}
		r.buf = r.buf[:0]
		for ; r.next < stop; r.next++ {
			k, v := copyRow(r.seed, r.next)
			r.buf = strconv.AppendInt(r.buf, k, 10)
			r.buf = append(r.buf, '\t')
			r.buf = strconv.AppendInt(r.buf, v, 10)
			r.buf = append(r.buf, '\n')
		}
		r.unread = r.buf
	}
	n := copy(p, r.unread)
	r.unread = r.unread[n:]
	return n, nil
}

// ingest COPYs batches [from, copyRows/copyBatch), pacing batch b with
// pace[b] (if given), and returns how many batches in all are acknowledged;
// pause is passed to the readers.
func ingest(connStr string, seed uint64, from int, pace []time.Duration, pause int, paused chan<- struct{}, resume <-chan struct{}) (int, error) {
	ctx, cancel := context.WithTimeout(context.Background(), 2*time.Minute)
	defer cancel()
	conn, err := pgconn.Connect(ctx, connStr)
	if err != nil {
		return from, err
	}
	defer conn.Close(context.Background())
	for b := from; b < copyRows/copyBatch; b++ {
		r := &copyReader{seed: seed, next: b * copyBatch, end: (b + 1) * copyBatch, pause: pause, paused: paused, resume: resume}
		if b < len(pace) {
			r.pace = pace[b]
		}
		tag, err := conn.CopyFrom(ctx, r, "COPY t FROM STDIN")
		if err != nil {
			return b, fmt.Errorf("COPY batch %d: %w", b, err)
		}
		if want := fmt.Sprintf("COPY %d", copyBatch); tag.String() != want {
			return b, fmt.Errorf("COPY batch %d: tag %q, want %q", b, tag, want)
		}
	}
	return copyRows / copyBatch, nil
}

// TestKill9DuringCopy is Flink's recovery scenario: a view counts 1M rows
// arriving by COPY, the server is killed with -9 at a random row 40–70 % of
// the way through (with a COPY half sent, after at least one checkpoint of
// the view completed), restarted, and once the job has caught up the view
// equals the acknowledged input exactly; so does the batch query over the
// stream. Ingest then resumes with the batch the crash cut off, and at the
// end the view has counted every one of the 1M rows once.
//
// With stream.retention = '0s', one retained checkpoint and a client issuing
// CHECKPOINT every 100 ms the stream's log is truncated behind the view; the view must
// still come out exact (the batch query then sees only the retained rows).
func TestKill9DuringCopy(t *testing.T) {
	for _, retention := range []string{"unbounded", "0s"} {
		t.Run("retention="+retention, func(t *testing.T) { kill9DuringCopy(t, retention) })
	}
}

func kill9DuringCopy(t *testing.T, retention string) {
	rng, seed := newRand(t)
	srv := sqllogic.StartServer(t, "")
	conn := srv.Conn(t)
	exec(t, conn, "SET checkpoint.interval = '200ms'")
	exec(t, conn, fmt.Sprintf("SET stream.retention = '%s'", retention))
	truncating := retention != "unbounded"
	if truncating {
		// Each retained checkpoint pins the log at its offsets.
		exec(t, conn, "SET checkpoint.retained = 1")
	}
	exec(t, conn, "CREATE TABLE t (k BIGINT, v BIGINT)")
	exec(t, conn, "CREATE MATERIALIZED VIEW mv AS SELECT k, count(*) AS c, sum(v) AS s FROM t GROUP BY k")
	var before int64 // checkpoints taken before ingest do not count
	for _, c := range showCheckpoints(t, conn) {
		before = max(before, c.id)
	}

	// Paced ingest streams each COPY over 50–150 ms, so the 1M rows take
	// about two seconds, periodic checkpoints and epochs fall during the
	// COPYs, and the kill lands at a random phase of the job's epoch.
	pace := make([]time.Duration, copyRows/copyBatch)
	for b := range pace {
		pace[b] = time.Duration(5+rng.IntN(10)) * time.Millisecond
	}
	killAt := copyRows*40/100 + rng.IntN(copyRows*30/100)
	t.Logf("kill -9 when row %d of %d (%.1f%%) has been sent, in COPY batch %d",
		killAt, copyRows, 100*float64(killAt)/copyRows, killAt/copyBatch)
	paused, resume := make(chan struct{}), make(chan struct{})
	type result struct {
		batches int
		err     error
	}
	done := make(chan result, 1)
	stopCheckpoints := func() {}
	if truncating {
		stopCheckpoints = manualCheckpoints(t, srv.ConnString(), 100*time.Millisecond)
	}
	start := time.Now()
	go func() {
		n, err := ingest(srv.ConnString(), seed, 0, pace, killAt, paused, resume)
		done <- result{n, err}
	}()
	select {
	case <-paused:
	case r := <-done:
		t.Fatalf("ingest ended before the kill point: %d batches, %v", r.batches, r.err)
	}
	t.Logf("reached the kill point after %v", time.Since(start).Round(time.Millisecond))

	// The crash must hit a job with a completed checkpoint behind it, or the
	// test proves nothing about recovery from one.
	ck := completedCheckpoint(t, conn, before, "mv")
	for _, j := range showJobs(t, conn) {
		t.Logf("at the kill: job %s %s, %d rows read, lag %d", j.name, j.state, j.rowIn, j.lag)
	}
	checkPrefix(t, conn, seed, "at the kill")
	stopCheckpoints()
	if truncating {
		appended, retained := logRows(t, conn, "t")
		t.Logf("at the kill the log retains %d of %d rows", retained, appended)
		if retained >= appended {
			t.Errorf("stream.retention = '0s' with the view's checkpoints behind it truncated nothing (%d of %d rows retained)", retained, appended)
		}
	}
	srv.Kill9()
	close(resume)
	r := <-done
	if r.err == nil {
		t.Fatalf("COPY succeeded although the server was killed with it half sent")
	}
	ackedRows := r.batches * copyBatch
	t.Logf("killed: %d batches (%d rows) acknowledged; the COPY in flight failed: %v", r.batches, ackedRows, r.err)

	srv.Restart(t)
	conn = srv.Conn(t)
	checkPrefix(t, conn, seed, "right after restart")
	found := false
	for _, c := range showCheckpoints(t, conn) {
		if c.id == ck.id {
			found = true
			if c.status != "COMPLETED" {
				t.Errorf("checkpoint %d was COMPLETED before the crash, after restart it is %s", ck.id, c.status)
			}
		}
	}
	if !found {
		t.Errorf("checkpoint %d was COMPLETED before the crash but SHOW CHECKPOINTS does not list it after restart", ck.id)
	}
	waitCaughtUp(t, conn, "mv")
	t.Logf("caught up %v after the start of ingest", time.Since(start).Round(time.Millisecond))
	checkCopyViews(t, conn, copyTruth(seed, ackedRows), !truncating, "after kill -9 and restart")

	// A client retries what was not acknowledged: the rest of the input.
	n, err := ingest(srv.ConnString(), seed, r.batches, nil, -1, nil, nil)
	if err != nil {
		t.Fatalf("ingest after restart: %d batches acknowledged: %v", n, err)
	}
	waitCaughtUp(t, conn, "mv")
	truth := copyTruth(seed, copyRows)
	if got := truth.total().c; got != copyRows {
		t.Fatalf("test bug: truth counts %d rows", got)
	}
	checkCopyViews(t, conn, truth, !truncating, "after ingesting all 1M rows")
	checkOutput(t, srv)
}

// completedCheckpoint returns a COMPLETED checkpoint with an id above after
// that covers job, waiting for one (bounded) if there is none yet. No such
// checkpoint fails the test.
func completedCheckpoint(t *testing.T, conn *pgx.Conn, after int64, job string) checkpointRow {
	t.Helper()
	deadline := time.Now().Add(10 * time.Second)
	for {
		var last checkpointRow
		for _, c := range showCheckpoints(t, conn) {
			if c.id > after && c.status == "COMPLETED" && c.covers(job) {
				last = c
			}
		}
		if last.id != 0 {
			t.Logf("checkpoint %d (%s) of job %s completed before the kill", last.id, last.trigger, job)
			return last
		}
		if time.Now().After(deadline) {
			t.Fatalf("no checkpoint of job %s completed before the kill point: SHOW CHECKPOINTS = %+v", job, showCheckpoints(t, conn))
		}
		time.Sleep(20 * time.Millisecond)
	}
}

// checkCopyViews compares the view, and if the stream retains every row the
// batch query, with the truth.
func checkCopyViews(t *testing.T, conn *pgx.Conn, truth aggs, batch bool, when string) {
	t.Helper()
	if batch {
		if d := diff(truth, queryAggs(t, conn, "SELECT k, count(*), sum(v) FROM t GROUP BY k")); d != "" {
			t.Errorf("%s: batch query over the stream differs from the acknowledged input: %s", when, d)
		}
	}
	if d := diff(truth, queryAggs(t, conn, "SELECT k, c, s FROM mv")); d != "" {
		t.Errorf("%s: view mv differs from the acknowledged input: %s", when, d)
	}
}

// checkPrefix checks that the view is a consistent cut: with one partition
// the job reads the stream in order, so whenever the view has counted n rows
// it must equal the aggregate of exactly the first n rows of the input.
func checkPrefix(t *testing.T, conn *pgx.Conn, seed uint64, when string) {
	t.Helper()
	view := queryAggs(t, conn, "SELECT k, c, s FROM mv")
	n := view.total().c
	if d := diff(copyTruth(seed, int(n)), view); d != "" {
		t.Errorf("%s: view mv has counted %d rows but is not the aggregate of the first %d rows of the input: %s", when, n, n, d)
		return
	}
	t.Logf("%s: view mv is the aggregate of the first %d rows", when, n)
}

// manualCheckpoints runs CHECKPOINT every interval on its own connection
// until the returned function is called. Failures (the server may be
// restarting) are logged, not fatal.
func manualCheckpoints(t *testing.T, connStr string, interval time.Duration) (stop func()) {
	ctx, cancel := context.WithCancel(context.Background())
	done := make(chan int)
	go func() {
		n := 0
		defer func() { done <- n }()
		conn, err := pgx.Connect(ctx, connStr)
		if err != nil {
			return
		}
		defer conn.Close(context.Background())
		for ctx.Err() == nil {
			if _, err := conn.Exec(ctx, "CHECKPOINT"); err == nil {
				n++
			}
			select {
			case <-ctx.Done():
			case <-time.After(interval):
			}
		}
	}()
	return func() {
		cancel()
		t.Logf("%d manual checkpoints completed", <-done)
	}
}

// logRows returns a stream's appended and retained row counts.
func logRows(t *testing.T, conn *pgx.Conn, table string) (appended, retained int64) {
	t.Helper()
	err := conn.QueryRow(context.Background(),
		"SELECT rows_appended, rows_retained FROM streamdb_tables WHERE name = $1", table).Scan(&appended, &retained)
	if err != nil {
		t.Fatal(err)
	}
	return appended, retained
}

// largeCopyReader produces rows [next, end) as `k<TAB>v<TAB>pad` for the
// large-COPY crash test, closing eof when it has produced the last one
// (pgx sends CopyDone next) and stopping at row stop (if in range) with
// stopped closed, until the server is killed.
type largeCopyReader struct {
	next, end, stop int
	eof, stopped    chan struct{}
	sent            int64
	buf, unread     []byte
}

const largePad = "padpadpadpadpadpadpadpadpadpadpadpadpadpadpadpadpadpadpadpad"

func largeRow(i int) (k, v int64) { return int64(mix(uint64(i)) % 1000), int64(i%7) - 3 }

func (r *largeCopyReader) Read(p []byte) (int, error) {
	if len(r.unread) == 0 {
		if r.next == r.stop {
			close(r.stopped)
			time.Sleep(time.Minute) // the server is killed meanwhile
			return 0, errKilled
		}
		if r.next == r.end {
			close(r.eof)
			return 0, io.EOF
		}
		r.buf = r.buf[:0]
		stop := min(r.end, r.next+1000)
		if r.next < r.stop && r.stop < stop {
			stop = r.stop
		}
		for ; r.next < stop; r.next++ {
			k, v := largeRow(r.next)
			r.buf = strconv.AppendInt(r.buf, k, 10)
			r.buf = append(r.buf, '\t')
			r.buf = strconv.AppendInt(r.buf, v, 10)
			r.buf = append(r.buf, '\t')
			r.buf = append(r.buf, largePad...)
			r.buf = append(r.buf, '\n')
		}
		r.unread = r.buf
		r.sent += int64(len(r.buf))
	}
	n := copy(p, r.unread)
	r.unread = r.unread[n:]
	return n, nil
}

// TestKill9LargeCopy: COPYs large enough to be staged in storage (tens of
// megabytes each) are atomic across kill -9. Killed in the middle, a COPY
// leaves no row; killed just after its CopyDone is sent (at once, or up to
// 1.5 times the time a COPY takes from there to its acknowledgement),
// it has either all its rows or none, whether or not the client heard back
// (and all of them if it did). After each restart the batch query and a
// GROUP BY view over the stream agree, and once the server is stopped no
// COPY is marked in progress and no staging file is left.
func TestKill9LargeCopy(t *testing.T) {
	const rows = 500_000 // about 37 MB per COPY
	rng, _ := newRand(t)
	srv := sqllogic.StartServer(t, "")
	conn := srv.Conn(t)
	exec(t, conn, "SET checkpoint.interval = '200ms'")
	exec(t, conn, "CREATE TABLE t (k BIGINT, v BIGINT, pad TEXT)")
	exec(t, conn, "CREATE MATERIALIZED VIEW mv AS SELECT k, count(*) AS c, sum(v) AS s FROM t GROUP BY k")
	truth := aggs{}
	next := 0 // first row of the next COPY
	addRows := func(a aggs, from, to int) {
		for i := from; i < to; i++ {
			a.add(largeRow(i))
		}
	}
	type result struct {
		tag string
		err error
	}
	// copyRows COPYs rows [next, next+rows); stop < next+rows pauses there.
	copyRows := func(stop int) (*largeCopyReader, chan result) {
		r := &largeCopyReader{next: next, end: next + rows, stop: stop, eof: make(chan struct{}), stopped: make(chan struct{})}
		done := make(chan result, 1)
		go func() {
			ctx, cancel := context.WithTimeout(context.Background(), 2*time.Minute)
			defer cancel()
			c, err := pgconn.Connect(ctx, srv.ConnString())
			if err != nil {
				done <- result{"", err}
				return
			}
			defer c.Close(context.Background())
			tag, err := c.CopyFrom(ctx, r, "COPY t FROM STDIN")
			done <- result{tag.String(), err}
		}()
		return r, done
	}
	check := func(when string) {
		t.Helper()
		waitCaughtUp(t, conn, "mv")
		got := queryAggs(t, conn, "SELECT k, count(*), sum(v) FROM t GROUP BY k")
		if d := diff(truth, got); d != "" {
			t.Fatalf("%s: the stream differs from the acknowledged COPYs: %s", when, d)
		}
		if d := diff(truth, queryAggs(t, conn, "SELECT k, c, s FROM mv")); d != "" {
			t.Fatalf("%s: view mv differs from the batch query: %s", when, d)
		}
		t.Logf("%s: stream and view hold the %d rows of the acknowledged COPYs", when, truth.total().c)
	}

	// One COPY that completes; the time from its last row sent to its
	// acknowledgement (the server still parsing what is in flight, then
	// publishing) sets the range of the kills after CopyDone below.
	r, done := copyRows(-1)
	<-r.eof
	eofAt := time.Now()
	if res := <-done; res.err != nil || res.tag != fmt.Sprintf("COPY %d", rows) {
		t.Fatalf("COPY: %q, %v", res.tag, res.err)
	}
	tail := time.Since(eofAt)
	addRows(truth, next, next+rows)
	next += rows
	t.Logf("first COPY: %d MB, acknowledged %v after its last row was sent", r.sent>>20, tail.Round(time.Millisecond))

	// Killed in the middle, with well over the staging threshold sent.
	stopAt := next + rows/2 + rng.IntN(rows/3)
	r, done = copyRows(stopAt)
	<-r.stopped
	srv.Kill9()
	if res := <-done; res.err == nil {
		t.Fatalf("COPY killed in the middle succeeded: %q", res.tag)
	}
	t.Logf("killed a COPY after %d of its rows (%d MB)", stopAt-next, r.sent>>20)
	next += rows
	srv.Restart(t)
	conn = srv.Conn(t)
	check("after kill -9 in the middle of a COPY")

	// Killed just after CopyDone is sent: at once, then at random points
	// up to 1.5 times the time the first COPY took to be acknowledged.
	for round := range 5 {
		delay := time.Duration(rng.Int64N(int64(tail)*3/2 + 1))
		if round == 0 {
			delay = 0
		}
		r, done = copyRows(-1)
		<-r.eof
		time.Sleep(delay)
		srv.Kill9()
		res := <-done
		before := queryAggsAfterRestart(t, srv)
		conn = srv.Conn(t)
		with := aggs{}
		for k, g := range truth {
			with[k] = g
		}
		addRows(with, next, next+rows)
		got := before.total().c
		switch {
		case res.err == nil:
			truth = with
			t.Logf("round %d: killed %v after CopyDone; the COPY was acknowledged", round, delay.Round(time.Millisecond))
		case got == with.total().c:
			truth = with
			t.Logf("round %d: killed %v after CopyDone; not acknowledged (%v), but published", round, delay.Round(time.Millisecond), res.err)
		case got == truth.total().c:
			t.Logf("round %d: killed %v after CopyDone; not acknowledged (%v) nor published", round, delay.Round(time.Millisecond), res.err)
		default:
			t.Fatalf("round %d: after kill -9 %v after CopyDone the stream holds %d rows: neither the %d before the COPY nor the %d with it",
				round, delay, got, truth.total().c, with.total().c)
		}
		next += rows
		check(fmt.Sprintf("round %d", round))
	}
	srv.Stop()
	db, err := storage.OpenReadOnly(srv.DataDir())
	if err != nil {
		t.Fatal(err)
	}
	pending, _, err := db.Stages().Keys()
	db.Close()
	if err != nil {
		t.Fatal(err)
	}
	ents, _ := os.ReadDir(filepath.Join(srv.DataDir(), "copy-staging"))
	if pending != 0 || len(ents) != 0 {
		t.Fatalf("after the crashes: %d COPYs still marked in progress, %d staging files", pending, len(ents))
	}
	checkOutput(t, srv)
}

// queryAggsAfterRestart restarts the killed server and returns the batch
// aggregate of its stream.
func queryAggsAfterRestart(t *testing.T, srv *sqllogic.Server) aggs {
	t.Helper()
	srv.Restart(t)
	return queryAggs(t, srv.Conn(t), "SELECT k, count(*), sum(v) FROM t GROUP BY k")
}

package sql

import (
	"bytes"
	"context"
	"fmt"
	"io"
	"log/slog"
	"math/rand/v2"
	"os"
	"os/exec"
	"path/filepath"
	"sort"
	"strconv"
	"strings"
	"sync"
	"sync/atomic"
	"testing"
	"time"

	"github.com/streamdb/streamdb/sqlerr"
	"github.com/streamdb/streamdb/storage"
	"github.com/streamdb/streamdb/storage/faultfs"
	"github.com/streamdb/streamdb/types"
)

// Fault tests of the engine in process (docs/design/fault-tests.md):
//
//   - TestFaultPowerLoss: Pebble's crash-cloning memory filesystem, a power
//     cut at a random write or sync of the commit path, over 200 seeds.
//   - TestFaultCheckpointIO: errorfs fails each write and each sync of a
//     CHECKPOINT in turn (in a child process, because Pebble treats a failed
//     WAL write or sync as fatal and panics).
//   - TestFaultSavepointCorrupt: RESTORE from a savepoint whose file was
//     damaged is refused with XX001 and leaves the view and its job alone.
//
// Every test uses the same stream and view, and an oracle of its own: the
// ledger of INSERTs the test knows were acknowledged.

const (
	faultDDL  = "CREATE TABLE t (k BIGINT, v BIGINT); CREATE MATERIALIZED VIEW mv AS SELECT k, count(*) AS c, sum(v) AS s FROM t GROUP BY k"
	faultView = "SELECT k, c, s FROM mv"
	faultKeys = 5
)

// query runs every statement of q and returns the last one's rows as text
// (NULL as "NULL").
func query(ctx context.Context, s *Session, q string) ([][]string, error) {
	sts, err := s.PrepareAll(ctx, q)
	if err != nil {
		return nil, err
	}
	var out [][]string
	for _, st := range sts {
		res, err := s.Execute(ctx, st, nil)
		if err != nil {
			return nil, err
		}
		out = nil
		if res.Rows == nil {
			continue
		}
		for {
			rec, err := res.Rows.Next(ctx)
			if err != nil {
				res.Rows.Close()
				return nil, err
			}
			if rec == nil {
				break
			}
			for r := 0; r < int(rec.NumRows()); r++ {
				row := make([]string, len(st.Columns))
				for c, col := range st.Columns {
					d := types.DatumAt(rec.Column(c), r, col.T)
					if d.Null {
						row[c] = "NULL"
					} else {
						row[c] = types.TextOf(d, col.T)
					}
				}
				out = append(out, row)
			}
			rec.Release()
		}
		res.Rows.Close()
	}
	return out, nil
}

// agg is a view's or a query's content: key -> {count, sum}.
type agg map[int64][2]int64

func (a agg) add(k, v int64) {
	x := a[k]
	a[k] = [2]int64{x[0] + 1, x[1] + v}
}

func (a agg) rows() int64 {
	var n int64
	for _, x := range a {
		n += x[0]
	}
	return n
}

func (a agg) String() string {
	keys := make([]int64, 0, len(a))
	for k := range a {
		keys = append(keys, k)
	}
	sort.Slice(keys, func(i, j int) bool { return keys[i] < keys[j] })
	var b strings.Builder
	for _, k := range keys {
		fmt.Fprintf(&b, "%d:%d/%d ", k, a[k][0], a[k][1])
	}
	return strings.TrimSpace(b.String())
}

// readAgg reads rows of (k, count, sum) as an agg.
func readAgg(ctx context.Context, s *Session, q string) (agg, error) {
	rows, err := query(ctx, s, q)
	if err != nil {
		return nil, err
	}
	a := agg{}
	for _, r := range rows {
		var x [3]int64
		for i := range x {
			if x[i], err = strconv.ParseInt(r[i], 10, 64); err != nil {
				return nil, fmt.Errorf("%s: row %v: %v", q, r, err)
			}
		}
		if _, dup := a[x[0]]; dup {
			return nil, fmt.Errorf("%s: key %d twice", q, x[0])
		}
		a[x[0]] = [2]int64{x[1], x[2]}
	}
	return a, nil
}

// ledger is what the client sent, in order: INSERT i has rows v = i*1000+j
// (j = 1..n) with k = v mod faultKeys, so every stored row names its INSERT.
type ledger struct {
	inserts []insertRec
}

type insertRec struct {
	n     int
	acked bool // returned success (before the crash, where there is one)
}

func (l *ledger) sql(i, n int) string {
	var b strings.Builder
	b.WriteString("INSERT INTO t VALUES ")
	for j := 1; j <= n; j++ {
		if j > 1 {
			b.WriteString(", ")
		}
		v := int64(i*1000 + j)
		fmt.Fprintf(&b, "(%d, %d)", v%faultKeys, v)
	}
	return b.String()
}

// checkStream reads the stored stream: every acknowledged INSERT is there
// whole and once, any other is whole or absent, nothing else is there. It
// returns, in INSERT order, the rows stored.
func (l *ledger) checkStream(ctx context.Context, s *Session) ([]int64, error) {
	rows, err := query(ctx, s, "SELECT v FROM t")
	if err != nil {
		return nil, err
	}
	per := map[int][]int64{}
	for _, r := range rows {
		v, err := strconv.ParseInt(r[0], 10, 64)
		if err != nil {
			return nil, err
		}
		per[int(v/1000)] = append(per[int(v/1000)], v)
	}
	var stored []int64
	for i, in := range l.inserts {
		got := per[i]
		delete(per, i)
		sort.Slice(got, func(a, b int) bool { return got[a] < got[b] })
		whole := len(got) == in.n
		for j := 0; whole && j < in.n; j++ {
			whole = got[j] == int64(i*1000+j+1)
		}
		switch {
		case whole:
			stored = append(stored, got...)
		case len(got) == 0 && !in.acked:
		case len(got) == 0:
			return nil, fmt.Errorf("acknowledged INSERT %d (%d rows) is not in the stream", i, in.n)
		default:
			return nil, fmt.Errorf("INSERT %d (%d rows, acknowledged %v) is stored partly or twice: %v", i, in.n, in.acked, got)
		}
	}
	for i, got := range per {
		return nil, fmt.Errorf("the stream has rows of INSERT %d that was never sent: %v", i, got)
	}
	return stored, nil
}

func aggOf(vs []int64) agg {
	a := agg{}
	for _, v := range vs {
		a.add(v%faultKeys, v)
	}
	return a
}

// checkPrefix: the view is the aggregate of the first n stored rows, for
// its own total count n (one partition, so the stream has one order).
func checkPrefix(view agg, stored []int64) error {
	n := view.rows()
	if n > int64(len(stored)) {
		return fmt.Errorf("the view counts %d rows, the stream holds %d", n, len(stored))
	}
	if want := aggOf(stored[:n]); want.String() != view.String() {
		return fmt.Errorf("the view (%d rows) is no prefix of the stream: view %s, first %d rows %s", n, view, n, want)
	}
	return nil
}

// checkExact: after CHECKPOINT, view = batch query = the stored rows.
func checkExact(ctx context.Context, s *Session, stored []int64) error {
	if _, err := query(ctx, s, "CHECKPOINT"); err != nil {
		return fmt.Errorf("CHECKPOINT: %w", err)
	}
	view, err := readAgg(ctx, s, faultView)
	if err != nil {
		return err
	}
	batch, err := readAgg(ctx, s, "SELECT k, count(*), sum(v) FROM t GROUP BY k")
	if err != nil {
		return err
	}
	want := aggOf(stored)
	if view.String() != want.String() || batch.String() != want.String() {
		return fmt.Errorf("after CHECKPOINT: view %s, batch query %s, stored rows %s", view, batch, want)
	}
	return nil
}

func quietEngineLog(w io.Writer) *slog.Logger {
	return slog.New(slog.NewTextHandler(w, &slog.HandlerOptions{Level: slog.LevelWarn}))
}

// --- power loss ---

// crashPoint is an errorfs injector that injects nothing: it counts the
// write operations (writes, syncs, creates, renames, links, removes) made
// once armed, and before the at-th one takes the crash clone: the state
// the filesystem would have if the power went out at that moment.
type crashPoint struct {
	fs      *faultfs.MemFS
	cfg     faultfs.CrashCloneCfg
	at      int64
	armed   atomic.Bool
	ops     atomic.Int64
	inCkpt  atomic.Bool // the workload is inside a CHECKPOINT statement
	crashed atomic.Bool

	once       sync.Once
	clone      *faultfs.MemFS
	opAt       faultfs.Op
	duringCkpt bool
}

func (c *crashPoint) String() string { return "crashPoint" }

func (c *crashPoint) MaybeError(op faultfs.Op) error {
	if c.armed.Load() && op.Kind.ReadOrWrite() == faultfs.OpIsWrite && c.ops.Add(1) == c.at {
		c.crash(op)
	}
	return nil
}

// crash takes the clone, once. crashed is set first: a statement that
// returned before the flag was set returned before the clone.
func (c *crashPoint) crash(op faultfs.Op) {
	c.once.Do(func() {
		c.crashed.Store(true)
		c.opAt, c.duringCkpt = op, c.inCkpt.Load()
		c.clone = c.fs.CrashClone(c.cfg)
	})
}

type powerLossResult struct {
	ops        int64 // write operations after arming (calibration)
	crashed    bool  // the crash point was reached inside the workload
	duringCkpt bool
	unsynced   int
	interval   string
	acked      int
	viewRows   int64 // rows the view counted right after the restart
	stored     int   // rows in the stream after the restart
	ackedRows  int
}

// powerLossRun is one seed: ingest with CHECKPOINTs in between and epochs
// running, crash before the at-th write operation (at 0: at the end),
// restart on the crash clone and check the stream and the view.
func powerLossRun(seed uint64, at int64, osDir string) (res powerLossResult, err error) {
	ctx, cancel := context.WithTimeout(context.Background(), 30*time.Second)
	defer cancel()
	r := rand.New(rand.NewPCG(seed, 0xfa017))
	unsynced := []int{0, 0, 10, 50, 90, 100}[r.IntN(6)]
	res.unsynced = unsynced
	res.interval = []string{"off", "50ms", "1s"}[r.IntN(3)]
	mfs := faultfs.NewCrashableMem()
	cp := &crashPoint{fs: mfs, at: at, cfg: faultfs.CrashCloneCfg{UnsyncedDataPercent: unsynced, RNG: rand.New(rand.NewPCG(seed, 7))}}
	var logs bytes.Buffer
	cfg := Config{DataDir: "/db", FS: faultfs.Wrap(mfs, cp), Parallelism: 1, Logger: quietEngineLog(&logs),
		// Retained checkpoints are exported through the OS, which does not
		// see a memory filesystem: the exports fail (recorded in SHOW
		// CHECKPOINTS) and must not disturb anything else.
		Settings: map[string]string{"checkpoint.dir": osDir, "checkpoint.interval": res.interval, "checkpoint.retained": "1"}}
	defer func() {
		if err != nil && logs.Len() > 0 {
			err = fmt.Errorf("%w\nengine log:\n%s", err, logs.String())
		}
	}()
	e, err := Open(cfg)
	if err != nil {
		return res, err
	}
	s := e.NewSession("streamdb", "streamdb")
	if _, err := query(ctx, s, faultDDL+"; CHECKPOINT"); err != nil {
		e.Close()
		return res, err
	}
	var l ledger
	ckptRows := 0 // rows acknowledged before the last CHECKPOINT acknowledged before the crash
	cp.armed.Store(true)
	for i := 0; i < 5+r.IntN(8) && !cp.crashed.Load(); i++ {
		if r.IntN(2) == 0 {
			// Let epochs (every 100 ms) and periodic checkpoints run.
			time.Sleep(time.Duration(10+r.IntN(100)) * time.Millisecond)
		}
		n := 1 + r.IntN(20)
		l.inserts = append(l.inserts, insertRec{n: n})
		_, ierr := query(ctx, s, l.sql(i, n))
		if ierr == nil && !cp.crashed.Load() {
			l.inserts[i].acked = true
			res.acked++
			res.ackedRows += n
		} else if ierr != nil && !cp.crashed.Load() {
			e.Close()
			return res, fmt.Errorf("INSERT %d failed without a crash: %w", i, ierr)
		}
		if r.IntN(3) == 0 {
			cp.inCkpt.Store(true)
			_, cerr := query(ctx, s, "CHECKPOINT")
			cp.inCkpt.Store(false)
			if cerr == nil && !cp.crashed.Load() {
				ckptRows = 0
				for _, in := range l.inserts {
					if in.acked {
						ckptRows += in.n
					}
				}
			} else if cerr != nil && !cp.crashed.Load() {
				e.Close()
				return res, fmt.Errorf("CHECKPOINT failed without a crash: %w", cerr)
			}
		}
	}
	res.crashed = cp.crashed.Load()
	res.ops = cp.ops.Load()
	cp.crash(faultfs.Op{}) // at the end, if the crash point was not reached
	res.duringCkpt = cp.duringCkpt
	if err := e.Close(); err != nil {
		return res, fmt.Errorf("close of the crashed engine: %w", err)
	}

	// Power comes back.
	cfg.FS = cp.clone
	e, err = Open(cfg)
	if err != nil {
		return res, fmt.Errorf("reopen after the crash (before op %d %v): %w", at, cp.opAt, err)
	}
	defer e.Close()
	s = e.NewSession("streamdb", "streamdb")
	view, err := readAgg(ctx, s, faultView)
	if err != nil {
		return res, err
	}
	res.viewRows = view.rows()
	stored, err := l.checkStream(ctx, s)
	if err != nil {
		return res, err
	}
	res.stored = len(stored)
	if err := checkPrefix(view, stored); err != nil {
		return res, err
	}
	if view.rows() < int64(ckptRows) {
		return res, fmt.Errorf("the view counts %d rows after the restart, but a CHECKPOINT covering %d rows had completed", view.rows(), ckptRows)
	}
	if err := checkExact(ctx, s, stored); err != nil {
		return res, err
	}
	return res, nil
}

func TestFaultPowerLoss(t *testing.T) {
	const seeds = 200
	osDir := t.TempDir()
	// Calibrate: how many write operations the workload makes after arming.
	cal, err := powerLossRun(0, 0, osDir)
	if err != nil {
		t.Fatalf("calibration run: %v", err)
	}
	span := max(cal.ops, 10)
	t.Logf("calibration: %d write operations in the workload; crash points drawn from 1..%d", cal.ops, span)

	type outcome struct {
		seed uint64
		res  powerLossResult
		at   int64
		err  error
	}
	outs := make([]outcome, seeds)
	var next atomic.Int64
	var wg sync.WaitGroup
	start := time.Now()
	for w := 0; w < 4; w++ { // the runs mostly wait (syncs, epochs): overlap them
		wg.Add(1)
		go func() {
			defer wg.Done()
			for {
				i := int(next.Add(1)) - 1
				if i >= seeds {
					return
				}
				seed := uint64(i + 1)
				at := 1 + rand.New(rand.NewPCG(seed, 0xc7a5)).Int64N(span)
				res, err := powerLossRun(seed, at, osDir)
				outs[i] = outcome{seed, res, at, err}
			}
		}()
	}
	wg.Wait()
	var crashed, duringCkpt, behind, unacked, failed int
	for _, o := range outs {
		if o.err != nil {
			failed++
			t.Errorf("seed %d (crash before write op %d of the workload, unsynced data kept %d%%, interval %s): %v",
				o.seed, o.at, o.res.unsynced, o.res.interval, o.err)
			if failed > 5 {
				t.FailNow()
			}
			continue
		}
		if o.res.crashed {
			crashed++
		}
		if o.res.duringCkpt {
			duringCkpt++
		}
		if o.res.viewRows < int64(o.res.stored) {
			behind++
		}
		if o.res.stored > o.res.ackedRows {
			unacked++
		}
	}
	t.Logf("%d seeds in %v: %d crashed inside the workload, %d of them inside a CHECKPOINT statement; "+
		"after the restart %d views were behind the stream, %d streams held an INSERT whose success the client never saw",
		seeds, time.Since(start).Round(time.Millisecond), crashed, duringCkpt, behind, unacked)
	// The test must have crashed where it means to.
	if crashed < seeds/4 || duringCkpt < 10 {
		t.Fatalf("too few crash points inside the workload (%d) or inside CHECKPOINT (%d)", crashed, duringCkpt)
	}
}

// --- I/O faults ---

// faultAt is an errorfs injector: once on, it fails the at-th write
// operation (write, sync, create, link, rename, remove, ...) with
// faultfs.ErrInjected and lets every other through; with at < 0 it only
// records the operations (calibration).
type faultAt struct {
	at  int64
	n   atomic.Int64
	mu  sync.Mutex
	ops []faultfs.Op
	hit *faultfs.Op
}

func (f *faultAt) String() string { return "faultAt" }

func (f *faultAt) MaybeError(op faultfs.Op) error {
	if op.Kind.ReadOrWrite() != faultfs.OpIsWrite {
		return nil
	}
	i := f.n.Add(1) - 1
	f.mu.Lock()
	defer f.mu.Unlock()
	f.ops = append(f.ops, op)
	if i == f.at {
		f.hit = &op
		return faultfs.ErrInjected
	}
	return nil
}

func opName(op faultfs.Op) string {
	kinds := map[faultfs.OpKind]string{faultfs.OpCreate: "create", faultfs.OpLink: "link", faultfs.OpRemove: "remove",
		faultfs.OpRemoveAll: "removeall", faultfs.OpRename: "rename", faultfs.OpReuseForWrite: "reuse", faultfs.OpMkdirAll: "mkdir",
		faultfs.OpLock: "lock", faultfs.OpFileClose: "close", faultfs.OpFileWrite: "write", faultfs.OpFileWriteAt: "writeat",
		faultfs.OpFileSync: "sync", faultfs.OpFileSyncData: "syncdata", faultfs.OpFileSyncTo: "syncto", faultfs.OpFileFlush: "flush",
		faultfs.OpFilePreallocate: "preallocate"}
	k, ok := kinds[op.Kind]
	if !ok {
		k = fmt.Sprintf("op%d", op.Kind)
	}
	return k + " " + filepath.Base(op.Path)
}

const (
	ioFaultEnvDir = "STREAMDB_FAULT_DIR"
	ioFaultEnvAt  = "STREAMDB_FAULT_AT"
	ioFaultRows   = 30 // rows per INSERT of the I/O fault workload
)

// ioFaultConfig is the engine of the I/O fault test: one stream, one view,
// periodic checkpoints off (only CHECKPOINT statements take them), two
// retained checkpoints exported under dir/snapshots.
func ioFaultConfig(dir string, fs storage.FS, log io.Writer) Config {
	return Config{DataDir: filepath.Join(dir, "db"), FS: fs, Parallelism: 1, Logger: quietEngineLog(log),
		Settings: map[string]string{"checkpoint.interval": "off", "checkpoint.dir": filepath.Join(dir, "snapshots"), "checkpoint.retained": "2"}}
}

// TestFaultCheckpointIOChild is the child process of TestFaultCheckpointIO
// (it skips unless started by it): ingest, CHECKPOINT, ingest, then a
// CHECKPOINT whose at-th write operation fails, then checks. It reports on
// stdout; Pebble's fatal errors end it with a panic.
func TestFaultCheckpointIOChild(t *testing.T) {
	dir := os.Getenv(ioFaultEnvDir)
	if dir == "" {
		t.Skip("the child process of TestFaultCheckpointIO")
	}
	at, err := strconv.ParseInt(os.Getenv(ioFaultEnvAt), 10, 64)
	if err != nil {
		t.Fatal(err)
	}
	ctx, cancel := context.WithTimeout(context.Background(), 20*time.Second)
	defer cancel()
	inj := &faultAt{at: at}
	toggle := &faultfs.Toggle{Injector: inj}
	e, err := Open(ioFaultConfig(dir, faultfs.Wrap(faultfs.OS(), toggle), os.Stderr))
	if err != nil {
		t.Fatal(err)
	}
	s := e.NewSession("streamdb", "streamdb")
	var l ledger
	must := func(q string) {
		if _, err := query(ctx, s, q); err != nil {
			t.Fatalf("%.40s: %v", q, err)
		}
	}
	must(faultDDL)
	for i := 0; i < 2; i++ {
		l.inserts = append(l.inserts, insertRec{n: ioFaultRows, acked: true})
		must(l.sql(i, ioFaultRows))
		if i == 0 {
			must("CHECKPOINT")
		}
	}
	fmt.Println("ACKED 2")

	toggle.On()
	_, cerr := query(ctx, s, "CHECKPOINT")
	toggle.Off()
	inj.mu.Lock()
	hit, ops := inj.hit, inj.ops
	inj.mu.Unlock()
	if at < 0 {
		for _, op := range ops {
			fmt.Println("OP", opName(op))
		}
		fmt.Println("OPS", len(ops))
	}
	switch {
	case hit == nil:
		fmt.Println("NOT REACHED")
	case cerr != nil:
		fmt.Printf("CHECKPOINT FAILED at %s: %s %s\n", opName(*hit), sqlerr.As(cerr).Code, sqlerr.As(cerr).Msg)
	default:
		fmt.Printf("CHECKPOINT OK despite %s\n", opName(*hit))
	}
	// The engine still serves consistent data, and recovers once the
	// fault is gone.
	view, err := readAgg(ctx, s, faultView)
	if err != nil {
		t.Fatal(err)
	}
	stored, err := l.checkStream(ctx, s)
	if err != nil {
		t.Fatal(err)
	}
	if err := checkPrefix(view, stored); err != nil {
		t.Fatal(err)
	}
	if view.rows() < ioFaultRows {
		t.Fatalf("the view counts %d rows; the first CHECKPOINT covered %d", view.rows(), ioFaultRows)
	}
	l.inserts = append(l.inserts, insertRec{n: ioFaultRows, acked: true})
	must(l.sql(2, ioFaultRows))
	if stored, err = l.checkStream(ctx, s); err != nil {
		t.Fatal(err)
	}
	if err := checkExact(ctx, s, stored); err != nil {
		t.Fatal(err)
	}
	rows, err := query(ctx, s, "SELECT id, status, error FROM streamdb_checkpoints")
	if err != nil {
		t.Fatal(err)
	}
	for _, r := range rows {
		fmt.Printf("CHECKPOINT %s %s %s\n", r[0], r[1], r[2])
	}
	// Checkpoint 2 took the fault. If it completed without its export, it
	// cannot be read as a retained checkpoint; checkpoint 3 can, and holds
	// what the view holds.
	if len(rows) != 3 || rows[2][1] != "COMPLETED" {
		t.Fatalf("SHOW CHECKPOINTS: %v", rows)
	}
	if rows[1][1] == "COMPLETED" && strings.Contains(rows[1][2], "export") {
		if _, err := query(ctx, s, "SELECT * FROM mv AS OF CHECKPOINT 2"); sqlerr.As(err).Code != sqlerr.UndefinedObject {
			t.Fatalf("AS OF the checkpoint whose export failed: %v", err)
		}
	}
	if rows[1][1] == "COMPLETED" && rows[1][2] == "NULL" {
		// Checkpoint 2 covered the first two INSERTs (CHECKPOINT catches up).
		asOf, err := readAgg(ctx, s, "SELECT k, c, s FROM mv AS OF CHECKPOINT 2")
		if err != nil {
			t.Fatalf("AS OF CHECKPOINT 2, completed with its export: %v", err)
		}
		if asOf.rows() != 2*ioFaultRows {
			t.Fatalf("AS OF CHECKPOINT 2 counts %d rows, want %d", asOf.rows(), 2*ioFaultRows)
		}
		fmt.Println("AS OF 2 OK")
	}
	asOf, err := readAgg(ctx, s, "SELECT k, c, s FROM mv AS OF CHECKPOINT 3")
	if err != nil {
		t.Fatal(err)
	}
	if want := aggOf(stored); asOf.String() != want.String() {
		t.Fatalf("AS OF CHECKPOINT 3: %s, want %s", asOf, want)
	}
	if err := e.Close(); err != nil {
		t.Fatal(err)
	}
	fmt.Println("RECOVERED")
}

// TestFaultCheckpointIO fails each write operation of a CHECKPOINT in turn,
// each in a child process (see TestFaultCheckpointIOChild). Allowed
// outcomes: the CHECKPOINT fails cleanly or succeeds without its retained
// export, and the engine serves consistent data and recovers in place; or
// the process dies of Pebble's fatal error (a failed WAL write or sync
// poisons Pebble's commit pipeline: Pebble panics by design), and a restart
// on the same files, without faults, recovers exactly — as after kill -9.
func TestFaultCheckpointIO(t *testing.T) {
	if os.Getenv(ioFaultEnvDir) != "" {
		t.Skip("inside the child")
	}
	child := func(dir string, at int64) (string, error) {
		ctx, cancel := context.WithTimeout(context.Background(), 60*time.Second)
		defer cancel()
		cmd := exec.CommandContext(ctx, os.Args[0], "-test.run=^TestFaultCheckpointIOChild$", "-test.count=1", "-test.v")
		cmd.Env = append(os.Environ(), ioFaultEnvDir+"="+dir, fmt.Sprintf("%s=%d", ioFaultEnvAt, at))
		out, err := cmd.CombinedOutput()
		if ctx.Err() != nil {
			return string(out), fmt.Errorf("the child hung: %w", ctx.Err())
		}
		return string(out), err
	}
	// Calibrate: the write operations of a fault-free CHECKPOINT.
	out, err := child(t.TempDir(), -1)
	if err != nil || !strings.Contains(out, "RECOVERED") {
		t.Fatalf("calibration child: %v\n%s", err, out)
	}
	var n int64
	var names []string // the operations, as calibration saw them
	for _, line := range strings.Split(out, "\n") {
		if rest, ok := strings.CutPrefix(line, "OPS "); ok {
			n, _ = strconv.ParseInt(rest, 10, 64)
		}
		if rest, ok := strings.CutPrefix(line, "OP "); ok {
			names = append(names, rest)
		}
	}
	if n == 0 {
		t.Fatalf("calibration found no write operations in a CHECKPOINT:\n%s", out)
	}
	t.Logf("a CHECKPOINT makes %d write operations", n)

	var failedClean, okNoExport, absorbed, notReached, fatal int
	for at := int64(0); at < n; at++ {
		dir := t.TempDir()
		out, err := child(dir, at)
		line := func(prefix string) string {
			for _, l := range strings.Split(out, "\n") {
				if strings.HasPrefix(l, prefix) {
					return l
				}
			}
			return ""
		}
		switch {
		case err == nil && strings.Contains(out, "RECOVERED") && line("CHECKPOINT FAILED") != "":
			failedClean++
			t.Logf("op %d: %s; recovered in place", at, line("CHECKPOINT FAILED"))
		case err == nil && strings.Contains(out, "RECOVERED") && line("CHECKPOINT OK") != "" &&
			strings.Contains(out, "export to checkpoint.dir failed"):
			// Only the retained export may fail without failing the
			// checkpoint, and SHOW CHECKPOINTS must say so.
			okNoExport++
			t.Logf("op %d: %s; export failure reported; recovered in place", at, line("CHECKPOINT OK"))
		case err == nil && strings.Contains(out, "RECOVERED") && line("CHECKPOINT OK") != "" && line("AS OF 2 OK") != "":
			// The fault hit a background flush or compaction, which Pebble
			// retries: the checkpoint and its export are whole (the child
			// read the export back).
			absorbed++
			t.Logf("op %d: %s; absorbed by Pebble's retry; the export reads back", at, line("CHECKPOINT OK"))
		case err == nil && strings.Contains(out, "RECOVERED") && line("NOT REACHED") != "":
			// Background flushes and compactions make the count vary from
			// run to run; this run had fewer operations than calibration.
			notReached++
			t.Logf("op %d: not reached in this run", at)
		case err == nil && line("CHECKPOINT OK") != "":
			t.Errorf("op %d: %s, but SHOW CHECKPOINTS reports no failed export and checkpoint 2 does not read back:\n%s", at, line("CHECKPOINT OK"), out)
		case err == nil:
			t.Errorf("op %d: the child did not recover in place:\n%s", at, out)
		case strings.Contains(out, "ACKED 2") && pebbleFatal(out):
			fatal++
			name := "?"
			if at < int64(len(names)) {
				name = names[at]
			}
			t.Logf("op %d (%s in calibration): Pebble ended the process by design (%s)", at, name, firstLine(out, "panic: "))
			if err := recoverAfterFatal(dir); err != nil {
				t.Errorf("op %d: restart after Pebble's fatal error: %v", at, err)
			}
		default:
			t.Errorf("op %d: unexpected outcome (%v):\n%s", at, err, out)
		}
	}
	t.Logf("%d faults: %d CHECKPOINTs failed cleanly, %d succeeded without their export, %d were absorbed by Pebble's retries, %d ended the process (Pebble fatal), %d not reached",
		n, failedClean, okNoExport, absorbed, fatal, notReached)
	if notReached > int(n)/4 {
		t.Errorf("%d of %d fault points were not reached: the calibration does not describe a CHECKPOINT", notReached, n)
	}
}

// pebbleFatal reports whether a child ended in one of Pebble's deliberate
// panics on I/O errors: a failed WAL write or sync poisons the commit
// pipeline ("fatal commit error"), and a failed directory fsync while
// moving a marker file (atomicfs) is "unrecoverable" — Pebble's stance on
// fsync errors (fsyncgate); so is failing to create or sync the next WAL
// when a flush rotates it (rotateWAL panics), and failing to write or sync
// the MANIFEST. Anything else is a failure of ours. Pebble's Fatalf (the
// commit pipeline's and the MANIFEST's) goes to the server's log at ERROR
// and exits (storage/db.go), so its line marks those.
func pebbleFatal(out string) bool {
	return strings.Contains(out, "panic: pebble: fatal commit error") ||
		strings.Contains(out, `level=ERROR msg="fatal: `) && strings.Contains(out, "component=pebble") ||
		strings.Contains(out, "panic: injected error") && strings.Contains(out, "vfs/atomicfs.(*Marker).Move") ||
		strings.HasPrefix(firstLine(out, "panic: "), "panic: (") && strings.Contains(out, "pebble/v2.(*DB).rotateWAL(") ||
		strings.HasPrefix(firstLine(out, "panic: "), "panic: MANIFEST ") // a failed version edit (flush or compaction)
}

func firstLine(out, prefix string) string {
	for _, l := range strings.Split(out, "\n") {
		if strings.HasPrefix(l, prefix) {
			return l
		}
	}
	return ""
}

// recoverAfterFatal restarts on the files a child left when Pebble's fatal
// error ended it: both acknowledged INSERTs are there, the view is at the
// first CHECKPOINT or later and consistent, and exact after a CHECKPOINT.
func recoverAfterFatal(dir string) error {
	ctx, cancel := context.WithTimeout(context.Background(), 30*time.Second)
	defer cancel()
	var logs bytes.Buffer
	e, err := Open(ioFaultConfig(dir, nil, &logs))
	if err != nil {
		return err
	}
	defer e.Close()
	s := e.NewSession("streamdb", "streamdb")
	l := ledger{inserts: []insertRec{{ioFaultRows, true}, {ioFaultRows, true}}}
	view, err := readAgg(ctx, s, faultView)
	if err != nil {
		return err
	}
	stored, err := l.checkStream(ctx, s)
	if err != nil {
		return err
	}
	if err := checkPrefix(view, stored); err != nil {
		return err
	}
	if view.rows() < ioFaultRows {
		return fmt.Errorf("the view counts %d rows; the first CHECKPOINT covered %d", view.rows(), ioFaultRows)
	}
	rows, err := query(ctx, s, "SHOW CHECKPOINTS")
	if err != nil {
		return err
	}
	if len(rows) == 0 || rows[0][1] != "COMPLETED" {
		return fmt.Errorf("the first checkpoint is not listed COMPLETED after the restart: %v", rows)
	}
	return checkExact(ctx, s, stored)
}

// --- snapshot corruption, end to end ---

// TestFaultSavepointCorrupt: RESTORE from a savepoint with a damaged file
// (or AS OF it) is refused with XX001, and the view and its job go on as
// if nothing happened; an intact savepoint still restores.
func TestFaultSavepointCorrupt(t *testing.T) {
	ctx, cancel := context.WithTimeout(context.Background(), 60*time.Second)
	defer cancel()
	dir := t.TempDir()
	var logs bytes.Buffer
	e, err := Open(Config{DataDir: dir, Parallelism: 1, Logger: quietEngineLog(&logs),
		Settings: map[string]string{"checkpoint.interval": "off"}})
	if err != nil {
		t.Fatal(err)
	}
	defer e.Close()
	s := e.NewSession("streamdb", "streamdb")
	var l ledger
	must := func(q string) [][]string {
		t.Helper()
		rows, err := query(ctx, s, q)
		if err != nil {
			t.Fatalf("%.60s: %v", q, err)
		}
		return rows
	}
	insert := func() {
		i := len(l.inserts)
		l.inserts = append(l.inserts, insertRec{n: 50, acked: true})
		must(l.sql(i, 50))
	}
	exact := func(when string) agg {
		t.Helper()
		stored, err := l.checkStream(ctx, s)
		if err != nil {
			t.Fatal(err)
		}
		if err := checkExact(ctx, s, stored); err != nil {
			t.Fatalf("%s: %v", when, err)
		}
		return aggOf(stored)
	}
	job := func() string {
		t.Helper()
		for _, r := range must("SHOW JOBS") {
			if r[0] == "mv" {
				return r[1] + " restarts=" + r[2]
			}
		}
		t.Fatal("SHOW JOBS has no mv")
		return ""
	}
	must(faultDDL)
	insert()
	must("CREATE SAVEPOINT sp")
	must("CREATE SAVEPOINT good")
	insert()
	before := exact("before the damage")

	// Damage a file of the savepoint's database. Table files are hard links
	// into the live database, so write the damaged copy as a new file: the
	// damage stays in the savepoint, as when its copy on other storage rots.
	spDB := filepath.Join(dir, "savepoints", "sp", "db")
	ents, err := os.ReadDir(spDB)
	if err != nil {
		t.Fatal(err)
	}
	// Prefer a file holding rows: a table file, else the WAL copy.
	victim, rank := "", 0
	for _, ent := range ents {
		info, err := ent.Info()
		if err != nil || info.Size() == 0 {
			continue
		}
		r := map[string]int{".sst": 3, ".log": 2}[filepath.Ext(ent.Name())]
		if strings.HasPrefix(ent.Name(), "MANIFEST-") {
			r = 1
		}
		if r > rank {
			victim, rank = filepath.Join(spDB, ent.Name()), r
		}
	}
	if victim == "" {
		t.Fatalf("no table or manifest file in %s", spDB)
	}
	data, err := os.ReadFile(victim)
	if err != nil {
		t.Fatal(err)
	}
	data[len(data)/2] ^= 0x01
	if err := os.Remove(victim); err != nil {
		t.Fatal(err)
	}
	if err := os.WriteFile(victim, data, 0o644); err != nil {
		t.Fatal(err)
	}
	t.Logf("flipped a bit of %s", filepath.Base(victim))

	for _, q := range []string{"RESTORE mv FROM SAVEPOINT sp", "RESTORE FROM SAVEPOINT sp", "SELECT * FROM mv AS OF SAVEPOINT sp", "RESTORE mv FROM SAVEPOINT sp"} {
		_, err := query(ctx, s, q)
		if e := sqlerr.As(err); err == nil || e.Code != sqlerr.DataCorrupted || !strings.Contains(e.Msg, "checksum mismatch") {
			t.Fatalf("%s: %v; want XX001 checksum mismatch", q, err)
		}
		if got := job(); got != "RUNNING restarts=0" {
			t.Fatalf("after the refused %s, job mv is %s", q, got)
		}
		view, err := readAgg(ctx, s, faultView)
		if err != nil {
			t.Fatal(err)
		}
		if view.String() != before.String() {
			t.Fatalf("after the refused %s the view changed: %s, was %s", q, view, before)
		}
	}
	// The job keeps counting.
	insert()
	if after := exact("after the refused restores"); after.rows() != before.rows()+50 {
		t.Fatalf("the view counts %d rows, want %d", after.rows(), before.rows()+50)
	}
	// The intact savepoint restores: the view rewinds to it, then replays
	// the stream to equal the batch query again.
	must("RESTORE mv FROM SAVEPOINT good")
	exact("after restoring the intact savepoint")
	if got := job(); got != "RUNNING restarts=0" {
		t.Fatalf("after RESTORE, job mv is %s", got)
	}
	if strings.Contains(logs.String(), "level=ERROR") {
		t.Fatalf("the engine logged errors:\n%s", logs.String())
	}
}

// Command peers measures streamdb against its peers in one run on one
// machine, so the ratios compare like with like:
//
//	(a) COPY over the wire of 2M rows (BIGINT, BIGINT), fsync on:
//	    streamdb vs PostgreSQL (a private cluster, started here);
//	(b) batch SELECT k, count(*), sum(v) FROM t GROUP BY k over 10M rows,
//	    1000 keys: streamdb vs DuckDB with SET threads=1;
//	(c) a continuous view of that query: COPY 10M rows into a stream that
//	    feeds it and time until the view is complete (1000 and 1M keys),
//	    plus issue 3's end-to-end reference: 2M rows into a view vs
//	    PostgreSQL's COPY of 2M rows followed by the GROUP BY.
//
// Every side gets the same text rows, and every COPY goes over the wire
// in 64 KiB CopyData messages (pgconn.CopyFrom). Each figure is the median
// of -reps runs. Run from bench/:
//
//	go run ./cmd/peers [-reps 3] [-only copy,groupby,view]
//
// It builds streamdb from the enclosing repository (-repo), starts it on a
// temporary data directory, and starts PostgreSQL from Debian's package
// (installed with apt-get if initdb is missing) as the postgres user.
package main

import (
	"bufio"
	"bytes"
	"context"
	"database/sql"
	"errors"
	"flag"
	"fmt"
	"math/rand/v2"
	"net"
	"os"
	"os/exec"
	"os/user"
	"path/filepath"
	"runtime"
	"slices"
	"strconv"
	"strings"
	"syscall"
	"time"

	_ "github.com/duckdb/duckdb-go/v2"
	"github.com/jackc/pgx/v5"
)

var (
	reps     = flag.Int("reps", 3, "runs per figure; the median is reported")
	only     = flag.String("only", "copy,groupby,view", "comma-separated subset of copy, groupby, view")
	repo     = flag.String("repo", "..", "the streamdb repository (built with go build)")
	pgPort   = flag.Int("pg-port", 55433, "port of the private PostgreSQL cluster")
	sdbPort  = flag.Int("streamdb-port", 55434, "port of the streamdb server")
	workDir  = flag.String("work", "", "scratch directory (default: a new temporary one, removed at exit)")
	copyRows = flag.Int("copy-rows", 2_000_000, "rows of the COPY benchmark")
	aggRows  = flag.Int("agg-rows", 10_000_000, "rows of the GROUP BY and view benchmarks")
)

func main() {
	flag.Parse()
	if err := run(); err != nil {
		fmt.Fprintln(os.Stderr, "peers:", err)
		os.Exit(1)
	}
}

// result is one line of the report.
type result struct {
	name      string
	rows      int
	sdb       time.Duration // streamdb's median
	peer      string
	peerTime  time.Duration // 0: no peer
	target    string
	met       bool
	hasTarget bool
}

func run() error {
	ctx := context.Background()
	want := map[string]bool{}
	for _, s := range strings.Split(*only, ",") {
		want[strings.TrimSpace(s)] = true
	}
	dir := *workDir
	if dir == "" {
		d, err := os.MkdirTemp("", "peers-")
		if err != nil {
			return err
		}
		defer os.RemoveAll(d)
		dir = d
	}
	// PostgreSQL runs as another user and must reach its data directory.
	if err := os.Chmod(dir, 0o755); err != nil {
		return err
	}

	sdb, err := startStreamdb(ctx, dir)
	if err != nil {
		return err
	}
	defer sdb.stop()
	var pg *postgres
	if want["copy"] || want["view"] {
		if pg, err = startPostgres(ctx, dir); err != nil {
			return err
		}
		defer pg.stop()
	}

	var results []result
	if want["copy"] {
		r, err := benchCopy(ctx, sdb, pg)
		if err != nil {
			return fmt.Errorf("copy: %w", err)
		}
		results = append(results, r)
	}
	if want["groupby"] {
		r, err := benchGroupBy(ctx, sdb, dir)
		if err != nil {
			return fmt.Errorf("groupby: %w", err)
		}
		results = append(results, r)
	}
	if want["view"] {
		rs, err := benchViews(ctx, sdb, pg)
		if err != nil {
			return fmt.Errorf("view: %w", err)
		}
		results = append(results, rs...)
	}
	report(results, pg)
	return nil
}

// --- data ---

// rowsText is n rows of "k\tv\n", k uniform in [0, keys), v in [0, 1e6).
// The seed is fixed, so every run and every system gets the same rows.
func rowsText(n, keys int) []byte {
	r := rand.New(rand.NewPCG(uint64(n), uint64(keys)))
	b := make([]byte, 0, n*13)
	for range n {
		b = strconv.AppendInt(b, r.Int64N(int64(keys)), 10)
		b = append(b, '\t')
		b = strconv.AppendInt(b, r.Int64N(1_000_000), 10)
		b = append(b, '\n')
	}
	return b
}

// --- servers ---

type streamdb struct {
	cmd  *exec.Cmd
	conn *pgx.Conn
}

func startStreamdb(ctx context.Context, dir string) (*streamdb, error) {
	bin := filepath.Join(dir, "sdb-under-test")
	build := exec.Command("go", "build", "-o", bin, "./cmd/streamdb")
	build.Dir = *repo
	build.Stdout, build.Stderr = os.Stderr, os.Stderr
	if err := build.Run(); err != nil {
		return nil, fmt.Errorf("building streamdb in %s: %w", *repo, err)
	}
	addr := fmt.Sprintf("127.0.0.1:%d", *sdbPort)
	cmd := exec.Command(bin, "--listen", addr, "--data-dir", filepath.Join(dir, "streamdb-data"), "--log-level", "info")
	cmd.Stdout, cmd.Stderr = os.Stderr, os.Stderr
	// Its own process group: a terminal's ^C reaches us, and we stop it.
	cmd.SysProcAttr = &syscall.SysProcAttr{Setpgid: true}
	if err := cmd.Start(); err != nil {
		return nil, err
	}
	s := &streamdb{cmd: cmd}
	if err := waitPort(addr, 30*time.Second); err != nil {
		s.stop()
		return nil, fmt.Errorf("streamdb did not start: %w", err)
	}
	conn, err := connect(ctx, fmt.Sprintf("postgres://bench@%s/streamdb?sslmode=disable", addr))
	if err != nil {
		s.stop()
		return nil, err
	}
	s.conn = conn
	return s, nil
}

func (s *streamdb) stop() {
	if s.conn != nil {
		s.conn.Close(context.Background())
	}
	_ = s.cmd.Process.Signal(os.Interrupt)
	done := make(chan struct{})
	go func() { s.cmd.Wait(); close(done) }()
	select {
	case <-done:
	case <-time.After(15 * time.Second):
		s.cmd.Process.Kill()
		<-done
	}
}

type postgres struct {
	bin, data string
	asUser    []string // runuser prefix when we are root
	conn      *pgx.Conn
	version   string
}

func startPostgres(ctx context.Context, dir string) (*postgres, error) {
	bin, err := pgBinDir()
	if err != nil {
		return nil, err
	}
	pg := &postgres{bin: bin, data: filepath.Join(dir, "pgdata")}
	if os.Geteuid() == 0 {
		// initdb refuses to run as root.
		if _, err := user.Lookup("postgres"); err != nil {
			return nil, fmt.Errorf("running as root needs the postgres user: %w", err)
		}
		pg.asUser = []string{"runuser", "-u", "postgres", "--"}
		if err := os.MkdirAll(pg.data, 0o700); err != nil {
			return nil, err
		}
		if out, err := exec.Command("chown", "postgres:", pg.data).CombinedOutput(); err != nil {
			return nil, fmt.Errorf("chown: %v: %s", err, out)
		}
	}
	if err := pg.run("initdb", "-D", pg.data, "-U", "postgres", "-A", "trust", "--no-sync"); err != nil {
		return nil, err
	}
	opts := fmt.Sprintf("-p %d -k %s -c listen_addresses=127.0.0.1 -c fsync=on -c synchronous_commit=on", *pgPort, pg.data)
	if err := pg.run("pg_ctl", "-D", pg.data, "-l", filepath.Join(pg.data, "server.log"), "-o", opts, "-w", "start"); err != nil {
		return nil, err
	}
	conn, err := connect(ctx, fmt.Sprintf("postgres://postgres@127.0.0.1:%d/postgres?sslmode=disable", *pgPort))
	if err != nil {
		pg.stop()
		return nil, err
	}
	pg.conn = conn
	if err := conn.QueryRow(ctx, "SHOW server_version").Scan(&pg.version); err != nil {
		pg.stop()
		return nil, err
	}
	return pg, nil
}

func (pg *postgres) run(tool string, args ...string) error {
	argv := append(append(slices.Clone(pg.asUser), filepath.Join(pg.bin, tool)), args...)
	out, err := exec.Command(argv[0], argv[1:]...).CombinedOutput()
	if err != nil {
		return fmt.Errorf("%s: %v\n%s", tool, err, out)
	}
	return nil
}

func (pg *postgres) stop() {
	if pg.conn != nil {
		pg.conn.Close(context.Background())
	}
	if err := pg.run("pg_ctl", "-D", pg.data, "-m", "fast", "-w", "stop"); err != nil {
		fmt.Fprintln(os.Stderr, "peers: stopping PostgreSQL:", err)
	}
}

// pgBinDir finds PostgreSQL's server binaries, installing Debian's
// postgresql package if there are none.
func pgBinDir() (string, error) {
	find := func() string {
		dirs, _ := filepath.Glob("/usr/lib/postgresql/*/bin")
		slices.Sort(dirs)
		for i := len(dirs) - 1; i >= 0; i-- {
			if _, err := os.Stat(filepath.Join(dirs[i], "initdb")); err == nil {
				return dirs[i]
			}
		}
		return ""
	}
	if d := find(); d != "" {
		return d, nil
	}
	fmt.Fprintln(os.Stderr, "peers: installing postgresql with apt-get")
	for _, args := range [][]string{{"update"}, {"install", "-y", "--no-install-recommends", "postgresql"}} {
		cmd := exec.Command("apt-get", args...)
		cmd.Env = append(os.Environ(), "DEBIAN_FRONTEND=noninteractive")
		cmd.Stdout, cmd.Stderr = os.Stderr, os.Stderr
		if err := cmd.Run(); err != nil {
			return "", fmt.Errorf("apt-get %s: %w", args[0], err)
		}
	}
	if d := find(); d != "" {
		return d, nil
	}
	return "", errors.New("no PostgreSQL server binaries under /usr/lib/postgresql")
}

func waitPort(addr string, limit time.Duration) error {
	deadline := time.Now().Add(limit)
	for {
		c, err := net.DialTimeout("tcp", addr, time.Second)
		if err == nil {
			c.Close()
			return nil
		}
		if time.Now().After(deadline) {
			return err
		}
		time.Sleep(50 * time.Millisecond)
	}
}

// connect opens a connection that uses the simple protocol, the same for
// both servers.
func connect(ctx context.Context, url string) (*pgx.Conn, error) {
	cfg, err := pgx.ParseConfig(url)
	if err != nil {
		return nil, err
	}
	cfg.DefaultQueryExecMode = pgx.QueryExecModeSimpleProtocol
	return pgx.ConnectConfig(ctx, cfg)
}

func execAll(ctx context.Context, c *pgx.Conn, stmts ...string) error {
	for _, s := range stmts {
		if _, err := c.Exec(ctx, s); err != nil {
			return fmt.Errorf("%s: %w", s, err)
		}
	}
	return nil
}

func copyIn(ctx context.Context, c *pgx.Conn, table string, data []byte) error {
	tag, err := c.PgConn().CopyFrom(ctx, bytes.NewReader(data), "COPY "+table+" FROM STDIN")
	if err != nil {
		return fmt.Errorf("COPY %s: %w", table, err)
	}
	if want := int64(bytes.Count(data, []byte{'\n'})); tag.RowsAffected() != want {
		return fmt.Errorf("COPY %s: %d rows, want %d", table, tag.RowsAffected(), want)
	}
	return nil
}

// queryRows runs q and returns how many rows it produced.
func queryRows(ctx context.Context, c *pgx.Conn, q string) (int, error) {
	rows, err := c.Query(ctx, q)
	if err != nil {
		return 0, err
	}
	n := 0
	for rows.Next() {
		n++
	}
	rows.Close()
	return n, rows.Err()
}

// median runs f reps times and returns the median duration.
// Every run's time goes to stderr, labelled what.
func median(what string, f func(i int) (time.Duration, error)) (time.Duration, error) {
	ds := make([]time.Duration, *reps)
	for i := range ds {
		d, err := f(i)
		if err != nil {
			return 0, err
		}
		fmt.Fprintf(os.Stderr, "peers: %s: run %d: %v\n", what, i+1, d.Round(time.Millisecond))
		ds[i] = d
	}
	slices.Sort(ds)
	return ds[len(ds)/2], nil
}

func timed(f func() error) (time.Duration, error) {
	start := time.Now()
	err := f()
	return time.Since(start), err
}

// --- (a) COPY ---

func benchCopy(ctx context.Context, sdb *streamdb, pg *postgres) (result, error) {
	data := rowsText(*copyRows, 1000)
	copyInto := func(c *pgx.Conn, prefix string) func(int) (time.Duration, error) {
		return func(i int) (time.Duration, error) {
			t := fmt.Sprintf("%s%d", prefix, i)
			if err := execAll(ctx, c, "CREATE TABLE "+t+" (k BIGINT, v BIGINT)"); err != nil {
				return 0, err
			}
			return timed(func() error { return copyIn(ctx, c, t, data) })
		}
	}
	res := result{name: fmt.Sprintf("COPY %s rows (BIGINT, BIGINT), fsync", human(*copyRows)), rows: *copyRows,
		peer: "PostgreSQL", target: ">= 1.0x PostgreSQL", hasTarget: true}
	var err error
	if res.sdb, err = median("streamdb COPY", copyInto(sdb.conn, "copy_")); err != nil {
		return res, err
	}
	if res.peerTime, err = median("PostgreSQL COPY", copyInto(pg.conn, "copy_")); err != nil {
		return res, err
	}
	res.met = res.sdb <= res.peerTime
	return res, nil
}

// --- (b) batch GROUP BY ---

const groupBy = "SELECT k, count(*), sum(v) FROM %s GROUP BY k"

func benchGroupBy(ctx context.Context, sdb *streamdb, dir string) (result, error) {
	const keys = 1000
	data := rowsText(*aggRows, keys)
	res := result{name: fmt.Sprintf("GROUP BY k, %s rows, %d keys", human(*aggRows), keys), rows: *aggRows,
		peer: "DuckDB, 1 thread", target: ">= 0.25x DuckDB", hasTarget: true}

	if err := execAll(ctx, sdb.conn, "CREATE TABLE g (k BIGINT, v BIGINT)"); err != nil {
		return res, err
	}
	if err := copyIn(ctx, sdb.conn, "g", data); err != nil {
		return res, err
	}
	check := func(n int, err error) error {
		if err == nil && n != keys {
			err = fmt.Errorf("%d groups, want %d", n, keys)
		}
		return err
	}
	var err error
	res.sdb, err = median("streamdb GROUP BY", func(int) (time.Duration, error) {
		return timed(func() error { return check(queryRows(ctx, sdb.conn, fmt.Sprintf(groupBy, "g"))) })
	})
	if err != nil {
		return res, err
	}

	file := filepath.Join(dir, "groupby.tsv")
	if err := os.WriteFile(file, data, 0o644); err != nil {
		return res, err
	}
	defer os.Remove(file)
	duck, err := sql.Open("duckdb", "")
	if err != nil {
		return res, err
	}
	defer duck.Close()
	duck.SetMaxOpenConns(1)
	load := fmt.Sprintf(`CREATE TABLE g AS SELECT * FROM read_csv('%s', delim='\t', header=false,
		columns={'k': 'BIGINT', 'v': 'BIGINT'})`, file)
	for _, q := range []string{load, "SET threads=1"} {
		if _, err := duck.ExecContext(ctx, q); err != nil {
			return res, fmt.Errorf("duckdb: %s: %w", q, err)
		}
	}
	duckRows := func() (int, error) {
		rows, err := duck.QueryContext(ctx, fmt.Sprintf(groupBy, "g"))
		if err != nil {
			return 0, err
		}
		defer rows.Close()
		n := 0
		var k, c, s any
		for rows.Next() {
			if err := rows.Scan(&k, &c, &s); err != nil {
				return 0, err
			}
			n++
		}
		return n, rows.Err()
	}
	res.peerTime, err = median("DuckDB GROUP BY", func(int) (time.Duration, error) {
		return timed(func() error { return check(duckRows()) })
	})
	if err != nil {
		return res, err
	}
	res.met = float64(res.sdb) <= 4*float64(res.peerTime)
	return res, nil
}

// --- (c) continuous views ---

// viewLatency creates a stream and a GROUP BY view over it, COPYs data into
// the stream and returns the time from the COPY's start until the view has
// counted every row (CHECKPOINT, then the sum of counts), and the COPY's
// own time.
func viewLatency(ctx context.Context, c *pgx.Conn, name string, data []byte) (total, copyTime time.Duration, err error) {
	rows := int64(bytes.Count(data, []byte{'\n'}))
	src, view := name+"_in", name
	if err := execAll(ctx, c,
		"CREATE TABLE "+src+" (k BIGINT, v BIGINT)",
		"CREATE MATERIALIZED VIEW "+view+" AS SELECT k, count(*) AS c, sum(v) AS s FROM "+src+" GROUP BY k",
	); err != nil {
		return 0, 0, err
	}
	defer execAll(ctx, c, "DROP MATERIALIZED VIEW "+view, "DROP TABLE "+src)
	start := time.Now()
	if err := copyIn(ctx, c, src, data); err != nil {
		return 0, 0, err
	}
	copyTime = time.Since(start)
	deadline := start.Add(10 * time.Minute)
	for {
		if err := execAll(ctx, c, "CHECKPOINT"); err != nil {
			return 0, 0, err
		}
		var got int64
		if err := c.QueryRow(ctx, "SELECT coalesce(sum(c), 0)::BIGINT FROM "+view).Scan(&got); err != nil {
			return 0, 0, err
		}
		if got == rows {
			return time.Since(start), copyTime, nil
		}
		if got > rows {
			return 0, 0, fmt.Errorf("view %s counts %d rows, more than the %d copied", view, got, rows)
		}
		if time.Now().After(deadline) {
			return 0, 0, fmt.Errorf("view %s incomplete after 10 minutes: %d of %d rows", view, got, rows)
		}
		time.Sleep(5 * time.Millisecond)
	}
}

func benchViews(ctx context.Context, sdb *streamdb, pg *postgres) ([]result, error) {
	var out []result
	for _, v := range []struct {
		rows, keys int
		target     float64 // rows/s
	}{{*aggRows, 1000, 3e6}, {*aggRows, 1 << 20, 1e6}} {
		data := rowsText(v.rows, v.keys)
		var copies []time.Duration
		d, err := median(fmt.Sprintf("streamdb view, %d keys", v.keys), func(i int) (time.Duration, error) {
			total, ct, err := viewLatency(ctx, sdb.conn, fmt.Sprintf("view_%d_%d", v.keys, i), data)
			copies = append(copies, ct)
			return total, err
		})
		if err != nil {
			return nil, err
		}
		slices.Sort(copies)
		fmt.Fprintf(os.Stderr, "peers: view of %d keys: COPY alone took %v (median) of %v\n", v.keys, copies[len(copies)/2].Round(time.Millisecond), d.Round(time.Millisecond))
		out = append(out, result{
			name:      fmt.Sprintf("view complete: COPY %s rows, %s keys", human(v.rows), human(v.keys)),
			rows:      v.rows,
			sdb:       d,
			target:    fmt.Sprintf(">= %s rows/s", human(int(v.target))),
			hasTarget: true,
			met:       float64(v.rows)/d.Seconds() >= v.target,
		})
	}

	// Issue 3's end-to-end reference: PostgreSQL's COPY of 2M rows followed
	// by the GROUP BY, against a streamdb view fed the same rows.
	data := rowsText(*copyRows, 1000)
	res := result{name: fmt.Sprintf("end to end: %s rows to GROUP BY result", human(*copyRows)), rows: *copyRows,
		peer: "PostgreSQL COPY+SELECT", target: "faster than PostgreSQL", hasTarget: true}
	var err error
	res.sdb, err = median("streamdb end to end", func(i int) (time.Duration, error) {
		total, _, err := viewLatency(ctx, sdb.conn, fmt.Sprintf("e2e_%d", i), data)
		return total, err
	})
	if err != nil {
		return nil, err
	}
	res.peerTime, err = median("PostgreSQL end to end", func(i int) (time.Duration, error) {
		t := fmt.Sprintf("e2e_%d", i)
		if err := execAll(ctx, pg.conn, "CREATE TABLE "+t+" (k BIGINT, v BIGINT)"); err != nil {
			return 0, err
		}
		return timed(func() error {
			if err := copyIn(ctx, pg.conn, t, data); err != nil {
				return err
			}
			_, err := queryRows(ctx, pg.conn, fmt.Sprintf(groupBy, t))
			return err
		})
	})
	if err != nil {
		return nil, err
	}
	res.met = res.sdb < res.peerTime
	return append(out, res), nil
}

// --- report ---

func report(rs []result, pg *postgres) {
	w := bufio.NewWriter(os.Stdout)
	defer w.Flush()
	fmt.Fprintf(w, "machine: %s, %d cores (GOMAXPROCS %d), %s/%s, %s\n", cpuModel(), runtime.NumCPU(), runtime.GOMAXPROCS(0), runtime.GOOS, runtime.GOARCH, time.Now().Format("2006-01-02"))
	if pg != nil {
		fmt.Fprintf(w, "PostgreSQL %s; DuckDB via duckdb-go/v2 v2.10506.0; median of %d runs\n\n", pg.version, *reps)
	}
	fmt.Fprintf(w, "| %-44s | %15s | %9s | %-22s | %13s | %9s | %6s | %-24s | %-3s |\n",
		"benchmark", "streamdb rows/s", "time", "peer", "peer rows/s", "time", "ratio", "target", "met")
	fmt.Fprintf(w, "|%s|%s|%s|%s|%s|%s|%s|%s|%s|\n", dashes(46), dashes(17), dashes(11), dashes(24), dashes(15), dashes(11), dashes(8), dashes(26), dashes(5))
	for _, r := range rs {
		rate := func(d time.Duration) string { return human(int(float64(r.rows) / d.Seconds())) }
		peerRate, peerTime, ratio := "", "", ""
		if r.peerTime > 0 {
			peerRate, peerTime = rate(r.peerTime), r.peerTime.Round(time.Millisecond).String()
			ratio = fmt.Sprintf("%.3fx", r.peerTime.Seconds()/r.sdb.Seconds())
		}
		met := ""
		if r.hasTarget {
			met = map[bool]string{true: "yes", false: "no"}[r.met]
		}
		fmt.Fprintf(w, "| %-44s | %15s | %9s | %-22s | %13s | %9s | %6s | %-24s | %-3s |\n",
			r.name, rate(r.sdb), r.sdb.Round(time.Millisecond), r.peer, peerRate, peerTime, ratio, r.target, met)
	}
	fmt.Fprintln(w, "\nratio = streamdb rate / peer rate (above 1: streamdb is faster)")
}

func dashes(n int) string { return strings.Repeat("-", n) }

// human prints n with a K or M suffix when it is a round figure, or to
// three significant digits.
func human(n int) string {
	switch {
	case n >= 1_000_000 && n%1_000_000 == 0:
		return fmt.Sprintf("%dM", n/1_000_000)
	case n >= 1<<20 && n%(1<<20) == 0:
		return fmt.Sprintf("%dMi", n>>20)
	case n >= 1_000_000:
		return fmt.Sprintf("%.2fM", float64(n)/1e6)
	case n >= 1000 && n%1000 == 0:
		return fmt.Sprintf("%dK", n/1000)
	case n >= 1000:
		return fmt.Sprintf("%.1fK", float64(n)/1e3)
	}
	return strconv.Itoa(n)
}

func cpuModel() string {
	b, err := os.ReadFile("/proc/cpuinfo")
	if err != nil {
		return runtime.GOARCH
	}
	for _, line := range strings.Split(string(b), "\n") {
		if k, v, ok := strings.Cut(line, ":"); ok && strings.TrimSpace(k) == "model name" {
			return strings.TrimSpace(v)
		}
	}
	return runtime.GOARCH
}

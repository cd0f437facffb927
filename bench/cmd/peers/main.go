// Command peers measures streamdb against its peers in one run on one
// machine, so the ratios compare like with like:
//
//	(a) first: what a new user sees (issue 19). A fresh streamdb server (a
//	    new data directory and a new process) with checkpoint.interval
//	    '1s', a stream and a GROUP BY view over it (1000 keys); COPY of 2M
//	    rows (BIGINT, BIGINT), then wait for the view to be complete. The
//	    COPY and the view-complete time of that first COPY are reported
//	    beside the median of -warm repetitions on the same server (new
//	    stream and view each time), and beside a private PostgreSQL 15
//	    (fsync on) doing the same COPY and then the GROUP BY, first after a
//	    restart and warm. In text and CSV format, through pgx
//	    (pgconn.CopyFrom, 64 KiB CopyData messages) and psql's \copy.
//	(b) view: the same for 10M rows and 1000 or 1M keys (streamdb only).
//	(c) groupby: batch SELECT k, count(*), sum(v) FROM t GROUP BY k over
//	    10M rows, 1000 keys: streamdb vs DuckDB with SET threads=1.
//
// Every side gets the same rows. Run from bench/:
//
//	go run ./cmd/peers [-only first,view,groupby] [-warm 3] [-formats text,csv] [-clients pgx,psql]
//
// It builds streamdb from the enclosing repository (-repo) and starts
// PostgreSQL from Debian's package (installed with apt-get if initdb is
// missing) as the postgres user. -profile DIR saves a CPU profile of each
// first run (the server's /debug/pprof, -profile-seconds long) and of its
// first warm repetition. Besides wall time it reports the streamdb
// server's CPU time (user + system) of each run, which a loaded machine
// distorts less than the wall time.
package main

import (
	"bufio"
	"bytes"
	"context"
	"database/sql"
	"errors"
	"flag"
	"fmt"
	"io"
	"math/rand/v2"
	"net"
	"net/http"
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
	warm        = flag.Int("warm", 3, "warm repetitions after each first run; their median is reported")
	only        = flag.String("only", "first,view,groupby", "comma-separated subset of first, view, groupby")
	formats     = flag.String("formats", "text,csv", "COPY formats of the first and view benchmarks")
	clients     = flag.String("clients", "pgx,psql", "COPY clients of the first benchmark (views use the first one)")
	repo        = flag.String("repo", "..", "the streamdb repository (built with go build)")
	binFlag     = flag.String("bin", "", "a streamdb binary to run instead of building -repo")
	pgPort      = flag.Int("pg-port", 55433, "port of the private PostgreSQL cluster")
	sdbPort     = flag.Int("streamdb-port", 55434, "port of the streamdb server (its HTTP listener is the next one)")
	workDir     = flag.String("work", "", "scratch directory (default: a new temporary one, removed at exit)")
	copyRows    = flag.Int("copy-rows", 2_000_000, "rows of the first-run benchmark")
	tableShape  = flag.String("table", "bigint", "table of the first-run benchmark: bigint (k BIGINT, v BIGINT) or mixed (id BIGINT, k INT, amount DOUBLE PRECISION, ts TIMESTAMP, name VARCHAR(32))")
	aggRows     = flag.Int("agg-rows", 10_000_000, "rows of the GROUP BY and view benchmarks")
	profileDir  = flag.String("profile", "", "save CPU profiles of each first run and first warm run here")
	profileSecs = flag.Int("profile-seconds", 10, "length of each CPU profile")
)

func main() {
	flag.Parse()
	if err := run(); err != nil {
		fmt.Fprintln(os.Stderr, "peers:", err)
		os.Exit(1)
	}
}

// figure is one line of the report: a first run and the median of warm
// runs, for streamdb and (if peer is set) PostgreSQL.
type figure struct {
	name              string
	rows              int
	sdbFirst, sdbWarm time.Duration
	cpuFirst, cpuWarm time.Duration // streamdb server CPU (user + system)
	peer              string
	pgFirst, pgWarm   time.Duration
	goal              float64 // required pgWarm / sdbFirst (0: none)
}

func run() error {
	ctx := context.Background()
	want := set(*only)
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
	if *profileDir != "" {
		if err := os.MkdirAll(*profileDir, 0o755); err != nil {
			return err
		}
	}
	bin := *binFlag
	if bin == "" {
		bin = filepath.Join(dir, "sdb-under-test")
		build := exec.Command("go", "build", "-o", bin, "./cmd/streamdb")
		build.Dir = *repo
		build.Stdout, build.Stderr = os.Stderr, os.Stderr
		if err := build.Run(); err != nil {
			return fmt.Errorf("building streamdb in %s: %w", *repo, err)
		}
	}
	loadBefore := loadAvg()

	var pg *postgres
	if want["first"] {
		var err error
		if pg, err = startPostgres(ctx, dir); err != nil {
			return err
		}
		defer pg.stop()
	}
	var figs []figure
	if want["first"] {
		for _, f := range list(*formats) {
			for _, c := range list(*clients) {
				fs, err := benchFirst(ctx, bin, dir, pg, f, c)
				if err != nil {
					return fmt.Errorf("first (%s, %s): %w", f, c, err)
				}
				figs = append(figs, fs...)
			}
		}
	}
	if want["view"] {
		for _, keys := range []int{1000, 1 << 20} {
			for _, f := range list(*formats) {
				fg, err := benchView(ctx, bin, dir, f, list(*clients)[0], keys)
				if err != nil {
					return fmt.Errorf("view (%d keys, %s): %w", keys, f, err)
				}
				figs = append(figs, fg)
			}
		}
	}
	var gb *groupByResult
	if want["groupby"] {
		r, err := benchGroupBy(ctx, bin, dir)
		if err != nil {
			return fmt.Errorf("groupby: %w", err)
		}
		gb = &r
	}
	report(figs, gb, pg, loadBefore, loadAvg())
	return nil
}

func set(s string) map[string]bool {
	m := map[string]bool{}
	for _, x := range list(s) {
		m[x] = true
	}
	return m
}

func list(s string) []string {
	var out []string
	for _, x := range strings.Split(s, ",") {
		if x = strings.TrimSpace(x); x != "" {
			out = append(out, x)
		}
	}
	return out
}

// loadAvg is /proc/loadavg's three load averages.
func loadAvg() string {
	b, err := os.ReadFile("/proc/loadavg")
	if err != nil {
		return "?"
	}
	f := strings.Fields(string(b))
	if len(f) < 3 {
		return "?"
	}
	return strings.Join(f[:3], " ")
}

// --- data ---

// rowsData is n rows of k and v, k uniform in [0, keys), v in [0, 1e6),
// in COPY's text format (tab-separated) or as CSV. The seed is fixed, so
// every run and every system gets the same rows.
func rowsData(n, keys int, format string) []byte {
	sep := byte('\t')
	if format == "csv" {
		sep = ','
	}
	r := rand.New(rand.NewPCG(uint64(n), uint64(keys)))
	b := make([]byte, 0, n*13)
	for range n {
		b = strconv.AppendInt(b, r.Int64N(int64(keys)), 10)
		b = append(b, sep)
		b = strconv.AppendInt(b, r.Int64N(1_000_000), 10)
		b = append(b, '\n')
	}
	return b
}

// firstShape is the first-run benchmark's table, view and GROUP BY for
// -table: its columns, the view's select list over them, and the rows.
type firstShape struct {
	columns, aggs string
	rows          func(n, keys int, format string) []byte
}

var firstShapes = map[string]firstShape{
	"bigint": {"(k BIGINT, v BIGINT)", "count(*) AS c, sum(v) AS s", rowsData},
	"mixed": {"(id BIGINT, k INT, amount DOUBLE PRECISION, ts TIMESTAMP, name VARCHAR(32))",
		"count(*) AS c, sum(amount) AS s, max(ts) AS m", mixedRowsData},
}

// mixedRowsData is n rows of the mixed table: id the row number, k
// uniform in [0, keys), an amount in cents, a timestamp with microseconds
// in 2026, a name of 4-23 letters.
func mixedRowsData(n, keys int, format string) []byte {
	sep := byte('\t')
	if format == "csv" {
		sep = ','
	}
	r := rand.New(rand.NewPCG(uint64(n), uint64(keys)))
	b := make([]byte, 0, n*64)
	for i := range n {
		b = strconv.AppendInt(b, int64(i), 10)
		b = append(b, sep)
		b = strconv.AppendInt(b, r.Int64N(int64(keys)), 10)
		b = append(b, sep)
		b = strconv.AppendFloat(b, float64(r.Int64N(10_000_000))/100, 'f', -1, 64)
		b = append(b, sep)
		b = fmt.Appendf(b, "2026-%02d-%02d %02d:%02d:%02d.%06d", 1+r.IntN(12), 1+r.IntN(28), r.IntN(24), r.IntN(60), r.IntN(60), r.IntN(1000000))
		b = append(b, sep)
		for k := 4 + r.IntN(20); k > 0; k-- {
			b = append(b, byte('a'+r.IntN(26)))
		}
		b = append(b, '\n')
	}
	return b
}

// copyOptions is the option list of a COPY in format.
func copyOptions(format string) string {
	if format == "csv" {
		return " (FORMAT csv)"
	}
	return ""
}

// --- servers ---

type streamdb struct {
	cmd      *exec.Cmd
	conn     *pgx.Conn
	addr     string
	httpAddr string
}

// startStreamdb starts a fresh server: a new data directory and a new
// process, with the settings a new user of issue 19 had.
func startStreamdb(ctx context.Context, bin, dir string) (*streamdb, error) {
	data, err := os.MkdirTemp(dir, "streamdb-data-")
	if err != nil {
		return nil, err
	}
	addr := fmt.Sprintf("127.0.0.1:%d", *sdbPort)
	httpAddr := fmt.Sprintf("127.0.0.1:%d", *sdbPort+1)
	cmd := exec.Command(bin, "--listen", addr, "--data-dir", data, "--log-level", "warn", "--http", httpAddr, "--pprof")
	cmd.Stdout, cmd.Stderr = os.Stderr, os.Stderr
	// Its own process group: a terminal's ^C reaches us, and we stop it.
	cmd.SysProcAttr = &syscall.SysProcAttr{Setpgid: true}
	if err := cmd.Start(); err != nil {
		return nil, err
	}
	s := &streamdb{cmd: cmd, addr: addr, httpAddr: httpAddr}
	if err := waitPort(addr, 30*time.Second); err != nil {
		s.stop()
		return nil, fmt.Errorf("streamdb did not start: %w", err)
	}
	conn, err := connect(ctx, fmt.Sprintf("postgres://streamdb@%s/streamdb?sslmode=disable", addr))
	if err != nil {
		s.stop()
		return nil, err
	}
	s.conn = conn
	if err := execAll(ctx, conn, "SET checkpoint.interval = '1s'"); err != nil {
		s.stop()
		return nil, err
	}
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

// cpu is the server's CPU time so far (user + system, /proc/PID/stat).
func (s *streamdb) cpu() time.Duration {
	b, err := os.ReadFile(fmt.Sprintf("/proc/%d/stat", s.cmd.Process.Pid))
	if err != nil {
		return 0
	}
	// Fields after the command name, which is in parentheses.
	f := strings.Fields(string(b[bytes.LastIndexByte(b, ')')+1:]))
	if len(f) < 13 {
		return 0
	}
	u, _ := strconv.ParseInt(f[11], 10, 64)
	st, _ := strconv.ParseInt(f[12], 10, 64)
	return time.Duration(u+st) * 10 * time.Millisecond // USER_HZ is 100 on Linux
}

// profile saves a CPU profile of the next -profile-seconds to name in
// -profile's directory, in the background; the returned function waits.
func (s *streamdb) profile(name string) func() {
	if *profileDir == "" {
		return func() {}
	}
	done := make(chan struct{})
	go func() {
		defer close(done)
		url := fmt.Sprintf("http://%s/debug/pprof/profile?seconds=%d", s.httpAddr, *profileSecs)
		resp, err := http.Get(url)
		if err != nil {
			fmt.Fprintln(os.Stderr, "peers: profile:", err)
			return
		}
		defer resp.Body.Close()
		f, err := os.Create(filepath.Join(*profileDir, name))
		if err != nil {
			fmt.Fprintln(os.Stderr, "peers: profile:", err)
			return
		}
		defer f.Close()
		io.Copy(f, resp.Body)
	}()
	time.Sleep(100 * time.Millisecond) // the profile has begun
	return func() { <-done }
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
	if err := pg.start(ctx); err != nil {
		return nil, err
	}
	if err := pg.conn.QueryRow(ctx, "SHOW server_version").Scan(&pg.version); err != nil {
		pg.stop()
		return nil, err
	}
	return pg, nil
}

func (pg *postgres) start(ctx context.Context) error {
	opts := fmt.Sprintf("-p %d -k %s -c listen_addresses=127.0.0.1 -c fsync=on -c synchronous_commit=on", *pgPort, pg.data)
	if err := pg.run("pg_ctl", "-D", pg.data, "-l", filepath.Join(pg.data, "server.log"), "-o", opts, "-w", "start"); err != nil {
		return err
	}
	conn, err := connect(ctx, pg.url())
	if err != nil {
		pg.stop()
		return err
	}
	pg.conn = conn
	return nil
}

func (pg *postgres) url() string {
	return fmt.Sprintf("postgres://postgres@127.0.0.1:%d/postgres?sslmode=disable", *pgPort)
}

// restart gives PostgreSQL a new process (its first run), on the same
// cluster with the earlier runs' tables dropped.
func (pg *postgres) restart(ctx context.Context) error {
	pg.stop()
	return pg.start(ctx)
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
		pg.conn = nil
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

// copier COPYs data into a table of one server, through one client.
type copier struct {
	client string    // pgx or psql
	conn   *pgx.Conn // pgx
	psql   []string  // psql's command line up to its -c
	file   string    // psql: data is this file
}

func (c copier) copy(ctx context.Context, table, format string, data []byte) error {
	want := int64(bytes.Count(data, []byte{'\n'}))
	stmt := "COPY " + table + " FROM STDIN" + copyOptions(format)
	if c.client == "psql" {
		cmd := exec.CommandContext(ctx, c.psql[0], append(c.psql[1:], "-c", `\copy `+table+" FROM '"+c.file+"'"+copyOptions(format))...)
		out, err := cmd.CombinedOutput()
		if err != nil {
			return fmt.Errorf("psql \\copy %s: %v: %s", table, err, out)
		}
		if got := strings.TrimSpace(string(out)); got != fmt.Sprintf("COPY %d", want) {
			return fmt.Errorf("psql \\copy %s: %q, want COPY %d", table, got, want)
		}
		return nil
	}
	tag, err := c.conn.PgConn().CopyFrom(ctx, bytes.NewReader(data), stmt)
	if err != nil {
		return fmt.Errorf("COPY %s: %w", table, err)
	}
	if tag.RowsAffected() != want {
		return fmt.Errorf("COPY %s: %d rows, want %d", table, tag.RowsAffected(), want)
	}
	return nil
}

func psqlArgs(url string) []string { return []string{"psql", "-X", "-v", "ON_ERROR_STOP=1", url} }

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

func medianOf(ds []time.Duration) time.Duration {
	if len(ds) == 0 {
		return 0
	}
	s := slices.Clone(ds)
	slices.Sort(s)
	return s[len(s)/2]
}

func ms(d time.Duration) string { return d.Round(time.Millisecond).String() }

// --- (a) first run: COPY and view complete, against PostgreSQL ---

// viewRun is one run of the user's scenario on streamdb: a new stream and
// GROUP BY view, a COPY, and the wait until the view counts every row.
type viewRun struct{ copy, total, cpu time.Duration }

func runView(ctx context.Context, s *streamdb, cp copier, name, format string, data []byte, shape firstShape) (viewRun, error) {
	rows := int64(bytes.Count(data, []byte{'\n'}))
	src, view := name+"_in", name
	if err := execAll(ctx, s.conn,
		"CREATE TABLE "+src+" "+shape.columns,
		"CREATE MATERIALIZED VIEW "+view+" AS SELECT k, "+shape.aggs+" FROM "+src+" GROUP BY k",
	); err != nil {
		return viewRun{}, err
	}
	cpu0 := s.cpu()
	start := time.Now()
	if err := cp.copy(ctx, src, format, data); err != nil {
		return viewRun{}, err
	}
	r := viewRun{copy: time.Since(start)}
	deadline := start.Add(10 * time.Minute)
	for {
		if err := execAll(ctx, s.conn, "CHECKPOINT"); err != nil {
			return r, err
		}
		var got int64
		if err := s.conn.QueryRow(ctx, "SELECT coalesce(sum(c), 0)::BIGINT FROM "+view).Scan(&got); err != nil {
			return r, err
		}
		if got == rows {
			r.total, r.cpu = time.Since(start), s.cpu()-cpu0
			break
		}
		if got > rows {
			return r, fmt.Errorf("view %s counts %d rows, more than the %d copied", view, got, rows)
		}
		if time.Now().After(deadline) {
			return r, fmt.Errorf("view %s incomplete after 10 minutes: %d of %d rows", view, got, rows)
		}
		time.Sleep(5 * time.Millisecond)
	}
	// Dropped so that every run starts from the same state; not timed.
	return r, execAll(ctx, s.conn, "DROP MATERIALIZED VIEW "+view, "DROP TABLE "+src)
}

// runs does a first run on a fresh server and -warm runs after it.
func runs(ctx context.Context, bin, dir, label, format, client string, data []byte, shape firstShape) (first viewRun, warmRuns []viewRun, err error) {
	s, err := startStreamdb(ctx, bin, dir)
	if err != nil {
		return first, nil, err
	}
	defer s.stop()
	cp := copier{client: client, conn: s.conn, file: filepath.Join(dir, "rows."+format),
		psql: psqlArgs(fmt.Sprintf("postgres://streamdb@%s/streamdb?sslmode=disable", s.addr))}
	for i := 0; i <= *warm; i++ {
		var wait func()
		if i <= 1 {
			wait = s.profile(fmt.Sprintf("%s-%s-%s-%s.prof", label, format, client, map[bool]string{true: "first", false: "warm"}[i == 0]))
		}
		r, err := runView(ctx, s, cp, fmt.Sprintf("%s_%d", label, i), format, data, shape)
		if err != nil {
			return first, nil, err
		}
		if wait != nil {
			wait()
		}
		fmt.Fprintf(os.Stderr, "peers: streamdb %s %s %s run %d (%s): COPY %v, view complete %v, server CPU %v\n",
			label, format, client, i, map[bool]string{true: "first", false: "warm"}[i == 0], ms(r.copy), ms(r.total), ms(r.cpu))
		if i == 0 {
			first = r
		} else {
			warmRuns = append(warmRuns, r)
		}
	}
	return first, warmRuns, nil
}

func benchFirst(ctx context.Context, bin, dir string, pg *postgres, format, client string) ([]figure, error) {
	shape, ok := firstShapes[*tableShape]
	if !ok {
		return nil, fmt.Errorf("-table %q: want bigint or mixed", *tableShape)
	}
	data := shape.rows(*copyRows, 1000, format)
	file := filepath.Join(dir, "rows."+format)
	if err := os.WriteFile(file, data, 0o644); err != nil {
		return nil, err
	}
	defer os.Remove(file)
	first, warmRuns, err := runs(ctx, bin, dir, "first", format, client, data, shape)
	if err != nil {
		return nil, err
	}

	// PostgreSQL: a restarted server's first COPY (+ GROUP BY), then warm ones.
	if err := pg.restart(ctx); err != nil {
		return nil, err
	}
	cp := copier{client: client, conn: pg.conn, file: file, psql: psqlArgs(pg.url())}
	var pgCopy, pgTotal []time.Duration
	for i := 0; i <= *warm; i++ {
		t := fmt.Sprintf("first_%d", i)
		if err := execAll(ctx, pg.conn, "DROP TABLE IF EXISTS "+t, "CREATE TABLE "+t+" "+shape.columns); err != nil {
			return nil, err
		}
		start := time.Now()
		if err := cp.copy(ctx, t, format, data); err != nil {
			return nil, err
		}
		c := time.Since(start)
		if n, err := queryRows(ctx, pg.conn, "SELECT k, "+shape.aggs+" FROM "+t+" GROUP BY k"); err != nil {
			return nil, err
		} else if n != 1000 {
			return nil, fmt.Errorf("PostgreSQL GROUP BY: %d groups, want 1000", n)
		}
		total := time.Since(start)
		fmt.Fprintf(os.Stderr, "peers: PostgreSQL %s %s run %d: COPY %v, COPY + GROUP BY %v\n", format, client, i, ms(c), ms(total))
		pgCopy, pgTotal = append(pgCopy, c), append(pgTotal, total)
		if err := execAll(ctx, pg.conn, "DROP TABLE "+t); err != nil {
			return nil, err
		}
	}
	pick := func(f func(viewRun) time.Duration) []time.Duration {
		var out []time.Duration
		for _, r := range warmRuns {
			out = append(out, f(r))
		}
		return out
	}
	fig := func(name string, sf time.Duration, sw []time.Duration, pf time.Duration, pw []time.Duration) figure {
		return figure{name: name, rows: *copyRows, sdbFirst: sf, sdbWarm: medianOf(sw),
			cpuFirst: first.cpu, cpuWarm: medianOf(pick(func(r viewRun) time.Duration { return r.cpu })),
			peer: "PostgreSQL", pgFirst: pf, pgWarm: medianOf(pw), goal: 1.5}
	}
	tag := fmt.Sprintf("%s rows, %s table, %s, %s", human(*copyRows), *tableShape, format, client)
	return []figure{
		fig("COPY "+tag, first.copy, pick(func(r viewRun) time.Duration { return r.copy }), pgCopy[0], pgCopy[1:]),
		fig("view complete (PG: COPY + GROUP BY) "+tag, first.total, pick(func(r viewRun) time.Duration { return r.total }), pgTotal[0], pgTotal[1:]),
	}, nil
}

// --- (b) views of 10M rows ---

func benchView(ctx context.Context, bin, dir, format, client string, keys int) (figure, error) {
	data := rowsData(*aggRows, keys, format)
	file := filepath.Join(dir, "rows."+format)
	if err := os.WriteFile(file, data, 0o644); err != nil {
		return figure{}, err
	}
	defer os.Remove(file)
	first, warmRuns, err := runs(ctx, bin, dir, fmt.Sprintf("view%d", keys), format, client, data, firstShapes["bigint"])
	if err != nil {
		return figure{}, err
	}
	var tw, cw []time.Duration
	for _, r := range warmRuns {
		tw, cw = append(tw, r.total), append(cw, r.cpu)
	}
	return figure{name: fmt.Sprintf("view complete: %s rows, %s keys, %s, %s", human(*aggRows), human(keys), format, client),
		rows: *aggRows, sdbFirst: first.total, sdbWarm: medianOf(tw), cpuFirst: first.cpu, cpuWarm: medianOf(cw)}, nil
}

// --- (c) batch GROUP BY ---

type groupByResult struct {
	rows      int
	sdb, duck time.Duration
}

const groupBy = "SELECT k, count(*), sum(v) FROM %s GROUP BY k"

func benchGroupBy(ctx context.Context, bin, dir string) (groupByResult, error) {
	const keys = 1000
	data := rowsData(*aggRows, keys, "text")
	res := groupByResult{rows: *aggRows}
	s, err := startStreamdb(ctx, bin, dir)
	if err != nil {
		return res, err
	}
	defer s.stop()
	if err := execAll(ctx, s.conn, "CREATE TABLE g (k BIGINT, v BIGINT)"); err != nil {
		return res, err
	}
	if err := (copier{client: "pgx", conn: s.conn}).copy(ctx, "g", "text", data); err != nil {
		return res, err
	}
	check := func(n int, err error) error {
		if err == nil && n != keys {
			err = fmt.Errorf("%d groups, want %d", n, keys)
		}
		return err
	}
	var ds []time.Duration
	for range max(*warm, 1) {
		start := time.Now()
		if err := check(queryRows(ctx, s.conn, fmt.Sprintf(groupBy, "g"))); err != nil {
			return res, err
		}
		ds = append(ds, time.Since(start))
	}
	res.sdb = medianOf(ds)

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
	ds = ds[:0]
	for range max(*warm, 1) {
		start := time.Now()
		if err := check(duckRows()); err != nil {
			return res, err
		}
		ds = append(ds, time.Since(start))
	}
	res.duck = medianOf(ds)
	return res, nil
}

// --- report ---

func report(figs []figure, gb *groupByResult, pg *postgres, loadBefore, loadAfter string) {
	w := bufio.NewWriter(os.Stdout)
	defer w.Flush()
	fmt.Fprintf(w, "machine: %s, %d cores (GOMAXPROCS %d), %s/%s, %s\n", cpuModel(), runtime.NumCPU(), runtime.GOMAXPROCS(0), runtime.GOOS, runtime.GOARCH, time.Now().Format("2006-01-02 15:04 MST"))
	fmt.Fprintf(w, "load average (1, 5, 15 min): %s at the start, %s at the end\n", loadBefore, loadAfter)
	if pg != nil {
		fmt.Fprintf(w, "PostgreSQL %s (fsync on); first = a fresh server's first run, warm = median of %d more on it\n", pg.version, *warm)
	}
	fmt.Fprintln(w)
	if len(figs) > 0 {
		fmt.Fprintf(w, "| %-62s | %9s | %9s | %17s | %9s | %9s | %12s | %11s | %-4s |\n",
			"benchmark", "first", "warm", "server CPU f / w", "PG first", "PG warm", "first ratio", "warm ratio", "goal")
		fmt.Fprintf(w, "|%s|%s|%s|%s|%s|%s|%s|%s|%s|\n", dashes(64), dashes(11), dashes(11), dashes(19), dashes(11), dashes(11), dashes(14), dashes(13), dashes(6))
		for _, f := range figs {
			pf, pw, rf, rw, goal := "", "", "", "", ""
			if f.peer != "" {
				pf, pw = ms(f.pgFirst), ms(f.pgWarm)
				rf = fmt.Sprintf("%.2fx", f.pgWarm.Seconds()/f.sdbFirst.Seconds())
				rw = fmt.Sprintf("%.2fx", f.pgWarm.Seconds()/f.sdbWarm.Seconds())
				goal = map[bool]string{true: "met", false: "no"}[f.pgWarm.Seconds()/f.sdbFirst.Seconds() >= f.goal]
			}
			fmt.Fprintf(w, "| %-62s | %9s | %9s | %17s | %9s | %9s | %12s | %11s | %-4s |\n",
				f.name, ms(f.sdbFirst), ms(f.sdbWarm), ms(f.cpuFirst)+" / "+ms(f.cpuWarm), pf, pw, rf, rw, goal)
		}
		fmt.Fprintln(w, "\nratio = PostgreSQL's warm median time / streamdb's time (first run or warm median); goal: first ratio >= 1.5")
		fmt.Fprintln(w, "server CPU = the streamdb process's user + system time from the COPY's start until the view is complete")
	}
	if gb != nil {
		fmt.Fprintf(w, "\nGROUP BY k, %s rows, 1000 keys: streamdb %v (%s rows/s), DuckDB 1 thread %v (%s rows/s): %.3fx (target >= 0.25x)\n",
			human(gb.rows), ms(gb.sdb), human(int(float64(gb.rows)/gb.sdb.Seconds())), ms(gb.duck),
			human(int(float64(gb.rows)/gb.duck.Seconds())), gb.duck.Seconds()/gb.sdb.Seconds())
	}
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

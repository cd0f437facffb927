package wire

import (
	"context"
	"fmt"
	"net"
	"strconv"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/apache/arrow-go/v18/arrow"
	"github.com/apache/arrow-go/v18/arrow/array"
	"github.com/apache/arrow-go/v18/arrow/memory"
	"github.com/streamdb/streamdb/sql/api"
	"github.com/streamdb/streamdb/sql/scram"
	"github.com/streamdb/streamdb/sqlerr"
	"github.com/streamdb/streamdb/types"
)

// fakeEngine is a tiny in-memory engine that understands the fixed query
// strings below, over one table t(id bigint, name text).
type fakeEngine struct {
	mem *memory.CheckedAllocator
	// started receives a value when a blocking query ("SELECT sleep",
	// "SELECT stream") starts waiting; nil disables blocking queries.
	started chan struct{}
	// ended receives why a blocking query's context ended (its cause).
	ended chan error

	// roles, if set, are the roles that exist; nil means every user name
	// is a superuser without a password.
	roles map[string]fakeRole

	mu       sync.Mutex
	ids      []int64
	names    []*string
	sessions int
}

type fakeRole struct {
	verifier         string // "" for no password
	login, superuser bool
}

// loginRole is a role that may log in, with password ("" for none).
func loginRole(password string, superuser bool) fakeRole {
	r := fakeRole{login: true, superuser: superuser}
	if password != "" {
		r.verifier = scram.Verifier(password)
	}
	return r
}

func (e *fakeEngine) Role(name string) (verifier string, login, superuser, ok bool) {
	if e.roles == nil {
		return "", true, true, true
	}
	r, ok := e.roles[name]
	if !ok {
		return "", false, false, false
	}
	return r.verifier, r.login, r.superuser, true
}

type fakeRow struct {
	id   int64
	name *string
}

func strp(s string) *string { return &s }

func newFakeEngine() *fakeEngine {
	return &fakeEngine{
		mem:     memory.NewCheckedAllocator(memory.NewGoAllocator()),
		started: make(chan struct{}, 10),
		ended:   make(chan error, 10),
		ids:     []int64{1, 2, 3},
		names:   []*string{strp("alice"), nil, strp("tab\there \\ new\nline")},
	}
}

var (
	colsT      = []api.Column{{Name: "id", T: types.TInt64}, {Name: "name", T: types.TText}}
	colsN      = []api.Column{{Name: "n", T: types.TInt64}}
	paramTypes = []types.T{types.TInt64, types.TText}
)

func (e *fakeEngine) NewSession(user, database string) Session {
	e.mu.Lock()
	e.sessions++
	e.mu.Unlock()
	return &fakeSession{eng: e, user: user}
}

func (e *fakeEngine) openSessions() int {
	e.mu.Lock()
	defer e.mu.Unlock()
	return e.sessions
}

type fakeSession struct {
	eng     *fakeEngine
	user    string
	tx      byte
	timeout time.Duration
	params  map[string]string // set by SetParameter
}

func (s *fakeSession) StatementTimeout() time.Duration { return s.timeout }

// SetParameter knows statement_timeout (milliseconds) and application_name.
func (s *fakeSession) SetParameter(name, value string) (map[string]string, error) {
	switch name {
	case "statement_timeout":
		ms, err := strconv.Atoi(value)
		if err != nil {
			return nil, sqlerr.New(sqlerr.InvalidParameterValue, "invalid value for parameter %q: %q", name, value)
		}
		s.timeout = time.Duration(ms) * time.Millisecond
	case "application_name":
	default:
		return nil, sqlerr.New(sqlerr.UndefinedObject, "unrecognized configuration parameter %q", name)
	}
	if s.params == nil {
		s.params = map[string]string{}
	}
	s.params[name] = value
	if name == "application_name" {
		return map[string]string{name: value}, nil
	}
	return nil, nil
}

// Superuser: every user but "plain" is one.
func (s *fakeSession) Superuser() bool { return s.user != "plain" }

func (s *fakeSession) Sync(bool) error { return nil }

func (s *fakeSession) SetBackendPID(uint32) {}

func (s *fakeSession) SetProtocolStatements(api.ProtocolStatements) {}

func (s *fakeSession) HasPrepared(string) bool { return false }

func (s *fakeSession) TxStatus() byte {
	if s.tx == 0 {
		return 'I'
	}
	return s.tx
}

func (s *fakeSession) Close() {
	s.eng.mu.Lock()
	s.eng.sessions--
	s.eng.mu.Unlock()
}

func (s *fakeSession) PrepareAll(ctx context.Context, query string) ([]*api.Stmt, error) {
	var stmts []*api.Stmt
	for part := range strings.SplitSeq(query, ";") {
		if strings.TrimSpace(part) == "" {
			continue
		}
		st, err := s.Prepare(ctx, part, nil)
		if err != nil {
			return nil, err
		}
		stmts = append(stmts, st)
	}
	return stmts, nil
}

func (s *fakeSession) Prepare(ctx context.Context, query string, paramOIDs []uint32) (*api.Stmt, error) {
	q := strings.TrimSpace(query)
	st := &api.Stmt{SQL: q}
	switch q {
	case "":
		st.Empty = true
	case "SELECT 1", "SELECT panic", "SELECT error":
		st.Columns = []api.Column{{Name: "?column?", T: types.TInt64}}
	case "SELECT id, name FROM t":
		st.Columns = colsT
	case "SELECT $1::int8, $2::text":
		st.ParamTypes, st.Columns = paramTypes, colsT
	case "INSERT INTO t VALUES ($1, $2)":
		st.ParamTypes = paramTypes
	case "SELECT series", "SELECT sleep", "SELECT stream":
		st.Columns = colsN
	case "COPY t FROM STDIN":
		st.CopyIn = true
	case "COPY t TO STDOUT":
		st.CopyOut, st.Columns = true, colsT
	case "SET x = 1", "BEGIN", "COMMIT":
	default:
		return nil, &sqlerr.Error{Code: sqlerr.SyntaxError, Msg: fmt.Sprintf("syntax error at or near %q", q), Position: 1}
	}
	return st, nil
}

func (s *fakeSession) Execute(ctx context.Context, st *api.Stmt, params []types.Datum) (*api.Result, error) {
	e := s.eng
	switch st.SQL {
	case "SELECT 1":
		return &api.Result{Tag: "SELECT", Rows: e.rows(e.int64Batch(1))}, nil
	case "SELECT panic":
		panic("boom")
	case "SELECT error":
		return nil, &sqlerr.Error{Code: sqlerr.DivisionByZero, Msg: "division by zero", Detail: "d", Hint: "h", Position: 8}
	case "SELECT id, name FROM t":
		return &api.Result{Tag: "SELECT", Rows: e.rows(e.tableBatch())}, nil
	case "COPY t TO STDOUT":
		return &api.Result{Tag: "COPY", Rows: e.rows(e.tableBatch())}, nil
	case "SELECT $1::int8, $2::text":
		ids, names := []int64{params[0].I}, []*string{strp(params[1].S)}
		if params[0].Null {
			ids[0] = -1 // the fake has no NULL ids
		}
		if params[1].Null {
			names[0] = nil
		}
		return &api.Result{Tag: "SELECT", Rows: e.rows(e.batch(ids, names))}, nil
	case "INSERT INTO t VALUES ($1, $2)":
		e.mu.Lock()
		e.ids = append(e.ids, params[0].I)
		if params[1].Null {
			e.names = append(e.names, nil)
		} else {
			e.names = append(e.names, strp(params[1].S))
		}
		e.mu.Unlock()
		return &api.Result{Tag: "INSERT 0 1"}, nil
	case "SELECT series": // 1..10 in batches of 3
		return &api.Result{Tag: "SELECT", Rows: e.rows(
			e.int64Batch(1, 2, 3), e.int64Batch(4, 5, 6), e.int64Batch(7, 8, 9), e.int64Batch(10))}, nil
	case "SELECT sleep": // the engine passes ctx.Err() through
		if e.started == nil {
			return nil, sqlerr.New(sqlerr.FeatureNotSupported, "no sleeping")
		}
		e.started <- struct{}{}
		<-ctx.Done()
		e.noteEnd(ctx)
		return nil, ctx.Err()
	case "SELECT stream": // a live stream: one batch, then blocks
		if e.started == nil {
			return nil, sqlerr.New(sqlerr.FeatureNotSupported, "no streams")
		}
		return &api.Result{Tag: "SELECT", Rows: &streamRows{eng: e, first: e.int64Batch(7)}}, nil
	case "COPY t FROM STDIN":
		return &api.Result{CopyIn: &fakeCopyIn{eng: e}}, nil
	case "SET x = 1":
		return &api.Result{Tag: "SET", ParamChanges: map[string]string{"x": "1"}, Notices: []string{"x is now 1"}}, nil
	case "BEGIN":
		s.tx = 'T'
		return &api.Result{Tag: "BEGIN"}, nil
	case "COMMIT":
		s.tx = 'I'
		return &api.Result{Tag: "COMMIT"}, nil
	}
	return nil, sqlerr.New(sqlerr.Internal, "unexpected statement %q", st.SQL)
}

// noteEnd reports why a blocking query's ctx ended, if anybody listens.
func (e *fakeEngine) noteEnd(ctx context.Context) {
	select {
	case e.ended <- context.Cause(ctx):
	default:
	}
}

func (e *fakeEngine) tableBatch() arrow.RecordBatch {
	e.mu.Lock()
	defer e.mu.Unlock()
	return e.batch(e.ids, e.names)
}

func (e *fakeEngine) batch(ids []int64, names []*string) arrow.RecordBatch {
	ib := array.NewInt64Builder(e.mem)
	defer ib.Release()
	sb := array.NewStringBuilder(e.mem)
	defer sb.Release()
	for i, id := range ids {
		ib.Append(id)
		if names[i] == nil {
			sb.AppendNull()
		} else {
			sb.Append(*names[i])
		}
	}
	ia, sa := ib.NewArray(), sb.NewArray()
	defer ia.Release()
	defer sa.Release()
	schema := arrow.NewSchema([]arrow.Field{{Name: "id", Type: ia.DataType(), Nullable: true},
		{Name: "name", Type: sa.DataType(), Nullable: true}}, nil)
	return array.NewRecordBatch(schema, []arrow.Array{ia, sa}, int64(len(ids)))
}

func (e *fakeEngine) int64Batch(vals ...int64) arrow.RecordBatch {
	b := array.NewInt64Builder(e.mem)
	defer b.Release()
	b.AppendValues(vals, nil)
	a := b.NewArray()
	defer a.Release()
	schema := arrow.NewSchema([]arrow.Field{{Name: "n", Type: a.DataType(), Nullable: true}}, nil)
	return array.NewRecordBatch(schema, []arrow.Array{a}, int64(len(vals)))
}

// sliceRows yields prepared batches.
type sliceRows struct{ batches []arrow.RecordBatch }

func (e *fakeEngine) rows(batches ...arrow.RecordBatch) *sliceRows {
	return &sliceRows{batches: batches}
}

func (r *sliceRows) Next(ctx context.Context) (arrow.RecordBatch, error) {
	if len(r.batches) == 0 {
		return nil, nil
	}
	b := r.batches[0]
	r.batches = r.batches[1:]
	return b, nil
}

func (r *sliceRows) Close() {
	for _, b := range r.batches {
		b.Release()
	}
	r.batches = nil
}

// streamRows is a live stream: one batch, then Next blocks until canceled
// and fails with 57014, as the engine's change streams do.
type streamRows struct {
	eng   *fakeEngine
	first arrow.RecordBatch
}

func (r *streamRows) Next(ctx context.Context) (arrow.RecordBatch, error) {
	if b := r.first; b != nil {
		r.first = nil
		return b, nil
	}
	r.eng.started <- struct{}{}
	<-ctx.Done()
	r.eng.noteEnd(ctx)
	return nil, sqlerr.New(sqlerr.QueryCanceled, "canceling statement due to user request")
}

func (r *streamRows) Close() {
	if r.first != nil {
		r.first.Release()
		r.first = nil
	}
}

// fakeCopyIn parses text COPY lines "id\tname" ("\N" for NULL name).
type fakeCopyIn struct {
	eng  *fakeEngine
	data []byte
}

func (c *fakeCopyIn) NumColumns() int { return 2 }

func (c *fakeCopyIn) Write(data []byte) error {
	c.data = append(c.data, data...) // Write must not keep data
	return nil
}

func (c *fakeCopyIn) Done() (string, error) {
	var ids []int64
	var names []*string
	for line := range strings.SplitSeq(strings.TrimSuffix(string(c.data), "\n"), "\n") {
		if line == `\.` {
			break
		}
		idText, name, _ := strings.Cut(line, "\t")
		id, err := strconv.ParseInt(idText, 10, 64)
		if err != nil {
			return "", sqlerr.New(sqlerr.BadCopyFileFormat, "invalid input syntax for type bigint: %q", idText)
		}
		ids = append(ids, id)
		if name == `\N` {
			names = append(names, nil)
		} else {
			names = append(names, strp(name))
		}
	}
	c.eng.mu.Lock()
	c.eng.ids = append(c.eng.ids, ids...)
	c.eng.names = append(c.eng.names, names...)
	c.eng.mu.Unlock()
	return "COPY " + strconv.Itoa(len(ids)), nil
}

func (c *fakeCopyIn) Abort(reason string) { c.data = nil }

// startServer serves eng on a TCP port of 127.0.0.1 until the test ends,
// then checks that every session was closed and every batch released.
func startServer(t *testing.T, cfg Config, eng *fakeEngine) (srv *Server, addr string) {
	t.Helper()
	srv = New(cfg, eng)
	l, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		t.Fatal(err)
	}
	served := make(chan error, 1)
	go func() { served <- srv.Serve(l) }()
	t.Cleanup(func() {
		if err := srv.Shutdown(context.Background()); err != nil {
			t.Errorf("Shutdown: %v", err)
		}
		if err := <-served; err != ErrServerClosed {
			t.Errorf("Serve returned %v, want ErrServerClosed", err)
		}
		if n := eng.openSessions(); n != 0 {
			t.Errorf("%d sessions left open", n)
		}
		eng.mem.AssertSize(t, 0)
	})
	return srv, l.Addr().String()
}

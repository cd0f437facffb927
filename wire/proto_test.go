package wire

import (
	"encoding/binary"
	"fmt"
	"io"
	"net"
	"strings"
	"testing"
	"time"

	"github.com/jackc/pgx/v5/pgproto3"
)

// rawClient speaks the protocol with pgproto3.Frontend, to test message
// sequences drivers do not produce on demand.
type rawClient struct {
	t    *testing.T
	conn net.Conn
	fe   *pgproto3.Frontend
}

func dialRaw(t *testing.T, addr string) *rawClient {
	t.Helper()
	conn, err := net.Dial("tcp", addr)
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { conn.Close() })
	conn.SetDeadline(time.Now().Add(10 * time.Second))
	c := &rawClient{t: t, conn: conn, fe: pgproto3.NewFrontend(conn, conn)}
	c.send(&pgproto3.StartupMessage{ProtocolVersion: pgproto3.ProtocolVersion30,
		Parameters: map[string]string{"user": "u", "application_name": "raw"}})
	trace := c.readUntilReady(1)
	if !strings.HasPrefix(trace[0], "AuthenticationOk") || trace[len(trace)-1] != "ReadyForQuery(I)" {
		t.Fatalf("startup: %v", trace)
	}
	return c
}

func (c *rawClient) send(msgs ...pgproto3.FrontendMessage) {
	c.t.Helper()
	for _, m := range msgs {
		c.fe.Send(m)
	}
	if err := c.fe.Flush(); err != nil {
		c.t.Fatal(err)
	}
}

// readUntilReady returns a trace of the messages received until the n-th
// ReadyForQuery, or until the connection ends ("EOF").
func (c *rawClient) readUntilReady(n int) []string {
	c.t.Helper()
	var trace []string
	for n > 0 {
		msg, err := c.fe.Receive()
		if err != nil {
			if err == io.EOF || err == io.ErrUnexpectedEOF || strings.Contains(err.Error(), "EOF") {
				return append(trace, "EOF")
			}
			c.t.Fatalf("receive after %v: %v", trace, err)
		}
		trace = append(trace, describeMsg(msg))
		if _, ok := msg.(*pgproto3.ReadyForQuery); ok {
			n--
		}
	}
	return trace
}

// readN returns a trace of the next n messages.
func (c *rawClient) readN(n int) []string {
	c.t.Helper()
	var trace []string
	for range n {
		msg, err := c.fe.Receive()
		if err != nil {
			c.t.Fatalf("receive after %v: %v", trace, err)
		}
		trace = append(trace, describeMsg(msg))
	}
	return trace
}

func describeMsg(msg pgproto3.BackendMessage) string {
	switch m := msg.(type) {
	case *pgproto3.RowDescription:
		var f []string
		for _, fd := range m.Fields {
			f = append(f, fmt.Sprintf("%s:%d:%d", fd.Name, fd.DataTypeOID, fd.Format))
		}
		return "RowDescription(" + strings.Join(f, ",") + ")"
	case *pgproto3.ParameterDescription:
		return fmt.Sprintf("ParameterDescription%v", m.ParameterOIDs)
	case *pgproto3.DataRow:
		var v []string
		for _, b := range m.Values {
			if b == nil {
				v = append(v, "NULL")
			} else {
				v = append(v, fmt.Sprintf("%q", b))
			}
		}
		return "DataRow(" + strings.Join(v, ",") + ")"
	case *pgproto3.CommandComplete:
		return "CommandComplete(" + string(m.CommandTag) + ")"
	case *pgproto3.ErrorResponse:
		return "ErrorResponse(" + m.Severity + " " + m.Code + ")"
	case *pgproto3.NoticeResponse:
		return "NoticeResponse(" + m.Message + ")"
	case *pgproto3.ReadyForQuery:
		return "ReadyForQuery(" + string(m.TxStatus) + ")"
	case *pgproto3.ParameterStatus:
		return "ParameterStatus(" + m.Name + "=" + m.Value + ")"
	case *pgproto3.CopyInResponse:
		return fmt.Sprintf("CopyInResponse(%d)", len(m.ColumnFormatCodes))
	case *pgproto3.CopyOutResponse:
		return fmt.Sprintf("CopyOutResponse(%d)", len(m.ColumnFormatCodes))
	case *pgproto3.CopyData:
		return fmt.Sprintf("CopyData(%q)", m.Data)
	}
	return strings.TrimPrefix(fmt.Sprintf("%T", msg), "*pgproto3.")
}

func int8Bytes(v int64) []byte { return binary.BigEndian.AppendUint64(nil, uint64(v)) }

func TestProtocolSequences(t *testing.T) {
	const selectParams = "SELECT $1::int8, $2::text"
	tests := []struct {
		name  string
		send  []pgproto3.FrontendMessage
		ready int // ReadyForQuery messages to wait for
		want  string
	}{
		{
			name: "row limit suspends the portal across batches",
			send: []pgproto3.FrontendMessage{
				&pgproto3.Parse{Query: "SELECT series"}, &pgproto3.Bind{}, &pgproto3.Describe{ObjectType: 'P'},
				&pgproto3.Execute{MaxRows: 4}, &pgproto3.Execute{MaxRows: 4}, &pgproto3.Execute{MaxRows: 4},
				&pgproto3.Sync{},
			},
			want: `ParseComplete BindComplete RowDescription(n:20:0) ` +
				`DataRow("1") DataRow("2") DataRow("3") DataRow("4") PortalSuspended ` +
				`DataRow("5") DataRow("6") DataRow("7") DataRow("8") PortalSuspended ` +
				`DataRow("9") DataRow("10") CommandComplete(SELECT 2) ReadyForQuery(I)`,
		},
		{
			name: "limit equal to the row count, then an empty completion",
			send: []pgproto3.FrontendMessage{
				&pgproto3.Parse{Query: "SELECT 1"}, &pgproto3.Bind{},
				&pgproto3.Execute{MaxRows: 1}, &pgproto3.Execute{}, &pgproto3.Execute{}, &pgproto3.Sync{},
			},
			want: `ParseComplete BindComplete DataRow("1") PortalSuspended CommandComplete(SELECT 0) ` +
				`CommandComplete(SELECT 0) ReadyForQuery(I)`,
		},
		{
			name: "describe statements",
			send: []pgproto3.FrontendMessage{
				&pgproto3.Parse{Name: "s", Query: selectParams}, &pgproto3.Describe{ObjectType: 'S', Name: "s"},
				&pgproto3.Parse{Name: "i", Query: "INSERT INTO t VALUES ($1, $2)"}, &pgproto3.Describe{ObjectType: 'S', Name: "i"},
				&pgproto3.Parse{Name: "c", Query: "COPY t TO STDOUT"}, &pgproto3.Describe{ObjectType: 'S', Name: "c"},
				&pgproto3.Sync{},
			},
			want: `ParseComplete ParameterDescription[20 25] RowDescription(id:20:0,name:25:0) ` +
				`ParseComplete ParameterDescription[20 25] NoData ` +
				`ParseComplete ParameterDescription[] NoData ReadyForQuery(I)`,
		},
		{
			name: "binary and text params, mixed result formats",
			send: []pgproto3.FrontendMessage{
				&pgproto3.Parse{Query: selectParams, ParameterOIDs: []uint32{20, 25}},
				&pgproto3.Bind{ParameterFormatCodes: []int16{1, 0}, Parameters: [][]byte{int8Bytes(42), []byte("hi")},
					ResultFormatCodes: []int16{1, 0}},
				&pgproto3.Describe{ObjectType: 'P'}, &pgproto3.Execute{},
				&pgproto3.Bind{ParameterFormatCodes: []int16{0}, Parameters: [][]byte{[]byte("-3"), nil},
					ResultFormatCodes: []int16{1}},
				&pgproto3.Execute{}, &pgproto3.Sync{},
			},
			want: `ParseComplete BindComplete RowDescription(id:20:1,name:25:0) ` +
				`DataRow("\x00\x00\x00\x00\x00\x00\x00*","hi") CommandComplete(SELECT 1) ` +
				`BindComplete DataRow("\xff\xff\xff\xff\xff\xff\xff\xfd",NULL) CommandComplete(SELECT 1) ReadyForQuery(I)`,
		},
		{
			name: "unknown parameter OID is left to the engine",
			send: []pgproto3.FrontendMessage{
				&pgproto3.Parse{Query: selectParams, ParameterOIDs: []uint32{2950, 0}},
				&pgproto3.Describe{ObjectType: 'S'}, &pgproto3.Sync{},
			},
			want: `ParseComplete ParameterDescription[20 25] RowDescription(id:20:0,name:25:0) ReadyForQuery(I)`,
		},
		{
			name: "after an error messages are discarded until Sync; one ReadyForQuery per Sync",
			send: []pgproto3.FrontendMessage{
				&pgproto3.Parse{Query: "bogus"}, &pgproto3.Bind{}, &pgproto3.Query{String: "SELECT 1"},
				&pgproto3.FunctionCall{}, &pgproto3.Execute{}, &pgproto3.Flush{}, &pgproto3.Sync{}, &pgproto3.Sync{},
				&pgproto3.Query{String: "SELECT 1"},
			},
			ready: 3,
			want: `ErrorResponse(ERROR 42601) ReadyForQuery(I) ReadyForQuery(I) ` +
				`RowDescription(?column?:20:0) DataRow("1") CommandComplete(SELECT 1) ReadyForQuery(I)`,
		},
		{
			name: "execution error in a pipeline skips to Sync",
			send: []pgproto3.FrontendMessage{
				&pgproto3.Parse{Query: "SELECT error"}, &pgproto3.Bind{}, &pgproto3.Execute{},
				&pgproto3.Parse{Query: "SELECT 1"}, &pgproto3.Bind{}, &pgproto3.Execute{}, &pgproto3.Sync{},
				&pgproto3.Bind{}, &pgproto3.Execute{}, &pgproto3.Sync{},
			},
			ready: 2,
			want: `ParseComplete BindComplete ErrorResponse(ERROR 22012) ReadyForQuery(I) ` +
				`BindComplete ErrorResponse(ERROR 22012) ReadyForQuery(I)`,
		},
		{
			name: "missing statement and portal",
			send: []pgproto3.FrontendMessage{
				&pgproto3.Bind{PreparedStatement: "nope"}, &pgproto3.Sync{},
				&pgproto3.Execute{Portal: "nope"}, &pgproto3.Sync{},
				&pgproto3.Describe{ObjectType: 'S', Name: "nope"}, &pgproto3.Sync{},
				&pgproto3.Describe{ObjectType: 'X'}, &pgproto3.Sync{},
			},
			ready: 4,
			want: `ErrorResponse(ERROR 26000) ReadyForQuery(I) ErrorResponse(ERROR 34000) ReadyForQuery(I) ` +
				`ErrorResponse(ERROR 26000) ReadyForQuery(I) ErrorResponse(ERROR 08P01) ReadyForQuery(I)`,
		},
		{
			name: "duplicate names",
			send: []pgproto3.FrontendMessage{
				&pgproto3.Parse{Name: "s", Query: "SELECT 1"}, &pgproto3.Parse{Name: "s", Query: "SELECT 1"}, &pgproto3.Sync{},
				&pgproto3.Query{String: "BEGIN"},
				&pgproto3.Bind{DestinationPortal: "p", PreparedStatement: "s"},
				&pgproto3.Bind{DestinationPortal: "p", PreparedStatement: "s"}, &pgproto3.Sync{},
				&pgproto3.Query{String: "COMMIT"},
			},
			ready: 4,
			want: `ParseComplete ErrorResponse(ERROR 42P05) ReadyForQuery(I) CommandComplete(BEGIN) ReadyForQuery(T) ` +
				`BindComplete ErrorResponse(ERROR 42P03) ReadyForQuery(T) CommandComplete(COMMIT) ReadyForQuery(I)`,
		},
		{
			name: "bad Bind: parameter count, format counts, format codes, values",
			send: []pgproto3.FrontendMessage{
				&pgproto3.Parse{Name: "s", Query: selectParams}, &pgproto3.Sync{},
				&pgproto3.Bind{PreparedStatement: "s", Parameters: [][]byte{[]byte("1")}}, &pgproto3.Sync{},
				&pgproto3.Bind{PreparedStatement: "s", ParameterFormatCodes: []int16{0, 0, 0},
					Parameters: [][]byte{[]byte("1"), []byte("x")}}, &pgproto3.Sync{},
				&pgproto3.Bind{PreparedStatement: "s", ParameterFormatCodes: []int16{7},
					Parameters: [][]byte{[]byte("1"), []byte("x")}}, &pgproto3.Sync{},
				&pgproto3.Bind{PreparedStatement: "s", Parameters: [][]byte{[]byte("1"), []byte("x")},
					ResultFormatCodes: []int16{0, 0, 0}}, &pgproto3.Sync{},
				&pgproto3.Bind{PreparedStatement: "s", Parameters: [][]byte{[]byte("one"), []byte("x")}}, &pgproto3.Sync{},
				&pgproto3.Bind{PreparedStatement: "s", ParameterFormatCodes: []int16{1},
					Parameters: [][]byte{[]byte("1"), []byte("x")}}, &pgproto3.Sync{},
			},
			ready: 7,
			want: `ParseComplete ReadyForQuery(I) ErrorResponse(ERROR 08P01) ReadyForQuery(I) ` +
				`ErrorResponse(ERROR 08P01) ReadyForQuery(I) ErrorResponse(ERROR 08P01) ReadyForQuery(I) ` +
				`ErrorResponse(ERROR 08P01) ReadyForQuery(I) ErrorResponse(ERROR 22P02) ReadyForQuery(I) ` +
				`ErrorResponse(ERROR 22P03) ReadyForQuery(I)`,
		},
		{
			name: "close statement and portal",
			send: []pgproto3.FrontendMessage{
				&pgproto3.Parse{Name: "s", Query: "SELECT 1"}, &pgproto3.Bind{PreparedStatement: "s"},
				&pgproto3.Close{ObjectType: 'P'}, &pgproto3.Close{ObjectType: 'S', Name: "s"},
				&pgproto3.Close{ObjectType: 'S', Name: "never"}, &pgproto3.Bind{PreparedStatement: "s"}, &pgproto3.Sync{},
			},
			want: `ParseComplete BindComplete CloseComplete CloseComplete CloseComplete ErrorResponse(ERROR 26000) ReadyForQuery(I)`,
		},
		{
			name: "portals end with the implicit transaction, survive in a block",
			send: []pgproto3.FrontendMessage{
				&pgproto3.Parse{Name: "s", Query: "SELECT series"},
				&pgproto3.Bind{DestinationPortal: "p", PreparedStatement: "s"}, &pgproto3.Execute{Portal: "p", MaxRows: 1}, &pgproto3.Sync{},
				&pgproto3.Execute{Portal: "p", MaxRows: 1}, &pgproto3.Sync{},
				&pgproto3.Query{String: "BEGIN"},
				&pgproto3.Bind{DestinationPortal: "p", PreparedStatement: "s"}, &pgproto3.Execute{Portal: "p", MaxRows: 1}, &pgproto3.Sync{},
				&pgproto3.Execute{Portal: "p", MaxRows: 1}, &pgproto3.Sync{},
				&pgproto3.Query{String: "COMMIT"},
			},
			ready: 6,
			want: `ParseComplete BindComplete DataRow("1") PortalSuspended ReadyForQuery(I) ` +
				`ErrorResponse(ERROR 34000) ReadyForQuery(I) CommandComplete(BEGIN) ReadyForQuery(T) ` +
				`BindComplete DataRow("1") PortalSuspended ReadyForQuery(T) DataRow("2") PortalSuspended ReadyForQuery(T) ` +
				`CommandComplete(COMMIT) ReadyForQuery(I)`,
		},
		{
			name: "empty queries",
			send: []pgproto3.FrontendMessage{
				&pgproto3.Query{String: ""},
				&pgproto3.Parse{Query: ""}, &pgproto3.Bind{}, &pgproto3.Describe{ObjectType: 'P'}, &pgproto3.Execute{}, &pgproto3.Sync{},
			},
			ready: 2,
			want:  `EmptyQueryResponse ReadyForQuery(I) ParseComplete BindComplete NoData EmptyQueryResponse ReadyForQuery(I)`,
		},
		{
			name: "simple query results, notices and parameter changes",
			send: []pgproto3.FrontendMessage{&pgproto3.Query{String: "SELECT id, name FROM t; SET x = 1"}},
			want: `RowDescription(id:20:0,name:25:0) DataRow("1","alice") DataRow("2",NULL) ` +
				`DataRow("3","tab\there \\ new\nline") CommandComplete(SELECT 3) ` +
				`NoticeResponse(x is now 1) CommandComplete(SET) ParameterStatus(x=1) ReadyForQuery(I)`,
		},
		{
			name: "COPY FROM STDIN ignores Flush and Sync",
			send: []pgproto3.FrontendMessage{
				&pgproto3.Query{String: "COPY t FROM STDIN"},
				&pgproto3.CopyData{Data: []byte("9\tz")}, &pgproto3.Flush{}, &pgproto3.Sync{},
				&pgproto3.CopyData{Data: []byte("z\n")}, &pgproto3.CopyDone{},
				&pgproto3.Query{String: "SELECT id, name FROM t"},
			},
			ready: 2,
			want: `CopyInResponse(2) CommandComplete(COPY 1) ReadyForQuery(I) RowDescription(id:20:0,name:25:0) ` +
				`DataRow("1","alice") DataRow("2",NULL) DataRow("3","tab\there \\ new\nline") DataRow("9","zz") ` +
				`CommandComplete(SELECT 4) ReadyForQuery(I)`,
		},
		{
			name: "CopyFail, then leftover copy messages are ignored",
			send: []pgproto3.FrontendMessage{
				&pgproto3.Query{String: "COPY t FROM STDIN"}, &pgproto3.CopyData{Data: []byte("9\tz\n")},
				&pgproto3.CopyFail{Message: "oops"}, &pgproto3.CopyData{Data: []byte("late")}, &pgproto3.CopyDone{},
				&pgproto3.Query{String: "SELECT 1"},
			},
			ready: 2,
			want: `CopyInResponse(2) ErrorResponse(ERROR 57014) ReadyForQuery(I) ` +
				`RowDescription(?column?:20:0) DataRow("1") CommandComplete(SELECT 1) ReadyForQuery(I)`,
		},
		{
			name: "unexpected message during COPY FROM",
			send: []pgproto3.FrontendMessage{
				&pgproto3.Query{String: "COPY t FROM STDIN"}, &pgproto3.Query{String: "SELECT 1"},
			},
			want: `CopyInResponse(2) ErrorResponse(ERROR 08P01) ReadyForQuery(I)`,
		},
		{
			name: "COPY TO STDOUT, simple and extended",
			send: []pgproto3.FrontendMessage{
				&pgproto3.Query{String: "COPY t TO STDOUT"},
				&pgproto3.Parse{Query: "COPY t TO STDOUT"}, &pgproto3.Bind{}, &pgproto3.Describe{ObjectType: 'P'},
				&pgproto3.Execute{}, &pgproto3.Sync{},
			},
			ready: 2,
			want: `CopyOutResponse(2) CopyData("1\talice\n") CopyData("2\t\\N\n") CopyData("3\ttab\\there \\\\ new\\nline\n") ` +
				`CopyDone CommandComplete(COPY 3) ReadyForQuery(I) ParseComplete BindComplete NoData ` +
				`CopyOutResponse(2) CopyData("1\talice\n") CopyData("2\t\\N\n") CopyData("3\ttab\\there \\\\ new\\nline\n") ` +
				`CopyDone CommandComplete(COPY 3) ReadyForQuery(I)`,
		},
		{
			name: "function call is not supported",
			send: []pgproto3.FrontendMessage{&pgproto3.FunctionCall{Function: 1}},
			want: `ErrorResponse(ERROR 0A000) ReadyForQuery(I)`,
		},
		{
			name: "engine panic in the extended protocol",
			send: []pgproto3.FrontendMessage{
				&pgproto3.Parse{Query: "SELECT panic"}, &pgproto3.Bind{}, &pgproto3.Execute{}, &pgproto3.Sync{},
				&pgproto3.Query{String: "SELECT 1"},
			},
			ready: 2,
			want: `ParseComplete BindComplete ErrorResponse(ERROR XX000) ReadyForQuery(I) ` +
				`RowDescription(?column?:20:0) DataRow("1") CommandComplete(SELECT 1) ReadyForQuery(I)`,
		},
	}
	for _, tc := range tests {
		t.Run(tc.name, func(t *testing.T) {
			_, addr := startServer(t, Config{}, newFakeEngine())
			c := dialRaw(t, addr)
			c.send(tc.send...)
			got := strings.Join(c.readUntilReady(max(tc.ready, 1)), " ")
			if got != tc.want {
				t.Errorf("got:\n%s\nwant:\n%s", got, tc.want)
			}
			// The session is still in sync.
			c.send(&pgproto3.Sync{})
			if got := c.readUntilReady(1); len(got) != 1 {
				t.Errorf("after the sequence: %v", got)
			}
		})
	}
}

func TestProtocolFlush(t *testing.T) {
	_, addr := startServer(t, Config{}, newFakeEngine())
	c := dialRaw(t, addr)
	c.send(&pgproto3.Parse{Query: "SELECT 1"}, &pgproto3.Bind{}, &pgproto3.Flush{})
	if got := strings.Join(c.readN(2), " "); got != "ParseComplete BindComplete" {
		t.Fatalf("after Flush: %s", got)
	}
	c.send(&pgproto3.Execute{}, &pgproto3.Sync{})
	if got := strings.Join(c.readUntilReady(1), " "); got != `DataRow("1") CommandComplete(SELECT 1) ReadyForQuery(I)` {
		t.Fatalf("after Sync: %s", got)
	}
}

// TestProtocolFatal checks that protocol violations end the connection with
// FATAL 08P01 and leave the server serving.
func TestProtocolFatal(t *testing.T) {
	tests := []struct {
		name string
		raw  []byte
		want string
	}{
		{"unknown message type", []byte{'z', 0, 0, 0, 4}, "ErrorResponse(FATAL 08P01) EOF"},
		{"malformed Bind", []byte{'B', 0, 0, 0, 6, 'a', 'b'}, "ErrorResponse(FATAL 08P01) EOF"},
		{"bad length", []byte{'Q', 0, 0, 0, 1}, "ErrorResponse(FATAL 08P01) EOF"},
		{"password message after startup", []byte{'p', 0, 0, 0, 5, 0}, "ErrorResponse(FATAL 08P01) EOF"},
		{"oversize message", []byte{'Q', 0, 0, 0x10, 0}, "ErrorResponse(FATAL 08P01) EOF"},
		{"terminate", []byte{'X', 0, 0, 0, 4}, "EOF"},
	}
	eng := newFakeEngine()
	_, addr := startServer(t, Config{MaxMessageSize: 1024}, eng)
	for _, tc := range tests {
		t.Run(tc.name, func(t *testing.T) {
			c := dialRaw(t, addr)
			if _, err := c.conn.Write(tc.raw); err != nil {
				t.Fatal(err)
			}
			if got := strings.Join(c.readUntilReady(1), " "); got != tc.want {
				t.Errorf("got %s, want %s", got, tc.want)
			}
		})
	}
	c := dialRaw(t, addr)
	c.send(&pgproto3.Query{String: "SELECT 1"})
	if got := c.readUntilReady(1); len(got) != 4 {
		t.Errorf("server after fatal errors: %v", got)
	}
}

func TestStartup(t *testing.T) {
	_, addr := startServer(t, Config{}, newFakeEngine())
	dial := func(t *testing.T) (net.Conn, *pgproto3.Frontend) {
		conn, err := net.Dial("tcp", addr)
		if err != nil {
			t.Fatal(err)
		}
		t.Cleanup(func() { conn.Close() })
		conn.SetDeadline(time.Now().Add(10 * time.Second))
		return conn, pgproto3.NewFrontend(conn, conn)
	}
	t.Run("SSLRequest and GSSEncRequest are refused", func(t *testing.T) {
		conn, fe := dial(t)
		for _, m := range []pgproto3.FrontendMessage{&pgproto3.GSSEncRequest{}, &pgproto3.SSLRequest{}} {
			fe.Send(m)
			fe.Flush()
			b := make([]byte, 1)
			if _, err := io.ReadFull(conn, b); err != nil || b[0] != 'N' {
				t.Fatalf("%T: got %q, %v", m, b, err)
			}
		}
		fe.Send(&pgproto3.StartupMessage{ProtocolVersion: pgproto3.ProtocolVersion30, Parameters: map[string]string{"user": "u"}})
		fe.Flush()
		c := &rawClient{t: t, conn: conn, fe: fe}
		got := strings.Join(c.readUntilReady(1), " ")
		for _, want := range []string{"AuthenticationOk", "ParameterStatus(server_version=15.0 (streamdb))",
			"ParameterStatus(session_authorization=u)", "BackendKeyData", "ReadyForQuery(I)"} {
			if !strings.Contains(got, want) {
				t.Errorf("startup reply %q lacks %q", got, want)
			}
		}
	})
	t.Run("missing user", func(t *testing.T) {
		conn, fe := dial(t)
		fe.Send(&pgproto3.StartupMessage{ProtocolVersion: pgproto3.ProtocolVersion30, Parameters: map[string]string{"database": "d"}})
		fe.Flush()
		c := &rawClient{t: t, conn: conn, fe: fe}
		if got := strings.Join(c.readUntilReady(1), " "); got != "ErrorResponse(FATAL 28000) EOF" {
			t.Errorf("got %s", got)
		}
	})
	t.Run("garbage startup packet", func(t *testing.T) {
		conn, fe := dial(t)
		conn.Write([]byte{0, 0, 0, 8, 1, 2, 3, 4})
		c := &rawClient{t: t, conn: conn, fe: fe}
		if got := strings.Join(c.readUntilReady(1), " "); got != "ErrorResponse(FATAL 08P01) EOF" {
			t.Errorf("got %s", got)
		}
	})
}

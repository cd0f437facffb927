package wire

import (
	"io"
	"net"
	"testing"
	"time"

	"github.com/jackc/pgx/v5/pgproto3"
)

func encodeMsgs(msgs ...pgproto3.FrontendMessage) []byte {
	var b []byte
	for _, m := range msgs {
		var err error
		if b, err = m.Encode(b); err != nil {
			panic(err)
		}
	}
	return b
}

// FuzzServeConn feeds arbitrary bytes after a valid startup to a session:
// the server must never panic, hang or leak.
func FuzzServeConn(f *testing.F) {
	f.Add(encodeMsgs(&pgproto3.Query{String: "SELECT id, name FROM t; SET x = 1"}))
	f.Add(encodeMsgs(&pgproto3.Parse{Query: "SELECT series"}, &pgproto3.Bind{}, &pgproto3.Describe{ObjectType: 'P'},
		&pgproto3.Execute{MaxRows: 2}, &pgproto3.Execute{}, &pgproto3.Sync{}))
	f.Add(encodeMsgs(&pgproto3.Parse{Name: "s", Query: "SELECT $1::int8, $2::text"},
		&pgproto3.Bind{PreparedStatement: "s", ParameterFormatCodes: []int16{1}, Parameters: [][]byte{int8Bytes(1), []byte("abcdefgh")}},
		&pgproto3.Execute{}, &pgproto3.Sync{}))
	f.Add(encodeMsgs(&pgproto3.Query{String: "COPY t FROM STDIN"}, &pgproto3.CopyData{Data: []byte("1\tx\n")},
		&pgproto3.CopyDone{}, &pgproto3.Query{String: "COPY t TO STDOUT"}))
	f.Add(encodeMsgs(&pgproto3.Query{String: "SELECT panic"}, &pgproto3.Parse{Query: "bogus"}, &pgproto3.Flush{}))
	f.Add([]byte{'z', 0, 0, 0, 4})

	eng := newFakeEngine()
	eng.started = nil // no blocking queries
	srv := New(Config{MaxMessageSize: 1 << 16}, eng)
	startup := encodeMsgs(&pgproto3.StartupMessage{ProtocolVersion: pgproto3.ProtocolVersion30,
		Parameters: map[string]string{"user": "fuzz"}})

	f.Fuzz(func(t *testing.T, data []byte) {
		client, server := net.Pipe()
		done := make(chan struct{})
		go func() {
			srv.ServeConn(server)
			close(done)
		}()
		client.SetDeadline(time.Now().Add(5 * time.Second))
		go io.Copy(io.Discard, client)
		// Writes return once the server has read the bytes; they fail if
		// the server has closed the connection, which is fine.
		client.Write(startup)
		client.Write(data)
		client.Write(encodeMsgs(&pgproto3.Terminate{}))
		client.Close()
		select {
		case <-done:
		case <-time.After(5 * time.Second):
			t.Fatal("ServeConn did not return after the client closed")
		}
		if n := eng.openSessions(); n != 0 {
			t.Fatalf("%d sessions left open", n)
		}
		eng.mem.AssertSize(t, 0)
	})
}

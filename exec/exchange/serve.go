package exchange

import (
	"net/http"
	"strings"
	"sync"

	"google.golang.org/grpc"
	"google.golang.org/grpc/credentials/insecure"
)

// Handler serves gRPC requests (HTTP/2 with content type application/grpc)
// with gs and every other request with h, so one listener (a node's peer
// listener) carries both its HTTP endpoints and the Flight exchanges. The
// http.Server must allow unencrypted HTTP/2 (Protocols): gRPC clients
// speak HTTP/2 with prior knowledge.
func Handler(gs *grpc.Server, h http.Handler) http.Handler {
	return http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		if r.ProtoMajor == 2 && strings.HasPrefix(r.Header.Get("Content-Type"), "application/grpc") {
			gs.ServeHTTP(w, r)
			return
		}
		h.ServeHTTP(w, r)
	})
}

// HTTP2 is the HTTP/2 configuration of a listener that serves Handler:
// every exchange stream is a long-lived HTTP/2 stream, and a connection
// carries all the streams between two nodes, so the default cap on
// concurrent streams (250 in net/http) would leave streams of large jobs
// waiting for others that never end.
func HTTP2() *http.HTTP2Config { return &http.HTTP2Config{MaxConcurrentStreams: 1 << 16} }

// Protocols are the protocols of a listener that serves Handler: HTTP/1
// for the peer endpoints, unencrypted HTTP/2 for gRPC.
func Protocols() *http.Protocols {
	p := new(http.Protocols)
	p.SetHTTP1(true)
	p.SetUnencryptedHTTP2(true)
	return p
}

// Conn is a connection to a peer's Flight server at addr (host:port), to
// be shared by every stream to that peer.
func Conn(addr string) (*grpc.ClientConn, error) {
	return grpc.NewClient(addr, grpc.WithTransportCredentials(insecure.NewCredentials()))
}

// Conns keeps one connection per peer node, dialed (Conn) on its first
// use: a distributed job's parts reach each other's Flight servers
// through it (exec.DistPart.Conn).
type Conns struct {
	// Addr is a node's Flight address (host:port).
	Addr func(node string) (string, error)
	mu   sync.Mutex
	m    map[string]*grpc.ClientConn
}

// Get returns the connection to node.
func (c *Conns) Get(node string) (grpc.ClientConnInterface, error) {
	c.mu.Lock()
	defer c.mu.Unlock()
	if cc := c.m[node]; cc != nil {
		return cc, nil
	}
	addr, err := c.Addr(node)
	if err != nil {
		return nil, err
	}
	cc, err := Conn(addr)
	if err != nil {
		return nil, err
	}
	if c.m == nil {
		c.m = map[string]*grpc.ClientConn{}
	}
	c.m[node] = cc
	return cc, nil
}

// Close closes every connection.
func (c *Conns) Close() {
	c.mu.Lock()
	defer c.mu.Unlock()
	for id, cc := range c.m {
		_ = cc.Close()
		delete(c.m, id)
	}
}

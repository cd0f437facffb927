package cluster

import (
	"io"
	"net"
	"net/url"
	"sync"
	"testing"
)

// tcpProxy forwards loopback connections to a target address until it is
// cut: then it drops every byte both ways and holds the connections open
// (new ones too), as a network partition does, so a client sees neither
// an answer nor an error, only time passing. Heal closes the held
// connections and forwards new ones again.
type tcpProxy struct {
	l      net.Listener
	target string
	mu     sync.Mutex
	cut    bool
	conns  map[net.Conn]bool // client and target sides of live connections
}

// startTCPProxy listens on a free loopback port and forwards to target;
// it is closed when the test ends.
func startTCPProxy(t *testing.T, target string) *tcpProxy {
	t.Helper()
	l, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		t.Fatal(err)
	}
	p := &tcpProxy{l: l, target: target, conns: map[net.Conn]bool{}}
	go p.serve()
	t.Cleanup(p.close)
	return p
}

// proxyURL is an etcd client URL whose host is a proxy's address.
func proxyURL(t *testing.T, etcdURL string) (*tcpProxy, string) {
	t.Helper()
	u, err := url.Parse(etcdURL)
	if err != nil {
		t.Fatal(err)
	}
	p := startTCPProxy(t, u.Host)
	u.Host = p.l.Addr().String()
	return p, u.String()
}

func (p *tcpProxy) serve() {
	for {
		c, err := p.l.Accept()
		if err != nil {
			return
		}
		go p.handle(c)
	}
}

func (p *tcpProxy) track(c net.Conn) {
	p.mu.Lock()
	p.conns[c] = true
	p.mu.Unlock()
}

func (p *tcpProxy) handle(c net.Conn) {
	p.track(c)
	p.mu.Lock()
	cut := p.cut
	p.mu.Unlock()
	if cut { // held open, unanswered, until Heal closes it
		_, _ = io.Copy(io.Discard, c)
		return
	}
	u, err := net.Dial("tcp", p.target)
	if err != nil {
		c.Close()
		return
	}
	p.track(u)
	go p.pipe(u, c)
	p.pipe(c, u)
}

// pipe copies from src to dst while the proxy is not cut; once it is,
// what src sends is dropped.
func (p *tcpProxy) pipe(dst, src net.Conn) {
	buf := make([]byte, 32<<10)
	for {
		n, err := src.Read(buf)
		if n > 0 {
			p.mu.Lock()
			cut := p.cut
			p.mu.Unlock()
			if !cut {
				if _, werr := dst.Write(buf[:n]); werr != nil {
					return
				}
			}
		}
		if err != nil {
			dst.Close()
			return
		}
	}
}

// Cut partitions the proxy's client from its target.
func (p *tcpProxy) Cut() {
	p.mu.Lock()
	p.cut = true
	p.mu.Unlock()
}

// Heal ends the partition: the connections held through it are closed
// (their clients reconnect) and new ones are forwarded.
func (p *tcpProxy) Heal() {
	p.mu.Lock()
	p.cut = false
	held := p.conns
	p.conns = map[net.Conn]bool{}
	p.mu.Unlock()
	for c := range held {
		c.Close()
	}
}

func (p *tcpProxy) close() {
	p.l.Close()
	p.Heal()
}

package main

import (
	"time"

	"net/http"

	"github.com/streamdb/streamdb/exec/exchange"
	"google.golang.org/grpc"
)

// exchangeServer is this node's Flight service for exchanges between
// operator instances on different nodes (exec/exchange). It is served on
// the peer listener beside the HTTP endpoints: gRPC requests (HTTP/2,
// application/grpc) go to Flight, everything else to mux.
var exchangeServer = exchange.NewServer()

// peerServer is the peer listener's server: mux's HTTP/1 endpoints and,
// over unencrypted HTTP/2, the Flight exchange service.
func peerServer(mux *http.ServeMux) *http.Server {
	gs := grpc.NewServer()
	exchangeServer.Register(gs)
	return &http.Server{Handler: exchange.Handler(gs, mux), Protocols: exchange.Protocols(), HTTP2: exchange.HTTP2(), ReadHeaderTimeout: peerHeaderTimeout}
}

const peerHeaderTimeout = 5 * time.Second

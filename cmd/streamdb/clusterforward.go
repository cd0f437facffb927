package main

import (
	"bytes"
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"net/http"
	"time"

	"github.com/apache/arrow-go/v18/arrow"
	"github.com/apache/arrow-go/v18/arrow/ipc"
	"github.com/streamdb/streamdb/sql"
	"github.com/streamdb/streamdb/sqlerr"
	"github.com/streamdb/streamdb/types"
)

// Forwarded reads (docs/design/cluster.md): a node asked to read a view
// whose job another node runs posts the statement to that node's peer
// listener (POST /peer/query) and relays the answer, an Arrow IPC stream
// of the record batches. An error before the first batch is the response
// (status 400, JSON sqlerr.Error); one after it is the Streamdb-Error
// trailer. This is the first step toward the Arrow Flight exchange of
// issue 29: the same batches over plain HTTP, one stream per read.

type forwardReq struct {
	User string `json:"user"`
	SQL  string `json:"sql"`
}

// forwardTimeout bounds a forwarded read's connection and headers; the
// rows then stream for as long as the client reads them.
const forwardTimeout = 10 * time.Second

var peerClient = &http.Client{Transport: &http.Transport{ResponseHeaderTimeout: forwardTimeout}}

func (c *clusterEngine) Owner(view string) (string, bool) {
	if c.node.Load() == nil {
		return "", false
	}
	id, ok := c.node.Load().Owner(view)
	return id, ok && id == c.node.Load().ID()
}

func (c *clusterEngine) Forward(ctx context.Context, node, user, text string) (sql.Rows, error) {
	resp, err := c.postPeer(ctx, peerClient, node, "/peer/query", user, text, "forward the read")
	if err != nil {
		return nil, err
	}
	rd, err := ipc.NewReader(resp.Body)
	if err != nil {
		resp.Body.Close()
		return nil, &sqlerr.Error{Code: sqlerr.ConnectionException, Msg: "forwarded read from node " + node + ": " + err.Error()}
	}
	return &forwardedRows{node: node, resp: resp, rd: rd}, nil
}

// postPeer posts a statement to node's peer listener at path and returns
// its answer if it is 200; else the node's error (or why it could not be
// reached, what says what for). The caller closes the body.
func (c *clusterEngine) postPeer(ctx context.Context, client *http.Client, node, path, user, text, what string) (*http.Response, error) {
	actx, cancel := context.WithTimeout(ctx, forwardTimeout)
	peer, err := c.node.Load().PeerAddr(actx, node)
	cancel()
	if err == nil && peer == "" {
		err = fmt.Errorf("node %s has no peer listener (--peer-listen)", node)
	}
	if err != nil {
		return nil, &sqlerr.Error{Code: sqlerr.ObjectNotInPrereqState, Msg: "cannot " + what + " to node " + node + ": " + err.Error(),
			Hint: "The node is being replaced; retry."}
	}
	body, _ := json.Marshal(forwardReq{User: user, SQL: text})
	req, err := http.NewRequestWithContext(ctx, http.MethodPost, "http://"+peer+path, bytes.NewReader(body))
	if err != nil {
		return nil, err
	}
	resp, err := client.Do(req)
	if err != nil {
		return nil, &sqlerr.Error{Code: sqlerr.ConnectionException, Msg: "cannot " + what + " to node " + node + ": " + err.Error(),
			Hint: "If that node was lost, its jobs move to a live node once its lease expires; retry."}
	}
	if resp.StatusCode != http.StatusOK {
		defer resp.Body.Close()
		return nil, decodePeerError(resp.Body, node)
	}
	return resp, nil
}

func decodePeerError(r io.Reader, node string) error {
	var e sqlerr.Error
	b, _ := io.ReadAll(io.LimitReader(r, 1<<20))
	if json.Unmarshal(b, &e) != nil || e.Code == "" {
		return &sqlerr.Error{Code: sqlerr.ConnectionException, Msg: fmt.Sprintf("forwarded read from node %s: %s", node, bytes.TrimSpace(b))}
	}
	return &e
}

// forwardedRows relays the batches of a forwarded read.
type forwardedRows struct {
	node string
	resp *http.Response
	rd   *ipc.Reader
	done bool
}

func (f *forwardedRows) Next(ctx context.Context) (arrow.RecordBatch, error) {
	if f.done {
		return nil, nil
	}
	for f.rd.Next() {
		rec := f.rd.RecordBatch()
		if rec.NumRows() == 0 {
			continue
		}
		rec.Retain()
		return types.FromDScaleColumns(rec), nil
	}
	f.done = true
	if err := f.rd.Err(); err != nil {
		if ctx.Err() != nil {
			return nil, sqlerr.New(sqlerr.QueryCanceled, "canceling statement due to user request")
		}
		return nil, &sqlerr.Error{Code: sqlerr.ConnectionException, Msg: "forwarded read from node " + f.node + ": " + err.Error()}
	}
	_, _ = io.Copy(io.Discard, f.resp.Body) // trailers come after the body
	if t := f.resp.Trailer.Get("Streamdb-Error"); t != "" {
		return nil, decodePeerError(bytes.NewReader([]byte(t)), f.node)
	}
	return nil, nil
}

func (f *forwardedRows) Close() {
	if f.rd != nil {
		f.rd.Release()
		f.rd = nil
		f.resp.Body.Close()
	}
}

// serveForward answers POST /peer/query: it runs the read here and
// streams its batches as Arrow IPC.
func serveForward(eng *sql.Engine) http.HandlerFunc {
	return func(w http.ResponseWriter, r *http.Request) {
		var req forwardReq
		if err := json.NewDecoder(io.LimitReader(r.Body, 1<<20)).Decode(&req); err != nil {
			writePeerError(w, &sqlerr.Error{Code: sqlerr.ProtocolViolation, Msg: "malformed forwarded read: " + err.Error()})
			return
		}
		cols, rows, done, err := sql.ServeForward(r.Context(), eng, req.User, req.SQL)
		if err != nil {
			writePeerError(w, err)
			return
		}
		defer done()
		w.Header().Set("Trailer", "Streamdb-Error")
		w.Header().Set("Content-Type", "application/vnd.apache.arrow.stream")
		var wr *ipc.Writer
		fail := func(err error) {
			b, _ := json.Marshal(sqlerr.As(err))
			w.Header().Set("Streamdb-Error", string(b))
		}
		for {
			rec, err := rows.Next(r.Context())
			if err != nil {
				fail(err)
				break
			}
			if rec == nil {
				break
			}
			// NUMERIC display scales travel as columns of their own
			// (types.WithDScaleColumns), every batch with the same.
			out := types.WithDScaleColumns(rec, true)
			rec.Release()
			if wr == nil {
				wr = ipc.NewWriter(w, ipc.WithSchema(out.Schema()))
			}
			err = wr.Write(out)
			out.Release()
			if err != nil {
				fail(err)
				break
			}
		}
		if wr == nil {
			names, ts := make([]string, len(cols)), make([]types.T, len(cols))
			for i, c := range cols {
				names[i], ts[i] = c.Name, c.T
			}
			wr = ipc.NewWriter(w, ipc.WithSchema(types.Schema(names, ts)))
		}
		if err := wr.Close(); err != nil && !errors.Is(err, context.Canceled) {
			fail(err)
		}
	}
}

func writePeerError(w http.ResponseWriter, err error) {
	b, _ := json.Marshal(sqlerr.As(err))
	w.Header().Set("Content-Type", "application/json")
	w.WriteHeader(http.StatusBadRequest)
	_, _ = w.Write(b)
}

// execResp is POST /peer/exec's answer to a statement that ran.
type execResp struct {
	Tag     string   `json:"tag"`
	Notices []string `json:"notices,omitempty"`
}

// execTimeout bounds a statement sent to another node (a CHECKPOINT and
// its upload, a savepoint's, a restore's download).
const execTimeout = 5 * time.Minute

var execClient = &http.Client{Timeout: execTimeout}

// Exec runs a statement on node (sql.ServeExec there): CHECKPOINT,
// savepoints and rebalancing across nodes (sql/clusterops.go).
func (c *clusterEngine) Exec(ctx context.Context, node, user, text string) (*sql.Result, error) {
	resp, err := c.postPeer(ctx, execClient, node, "/peer/exec", user, text, "send the statement")
	if err != nil {
		return nil, err
	}
	defer resp.Body.Close()
	var r execResp
	if err := json.NewDecoder(io.LimitReader(resp.Body, 1<<20)).Decode(&r); err != nil {
		return nil, &sqlerr.Error{Code: sqlerr.ConnectionException, Msg: "the answer of node " + node + ": " + err.Error()}
	}
	return &sql.Result{Tag: r.Tag, Notices: r.Notices}, nil
}

// serveExec answers POST /peer/exec: it runs the statement here, for this
// node's jobs, and answers with its tag and notices.
func serveExec(eng *sql.Engine) http.HandlerFunc {
	return func(w http.ResponseWriter, r *http.Request) {
		var req forwardReq
		if err := json.NewDecoder(io.LimitReader(r.Body, 1<<20)).Decode(&req); err != nil {
			writePeerError(w, &sqlerr.Error{Code: sqlerr.ProtocolViolation, Msg: "malformed statement from a peer: " + err.Error()})
			return
		}
		res, err := sql.ServeExec(r.Context(), eng, req.User, req.SQL)
		if err != nil {
			writePeerError(w, err)
			return
		}
		b, _ := json.Marshal(execResp{Tag: res.Tag, Notices: res.Notices})
		w.Header().Set("Content-Type", "application/json")
		_, _ = w.Write(b)
	}
}

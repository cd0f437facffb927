package distjob

import (
	"context"
	"errors"
	"fmt"
	"io"
	"net/http"
	"net/url"
	"strconv"

	"github.com/apache/arrow-go/v18/arrow"
	"github.com/apache/arrow-go/v18/arrow/ipc"
	"github.com/apache/arrow-go/v18/arrow/memory"
	"github.com/streamdb/streamdb/exec/batch"
	"github.com/streamdb/streamdb/exec/expr"
	"github.com/streamdb/streamdb/exec/plan"
	"github.com/streamdb/streamdb/storage"
	"github.com/streamdb/streamdb/types"
)

// PartPath is the peer listener's path of a node's part of a view at an
// epoch: GET PartPath?view=v&gen=g&epoch=e answers the view's rows on this
// node at that epoch as an Arrow IPC stream; 404 if this node runs no part
// of v, 409 if it no longer keeps that epoch (ErrEpochGone).
const PartPath = "/peer/distjob/part"

// Handler serves PartPath over the parts part returns (nil: none here).
func Handler(part func(view string) *Part) http.Handler {
	return http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		q := r.URL.Query()
		gen, err1 := strconv.ParseUint(q.Get("gen"), 10, 64)
		epoch, err2 := strconv.ParseUint(q.Get("epoch"), 10, 64)
		if err := errors.Join(err1, err2); err != nil {
			http.Error(w, err.Error(), http.StatusBadRequest)
			return
		}
		p := part(q.Get("view"))
		if p == nil {
			http.Error(w, "no part of view "+q.Get("view")+" runs here", http.StatusNotFound)
			return
		}
		wrote := false
		var iw *ipc.Writer
		err := p.ReadAt(gen, epoch, func(rd storage.Reader) error {
			return p.scan(r.Context(), rd, func(rec arrow.RecordBatch) error {
				// NUMERIC display scales travel as columns of their own
				// (types.WithDScaleColumns), every batch with the same.
				out := types.WithDScaleColumns(rec, true)
				rec.Release()
				defer out.Release()
				if iw == nil {
					w.Header().Set("Content-Type", "application/vnd.apache.arrow.stream")
					iw = ipc.NewWriter(w, ipc.WithSchema(out.Schema()))
				}
				wrote = true
				return iw.Write(out)
			})
		})
		switch {
		case err == nil && iw != nil:
			_ = iw.Close() // the end of the stream: every row was sent
		case err != nil && wrote:
			// Never end a stream that misses rows cleanly: break it.
			panic(http.ErrAbortHandler)
		case errors.Is(err, ErrEpochGone):
			http.Error(w, err.Error(), http.StatusConflict)
		case err != nil && !wrote:
			http.Error(w, err.Error(), http.StatusInternalServerError)
		case !wrote:
			w.WriteHeader(http.StatusNoContent) // no rows here
		}
	})
}

// scan calls fn with the view's rows on this node as r sees them.
func (p *Part) scan(ctx context.Context, r storage.Reader, fn func(arrow.RecordBatch) error) error {
	return batch.Run(&plan.Ctx{Context: ctx, DB: p.DB, Snap: r, Expr: &expr.Ctx{Mem: memory.DefaultAllocator}},
		&plan.ScanView{View: p.Spec.View}, fn)
}

// Fetch reads a node's part of view at epoch of generation gen from its
// peer listener at addr (host:port), calling fn with each batch (fn owns
// it). ErrEpochGone if the node no longer keeps the epoch.
func Fetch(ctx context.Context, client *http.Client, addr, view string, gen, epoch uint64, fn func(arrow.RecordBatch) error) error {
	u := url.URL{Scheme: "http", Host: addr, Path: PartPath,
		RawQuery: url.Values{"view": {view}, "gen": {strconv.FormatUint(gen, 10)}, "epoch": {strconv.FormatUint(epoch, 10)}}.Encode()}
	req, err := http.NewRequestWithContext(ctx, http.MethodGet, u.String(), nil)
	if err != nil {
		return err
	}
	resp, err := client.Do(req)
	if err != nil {
		return fmt.Errorf("distjob: reading %s's part on %s: %w", view, addr, err)
	}
	defer resp.Body.Close()
	switch resp.StatusCode {
	case http.StatusOK:
	case http.StatusNoContent:
		return nil
	case http.StatusConflict, http.StatusNotFound:
		return ErrEpochGone // read the committed epoch again
	default:
		b, _ := io.ReadAll(io.LimitReader(resp.Body, 1<<10))
		return fmt.Errorf("distjob: reading %s's part on %s: %s: %s", view, addr, resp.Status, b)
	}
	rd, err := ipc.NewReader(resp.Body)
	if err != nil {
		return fmt.Errorf("distjob: reading %s's part on %s: %w", view, addr, err)
	}
	defer rd.Release()
	for rd.Next() {
		rec := rd.RecordBatch()
		rec.Retain()
		if err := fn(types.FromDScaleColumns(rec)); err != nil {
			return err
		}
	}
	return rd.Err()
}

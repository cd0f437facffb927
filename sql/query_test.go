package sql

import (
	"context"
	"errors"
	"fmt"
	"io"
	"log/slog"
	"runtime"
	"strings"
	"testing"
	"time"

	"github.com/streamdb/streamdb/sqlerr"
)

// streamSession opens an engine with a stream t of n rows (k = 0 .. n-1),
// inserted by statements of at most 50000 rows.
func streamSession(t *testing.T, n int) *Session {
	t.Helper()
	e, err := Open(Config{DataDir: t.TempDir(), Logger: slog.New(slog.NewTextHandler(io.Discard, nil))})
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { e.Close() })
	s := e.NewSession("test", "streamdb")
	t.Cleanup(s.Close)
	if _, err := query(context.Background(), s, "CREATE TABLE t (k BIGINT)"); err != nil {
		t.Fatal(err)
	}
	for lo := 0; lo < n; lo += 50000 {
		vals := make([]string, 0, 50000)
		for i := lo; i < min(n, lo+50000); i++ {
			vals = append(vals, fmt.Sprintf("(%d)", i))
		}
		if _, err := query(context.Background(), s, "INSERT INTO t VALUES "+strings.Join(vals, ", ")); err != nil {
			t.Fatal(err)
		}
	}
	return s
}

// waitGoroutines waits (up to 10 s) for the goroutine count to come back
// to at most want.
func waitGoroutines(t *testing.T, what string, want int) {
	t.Helper()
	deadline := time.Now().Add(10 * time.Second)
	for runtime.NumGoroutine() > want {
		if time.Now().After(deadline) {
			t.Fatalf("%s: %d goroutines, want at most %d", what, runtime.NumGoroutine(), want)
		}
		time.Sleep(10 * time.Millisecond)
	}
}

// TestStreamedRowsCloseEarly: a query of a billion rows streams its first
// batch, and closing it early (a client that stops reading, a portal or a
// cursor closed) stops its producer: no goroutine is left behind.
func TestStreamedRowsCloseEarly(t *testing.T) {
	s := streamSession(t, 1000)
	ctx := context.Background()
	base := runtime.NumGoroutine()
	for i := 0; i < 3; i++ {
		sts, err := s.PrepareAll(ctx, "SELECT * FROM t a, t b, t c")
		if err != nil {
			t.Fatal(err)
		}
		res, err := s.Execute(ctx, sts[0], nil)
		if err != nil {
			t.Fatal(err)
		}
		rec, err := res.Rows.Next(ctx)
		if err != nil || rec == nil || rec.NumRows() == 0 {
			t.Fatalf("first batch: %v, %v", rec, err)
		}
		rec.Release()
		res.Rows.Close()
		res.Rows.Close() // closing twice is harmless
	}
	waitGoroutines(t, "after closing three streamed queries", base)

	if _, err := query(ctx, s, "DECLARE cur CURSOR FOR SELECT * FROM t a, t b, t c"); err != nil {
		t.Fatal(err)
	}
	rows, err := query(ctx, s, "FETCH 5000 FROM cur")
	if err != nil || len(rows) != 5000 {
		t.Fatalf("FETCH 5000: %d rows, %v", len(rows), err)
	}
	if _, err := query(ctx, s, "CLOSE cur"); err != nil {
		t.Fatal(err)
	}
	waitGoroutines(t, "after closing a cursor", base)
}

// TestStreamedRowsErrorAfterRows: an error after some batches were read
// comes from Next, after those batches.
func TestStreamedRowsErrorAfterRows(t *testing.T) {
	s := streamSession(t, 200000)
	ctx := context.Background()
	// 100 / (k - 150000) divides by zero at row 150000, in a later batch.
	sts, err := s.PrepareAll(ctx, "SELECT 100 / (k - 150000) FROM t")
	if err != nil {
		t.Fatal(err)
	}
	res, err := s.Execute(ctx, sts[0], nil)
	if err != nil {
		t.Fatalf("the error came before the first batch: %v", err)
	}
	defer res.Rows.Close()
	got := int64(0)
	for {
		rec, err := res.Rows.Next(ctx)
		if err != nil {
			var se *sqlerr.Error
			if !errors.As(err, &se) || se.Code != sqlerr.DivisionByZero {
				t.Fatalf("after %d rows: %v, want 22012", got, err)
			}
			break
		}
		if rec == nil {
			t.Fatalf("end of rows after %d rows without the error", got)
		}
		got += rec.NumRows()
		rec.Release()
	}
	if got == 0 || got > 150000 {
		t.Fatalf("%d rows before the error", got)
	}
	if rec, err := res.Rows.Next(ctx); rec != nil || err != nil {
		t.Fatalf("after the error: %v, %v", rec, err)
	}
}

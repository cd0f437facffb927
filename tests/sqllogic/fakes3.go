package sqllogic

import (
	"net/http"
	"net/http/httptest"
	"strings"
	"sync"
	"sync/atomic"
	"testing"

	"github.com/johannesboyne/gofakes3"
	"github.com/johannesboyne/gofakes3/backend/s3mem"
	"github.com/streamdb/streamdb/checkpoint"
	"github.com/streamdb/streamdb/objstore"
)

// This file holds the in-process S3 (gofakes3) shared by end-to-end tests.

// FakeS3 is an in-process S3 (gofakes3) behind a handler that records
// uploads and fails them on demand.
type FakeS3 struct {
	ts *httptest.Server
	// FailPuts, when set, fails every PUT with 503.
	FailPuts atomic.Bool
	// Gate, when set, holds every PUT until it is closed (a slow upload);
	// Held counts the PUTs waiting on it.
	Gate atomic.Pointer[chan struct{}]
	Held atomic.Int64
	mu   sync.Mutex
	puts []string // keys of successful PUTs, in order
}

// NewFakeS3 starts a fake S3 holding one empty bucket, closed when the test ends.
func NewFakeS3(t *testing.T, bucket string) *FakeS3 {
	t.Helper()
	be := s3mem.New()
	if err := be.CreateBucket(bucket); err != nil {
		t.Fatal(err)
	}
	f := &FakeS3{}
	h := gofakes3.New(be).Server()
	f.ts = httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		if r.Method == http.MethodPut {
			if g := f.Gate.Load(); g != nil {
				f.Held.Add(1)
				<-*g
				f.Held.Add(-1)
			}
			if f.FailPuts.Load() {
				http.Error(w, "injected upload failure", http.StatusServiceUnavailable)
				return
			}
			f.mu.Lock()
			f.puts = append(f.puts, r.URL.Path)
			f.mu.Unlock()
		}
		h.ServeHTTP(w, r)
	}))
	t.Cleanup(f.ts.Close)
	return f
}

// Env is the environment that points a streamdb process at the fake S3.
func (f *FakeS3) Env() []string {
	return []string{"AWS_ENDPOINT_URL_S3=" + f.ts.URL, "AWS_ACCESS_KEY_ID=test", "AWS_SECRET_ACCESS_KEY=test", "AWS_REGION=us-east-1"}
}

// Remote opens the checkpoint storage at url as the server sees it.
func (f *FakeS3) Remote(t *testing.T, url string) *checkpoint.Remote {
	t.Helper()
	l, err := objstore.Parse(url)
	if err != nil {
		t.Fatal(err)
	}
	st, err := objstore.Open(l, objstore.S3Config{Endpoint: f.ts.URL, Region: "us-east-1", AccessKey: "test", SecretKey: "test"})
	if err != nil {
		t.Fatal(err)
	}
	return checkpoint.NewRemote(st)
}

// SSTPuts returns the .sst objects uploaded since the index from.
func (f *FakeS3) SSTPuts(from int) (map[string]bool, int) {
	f.mu.Lock()
	defer f.mu.Unlock()
	out := map[string]bool{}
	for _, p := range f.puts[from:] {
		if strings.HasSuffix(p, ".sst") {
			out[p[strings.Index(p, "/shared/")+1:]] = true
		}
	}
	return out, len(f.puts)
}

// Puts returns the keys of the successful PUTs so far, in order.
func (f *FakeS3) Puts() []string {
	f.mu.Lock()
	defer f.mu.Unlock()
	return append([]string(nil), f.puts...)
}

package objstore

import (
	"bytes"
	"context"
	"errors"
	"io"
	"io/fs"
	"net/http/httptest"
	"testing"

	"github.com/johannesboyne/gofakes3"
	"github.com/johannesboyne/gofakes3/backend/s3mem"
)

func TestParse(t *testing.T) {
	for raw, want := range map[string]string{
		"file:///a/b/":     "file:///a/b",
		"/a/./b":           "",
		"/a/b":             "file:///a/b",
		"s3://bk":          "s3://bk",
		"s3://bk/p/q/":     "s3://bk/p/q",
		"s3://k:s@bk/p":    "",
		"http://x/y":       "",
		"file://host/x":    "",
		"file:///a/../etc": "",
		"relative/path":    "",
		"s3:///nobucket":   "",
	} {
		l, err := Parse(raw)
		switch {
		case want == "" && err == nil:
			t.Errorf("Parse(%q) = %v, want an error", raw, l)
		case want != "" && (err != nil || l.String() != want):
			t.Errorf("Parse(%q) = %v, %v; want %s", raw, l, err, want)
		}
	}
	a, _ := Parse("s3://bk/ck")
	for raw, in := range map[string]bool{"s3://bk/ck": true, "s3://bk/ck/x": true, "s3://bk/ckx": false, "s3://other/ck": false, "file:///ck": false} {
		l, _ := Parse(raw)
		if l.Within(a) != in {
			t.Errorf("%s within %s = %v", raw, a, !in)
		}
	}
}

func testStore(t *testing.T, s Store) {
	ctx := context.Background()
	data := []byte("hello object")
	for _, k := range []string{"shared/a.sst", "shared/b.sst", "checkpoints/chk-1/manifest.json"} {
		if err := s.Put(ctx, k, bytes.NewReader(data), int64(len(data))); err != nil {
			t.Fatal(k, err)
		}
	}
	if err := s.Put(ctx, "../x", bytes.NewReader(data), int64(len(data))); err == nil {
		t.Fatal("a key with .. was accepted")
	}
	objs, err := s.List(ctx, "shared/")
	if err != nil || len(objs) != 2 || objs[0].Key != "shared/a.sst" || objs[0].Size != int64(len(data)) {
		t.Fatalf("List = %v, %v", objs, err)
	}
	r, err := s.Get(ctx, "shared/b.sst")
	if err != nil {
		t.Fatal(err)
	}
	got, _ := io.ReadAll(r)
	r.Close()
	if !bytes.Equal(got, data) {
		t.Fatalf("Get = %q", got)
	}
	if err := s.Delete(ctx, "shared/b.sst"); err != nil {
		t.Fatal(err)
	}
	if err := s.Delete(ctx, "shared/b.sst"); err != nil {
		t.Fatal("deleting a missing object:", err)
	}
	if _, err := s.Get(ctx, "shared/b.sst"); !errors.Is(err, fs.ErrNotExist) {
		t.Fatalf("Get of a deleted object: %v, want fs.ErrNotExist", err)
	}
	if objs, _ := s.List(ctx, ""); len(objs) != 2 {
		t.Fatalf("List all = %v", objs)
	}
}

func TestFileStore(t *testing.T) {
	l, _ := Parse("file://" + t.TempDir() + "/store")
	s, err := Open(l, S3Config{})
	if err != nil {
		t.Fatal(err)
	}
	testStore(t, s)
}

func TestS3Store(t *testing.T) {
	be := s3mem.New()
	if err := be.CreateBucket("bkt"); err != nil {
		t.Fatal(err)
	}
	ts := httptest.NewServer(gofakes3.New(be).Server())
	defer ts.Close()
	l, _ := Parse("s3://bkt/some/prefix")
	s, err := Open(l, S3Config{Endpoint: ts.URL, Region: "us-east-1", AccessKey: "k", SecretKey: "s"})
	if err != nil {
		t.Fatal(err)
	}
	testStore(t, s)
}

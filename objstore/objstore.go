// Package objstore is where checkpoints and savepoints are kept beyond the
// data directory: a flat namespace of immutable objects named by
// slash-separated keys, on a local filesystem (file:///path) or in an S3
// bucket (s3://bucket/prefix). It is a leaf package: checkpoint/ decides
// what the objects are, objstore only stores them.
//
// The contract is the subset of S3 every backend honours: Put replaces an
// object whole (a reader never sees half of one), Get of a missing key
// returns an error that errors.Is(err, fs.ErrNotExist), List returns every
// key under a prefix, Delete of a missing key succeeds. Keys never contain
// "..", empty segments or a leading slash.
package objstore

import (
	"context"
	"fmt"
	"io"
	"net/url"
	"os"
	"path"
	"strings"
)

// Store is a location for objects.
type Store interface {
	// Put stores size bytes read from r under key.
	Put(ctx context.Context, key string, r io.Reader, size int64) error
	// Get opens the object key; the caller closes it.
	Get(ctx context.Context, key string) (io.ReadCloser, error)
	// List returns the objects whose keys start with prefix, in key order.
	List(ctx context.Context, prefix string) ([]Object, error)
	// Delete removes the object key.
	Delete(ctx context.Context, key string) error
	// URL is the location the store was opened from.
	URL() string
}

// Object is one listed object.
type Object struct {
	Key  string
	Size int64
}

// S3Config is how the server reaches S3: from its config file or the
// standard AWS environment variables, never from SQL.
type S3Config struct {
	Endpoint  string // http(s)://host:port; "" is AWS (s3.<region>.amazonaws.com)
	Region    string
	AccessKey string
	SecretKey string
}

// S3ConfigFromEnv reads the standard AWS environment variables
// (AWS_ENDPOINT_URL_S3, else AWS_ENDPOINT_URL; AWS_REGION, else
// AWS_DEFAULT_REGION; AWS_ACCESS_KEY_ID, AWS_SECRET_ACCESS_KEY).
func S3ConfigFromEnv() S3Config {
	first := func(names ...string) string {
		for _, n := range names {
			if v := os.Getenv(n); v != "" {
				return v
			}
		}
		return ""
	}
	return S3Config{
		Endpoint:  first("AWS_ENDPOINT_URL_S3", "AWS_ENDPOINT_URL"),
		Region:    first("AWS_REGION", "AWS_DEFAULT_REGION"),
		AccessKey: first("AWS_ACCESS_KEY_ID"),
		SecretKey: first("AWS_SECRET_ACCESS_KEY"),
	}
}

// Or fills what c leaves empty from d (the config file over the environment).
func (c S3Config) Or(d S3Config) S3Config {
	pick := func(a, b string) string {
		if a != "" {
			return a
		}
		return b
	}
	return S3Config{Endpoint: pick(c.Endpoint, d.Endpoint), Region: pick(c.Region, d.Region),
		AccessKey: pick(c.AccessKey, d.AccessKey), SecretKey: pick(c.SecretKey, d.SecretKey)}
}

// Location is a parsed storage URL.
type Location struct {
	Scheme string // "file" or "s3"
	Bucket string // s3 only
	Path   string // file: an absolute, clean path; s3: the key prefix without slashes around it
}

// String is the location's canonical URL.
func (l Location) String() string {
	if l.Scheme == "file" {
		return "file://" + l.Path
	}
	if l.Path == "" {
		return "s3://" + l.Bucket
	}
	return "s3://" + l.Bucket + "/" + l.Path
}

// Within reports whether l is a or lies under it.
func (l Location) Within(a Location) bool {
	if l.Scheme != a.Scheme || l.Bucket != a.Bucket {
		return false
	}
	if a.Path == "" || l.Path == a.Path {
		return true
	}
	base := strings.TrimSuffix(a.Path, "/")
	return strings.HasPrefix(l.Path, base+"/")
}

// Join returns the location of a sub-path of l.
func (l Location) Join(elem string) Location {
	l.Path = strings.TrimPrefix(path.Join(l.Path, elem), "/")
	if l.Scheme == "file" {
		l.Path = "/" + l.Path
	}
	return l
}

// Parse parses file:///abs/path, a plain absolute path (taken as file://)
// or s3://bucket[/prefix]. Relative paths, "..", other schemes, queries
// and credentials in the URL are refused.
func Parse(raw string) (Location, error) {
	raw = strings.TrimSpace(raw)
	if strings.HasPrefix(raw, "/") {
		raw = "file://" + raw
	}
	u, err := url.Parse(raw)
	if err != nil {
		return Location{}, fmt.Errorf("invalid storage URL %q: %v", raw, err)
	}
	if u.User != nil || u.RawQuery != "" || u.Fragment != "" {
		return Location{}, fmt.Errorf("invalid storage URL %q: credentials, queries and fragments are not allowed (credentials come from the server's config file or environment)", raw)
	}
	for _, seg := range strings.Split(u.Path, "/") {
		if seg == ".." || seg == "." {
			return Location{}, fmt.Errorf("invalid storage URL %q: %q segments are not allowed", raw, seg)
		}
	}
	switch u.Scheme {
	case "file":
		if u.Host != "" && u.Host != "localhost" {
			return Location{}, fmt.Errorf("invalid storage URL %q: a file URL is file:///absolute/path", raw)
		}
		if !strings.HasPrefix(u.Path, "/") {
			return Location{}, fmt.Errorf("invalid storage URL %q: a file URL needs an absolute path", raw)
		}
		return Location{Scheme: "file", Path: path.Clean(u.Path)}, nil
	case "s3":
		if u.Host == "" {
			return Location{}, fmt.Errorf("invalid storage URL %q: no bucket (s3://bucket/prefix)", raw)
		}
		return Location{Scheme: "s3", Bucket: u.Host, Path: strings.Trim(path.Clean("/"+u.Path), "/")}, nil
	}
	return Location{}, fmt.Errorf("invalid storage URL %q: the scheme must be file:// or s3://", raw)
}

// Open opens the store at l; s3 is used for s3:// locations.
func Open(l Location, s3 S3Config) (Store, error) {
	switch l.Scheme {
	case "file":
		return &fileStore{root: l.Path, url: l.String()}, nil
	case "s3":
		return openS3(l, s3)
	}
	return nil, fmt.Errorf("unknown storage scheme %q", l.Scheme)
}

func checkKey(key string) error {
	if key == "" || strings.HasPrefix(key, "/") {
		return fmt.Errorf("invalid object key %q", key)
	}
	for _, seg := range strings.Split(key, "/") {
		if seg == "" || seg == "." || seg == ".." {
			return fmt.Errorf("invalid object key %q", key)
		}
	}
	return nil
}

package objstore

import (
	"context"
	"fmt"
	"io"
	"io/fs"
	"net/url"
	"strings"

	"github.com/minio/minio-go/v7"
	"github.com/minio/minio-go/v7/pkg/credentials"
)

// s3Store keeps objects in a bucket under a key prefix.
type s3Store struct {
	c      *minio.Client
	bucket string
	prefix string // "" or "a/b/"
	url    string
}

func openS3(l Location, cfg S3Config) (Store, error) {
	host, secure := "s3.amazonaws.com", true
	if cfg.Region != "" {
		host = "s3." + cfg.Region + ".amazonaws.com"
	}
	lookup := minio.BucketLookupAuto
	if cfg.Endpoint != "" {
		u, err := url.Parse(cfg.Endpoint)
		if err != nil || u.Host == "" {
			return nil, fmt.Errorf("invalid S3 endpoint %q", cfg.Endpoint)
		}
		host, secure = u.Host, u.Scheme != "http"
		// S3-compatible servers (MinIO, Ceph, fakes) address buckets by path.
		lookup = minio.BucketLookupPath
	}
	var creds *credentials.Credentials
	if cfg.AccessKey != "" {
		creds = credentials.NewStaticV4(cfg.AccessKey, cfg.SecretKey, "")
	} else {
		creds = credentials.NewChainCredentials([]credentials.Provider{&credentials.EnvAWS{}, &credentials.IAM{}})
	}
	// Three tries: a failed upload fails its checkpoint, and the next one
	// tries again, rather than holding the export queue for ten.
	c, err := minio.New(host, &minio.Options{Creds: creds, Secure: secure, Region: cfg.Region, BucketLookup: lookup, MaxRetries: 3})
	if err != nil {
		return nil, err
	}
	p := l.Path
	if p != "" {
		p += "/"
	}
	return &s3Store{c: c, bucket: l.Bucket, prefix: p, url: l.String()}, nil
}

func (s *s3Store) URL() string { return s.url }

func (s *s3Store) Put(ctx context.Context, key string, r io.Reader, size int64) error {
	if err := checkKey(key); err != nil {
		return err
	}
	_, err := s.c.PutObject(ctx, s.bucket, s.prefix+key, r, size,
		minio.PutObjectOptions{ContentType: "application/octet-stream", DisableMultipart: size < 64<<20})
	return err
}

func (s *s3Store) Get(ctx context.Context, key string) (io.ReadCloser, error) {
	if err := checkKey(key); err != nil {
		return nil, err
	}
	// minio's GetObject is lazy: Stat makes a missing object an error now.
	o, err := s.c.GetObject(ctx, s.bucket, s.prefix+key, minio.GetObjectOptions{})
	if err != nil {
		return nil, notExist(key, err)
	}
	if _, err := o.Stat(); err != nil {
		o.Close()
		return nil, notExist(key, err)
	}
	return o, nil
}

func notExist(key string, err error) error {
	if r := minio.ToErrorResponse(err); r.Code == minio.NoSuchKey || r.StatusCode == 404 {
		return fmt.Errorf("object %s: %w", key, fs.ErrNotExist)
	}
	return err
}

func (s *s3Store) List(ctx context.Context, prefix string) ([]Object, error) {
	var out []Object
	for o := range s.c.ListObjects(ctx, s.bucket, minio.ListObjectsOptions{Prefix: s.prefix + prefix, Recursive: true}) {
		if o.Err != nil {
			return nil, o.Err
		}
		out = append(out, Object{Key: strings.TrimPrefix(o.Key, s.prefix), Size: o.Size})
	}
	return out, nil
}

func (s *s3Store) Delete(ctx context.Context, key string) error {
	if err := checkKey(key); err != nil {
		return err
	}
	err := s.c.RemoveObject(ctx, s.bucket, s.prefix+key, minio.RemoveObjectOptions{})
	if r := minio.ToErrorResponse(err); err != nil && (r.Code == minio.NoSuchKey || r.StatusCode == 404) {
		return nil
	}
	return err
}

package kafka

import (
	"bytes"
	"context"
	"encoding/json"
	"fmt"
	"io"
	"net/http"
	"net/url"
	"strings"
	"sync"
	"time"

	"github.com/streamdb/streamdb/sqlerr"
)

// A small client of a Confluent schema registry's REST API: the latest
// schema of a subject (CREATE SOURCE), a schema by id (a reader meeting a
// writer schema it has not seen), and registering a schema under a
// subject. Schemas by id never change, so they are cached for the life of
// the process, per registry URL.

// registry is one schema registry.
type registry struct {
	base string // without a trailing slash
	hc   *http.Client
	mu   struct {
		sync.Mutex
		byID map[int32]string
	}
}

var registries struct {
	sync.Mutex
	m map[string]*registry
}

// registryTimeout bounds one request to a registry.
const registryTimeout = 10 * time.Second

// schemaRegistry returns the process's client of the registry at u.
func schemaRegistry(u string) (*registry, error) {
	u = strings.TrimRight(strings.TrimSpace(u), "/")
	pu, err := url.Parse(u)
	if err != nil || (pu.Scheme != "http" && pu.Scheme != "https") || pu.Host == "" {
		return nil, sqlerr.New(sqlerr.InvalidParameterValue, "option \"schema.registry\" must be an http:// or https:// URL, not %q", u)
	}
	registries.Lock()
	defer registries.Unlock()
	if r := registries.m[u]; r != nil {
		return r, nil
	}
	r := &registry{base: u, hc: &http.Client{Timeout: registryTimeout}}
	r.mu.byID = map[int32]string{}
	if registries.m == nil {
		registries.m = map[string]*registry{}
	}
	registries.m[u] = r
	return r, nil
}

// registryError is the registry's error body.
type registryError struct {
	Code    int    `json:"error_code"`
	Message string `json:"message"`
}

// do sends one request and decodes its JSON answer into out: 08000 if the
// registry cannot be reached or fails, 42704 for its "not found" answers
// (subject, version or schema), 22023 for a schema it refuses.
func (r *registry) do(method, path string, body any, out any) error {
	var rd io.Reader
	if body != nil {
		b, err := json.Marshal(body)
		if err != nil {
			return err
		}
		rd = bytes.NewReader(b)
	}
	ctx, cancel := context.WithTimeout(context.Background(), registryTimeout)
	defer cancel()
	req, err := http.NewRequestWithContext(ctx, method, r.base+path, rd)
	if err != nil {
		return sqlerr.New(sqlerr.InvalidParameterValue, "schema registry %s: %v", r.base, err)
	}
	req.Header.Set("Accept", "application/vnd.schemaregistry.v1+json, application/json")
	if body != nil {
		req.Header.Set("Content-Type", "application/vnd.schemaregistry.v1+json")
	}
	resp, err := r.hc.Do(req)
	if err != nil {
		return sqlerr.New(sqlerr.ConnectionException, "schema registry %s unreachable: %v", r.base, err)
	}
	defer resp.Body.Close()
	data, err := io.ReadAll(io.LimitReader(resp.Body, 16<<20))
	if err != nil {
		return sqlerr.New(sqlerr.ConnectionException, "schema registry %s: %v", r.base, err)
	}
	if resp.StatusCode/100 != 2 {
		var e registryError
		_ = json.Unmarshal(data, &e)
		if e.Message == "" {
			e.Message = strings.TrimSpace(string(data))
		}
		switch {
		case resp.StatusCode == http.StatusNotFound:
			return sqlerr.New(sqlerr.UndefinedObject, "schema registry %s: %s", r.base, e.Message)
		case resp.StatusCode == http.StatusConflict || resp.StatusCode == http.StatusUnprocessableEntity:
			return sqlerr.New(sqlerr.InvalidParameterValue, "schema registry %s refused the schema: %s", r.base, e.Message)
		}
		return sqlerr.New(sqlerr.ConnectionException, "schema registry %s: HTTP %d: %s", r.base, resp.StatusCode, e.Message)
	}
	if err := json.Unmarshal(data, out); err != nil {
		return sqlerr.New(sqlerr.ConnectionException, "schema registry %s: bad answer: %v", r.base, err)
	}
	return nil
}

// subjectSchema is a registered version of a subject.
type subjectSchema struct {
	Subject    string `json:"subject"`
	Version    int    `json:"version"`
	ID         int32  `json:"id"`
	Schema     string `json:"schema"`
	SchemaType string `json:"schemaType"`
}

// latest returns the latest schema registered under subject (42704 if the
// subject has none).
func (r *registry) latest(subject string) (subjectSchema, error) {
	var s subjectSchema
	if err := r.do(http.MethodGet, "/subjects/"+url.PathEscape(subject)+"/versions/latest", nil, &s); err != nil {
		if se := sqlerr.As(err); se.Code == sqlerr.UndefinedObject {
			return s, sqlerr.New(sqlerr.UndefinedObject, "schema registry subject %q does not exist (%s)", subject, se.Msg)
		}
		return s, err
	}
	if s.SchemaType != "" && !strings.EqualFold(s.SchemaType, "AVRO") {
		return s, sqlerr.New(sqlerr.FeatureNotSupported, "schema registry subject %q holds a %s schema; only Avro is supported", subject, s.SchemaType)
	}
	r.mu.Lock()
	r.mu.byID[s.ID] = s.Schema
	r.mu.Unlock()
	return s, nil
}

// byID returns the schema of id, from the cache or the registry.
func (r *registry) byID(id int32) (string, error) {
	r.mu.Lock()
	s, ok := r.mu.byID[id]
	r.mu.Unlock()
	if ok {
		return s, nil
	}
	var out struct {
		Schema     string `json:"schema"`
		SchemaType string `json:"schemaType"`
	}
	if err := r.do(http.MethodGet, fmt.Sprintf("/schemas/ids/%d", id), nil, &out); err != nil {
		return "", err
	}
	if out.SchemaType != "" && !strings.EqualFold(out.SchemaType, "AVRO") {
		return "", sqlerr.New(sqlerr.InvalidBinaryRep, "schema id %d is a %s schema, not Avro", id, out.SchemaType)
	}
	r.mu.Lock()
	r.mu.byID[id] = out.Schema
	r.mu.Unlock()
	return out.Schema, nil
}

// register registers schema under subject (or finds it registered) and
// returns its id.
func (r *registry) register(subject, schema string) (int32, error) {
	var out struct {
		ID int32 `json:"id"`
	}
	if err := r.do(http.MethodPost, "/subjects/"+url.PathEscape(subject)+"/versions",
		map[string]string{"schema": schema}, &out); err != nil {
		return 0, err
	}
	r.mu.Lock()
	r.mu.byID[out.ID] = schema
	r.mu.Unlock()
	return out.ID, nil
}

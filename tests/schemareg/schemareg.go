// Package schemareg is a small in-process schema registry for tests. It
// speaks the part of the Confluent Schema Registry REST API that Kafka
// clients and streamdb use (register a schema under a subject, the latest
// or a given version of a subject, a schema by id, the subjects), keeps
// ids global and stable (registering a schema again returns its id), and
// refuses a new version that breaks the subject's compatibility level
// (BACKWARD by default: the new schema must read data written with the
// latest one, as the Confluent registry checks it) with 409. Encode
// produces the Confluent wire format with hamba/avro, a real client library.
package schemareg

import (
	"encoding/binary"
	"encoding/json"
	"fmt"
	"net/http"
	"net/http/httptest"
	"strconv"
	"strings"
	"sync"

	"github.com/hamba/avro/v2"
)

// Registry is a running registry; URL is its address.
type Registry struct {
	URL  string
	srv  *httptest.Server
	mu   sync.Mutex
	ids  map[string]int // schema text -> id
	byID map[int]string
	subs map[string][]int // subject -> ids of its versions
	down bool
}

// Start starts a registry on a loopback port; Close stops it.
func Start() *Registry {
	r := &Registry{ids: map[string]int{}, byID: map[int]string{}, subs: map[string][]int{}}
	r.srv = httptest.NewServer(http.HandlerFunc(r.serve))
	r.URL = r.srv.URL
	return r
}

// Close stops the registry.
func (r *Registry) Close() { r.srv.Close() }

// SetDown makes the registry answer every request with 503 (true) or
// serve again (false).
func (r *Registry) SetDown(down bool) {
	r.mu.Lock()
	r.down = down
	r.mu.Unlock()
}

func writeErr(w http.ResponseWriter, status, code int, msg string) {
	w.Header().Set("Content-Type", "application/vnd.schemaregistry.v1+json")
	w.WriteHeader(status)
	_ = json.NewEncoder(w).Encode(map[string]any{"error_code": code, "message": msg})
}

func writeJSON(w http.ResponseWriter, v any) {
	w.Header().Set("Content-Type", "application/vnd.schemaregistry.v1+json")
	_ = json.NewEncoder(w).Encode(v)
}

func (r *Registry) serve(w http.ResponseWriter, q *http.Request) {
	r.mu.Lock()
	defer r.mu.Unlock()
	if r.down {
		writeErr(w, http.StatusServiceUnavailable, 50003, "registry is down")
		return
	}
	parts := strings.Split(strings.Trim(q.URL.Path, "/"), "/")
	switch {
	case q.Method == http.MethodGet && len(parts) == 1 && parts[0] == "subjects":
		subs := []string{}
		for s := range r.subs {
			subs = append(subs, s)
		}
		writeJSON(w, subs)
	case q.Method == http.MethodGet && len(parts) == 3 && parts[0] == "schemas" && parts[1] == "ids":
		id, _ := strconv.Atoi(parts[2])
		s, ok := r.byID[id]
		if !ok {
			writeErr(w, http.StatusNotFound, 40403, "Schema "+parts[2]+" not found")
			return
		}
		writeJSON(w, map[string]any{"schema": s})
	case q.Method == http.MethodGet && len(parts) == 4 && parts[0] == "subjects" && parts[2] == "versions":
		vs, ok := r.subs[parts[1]]
		if !ok {
			writeErr(w, http.StatusNotFound, 40401, "Subject '"+parts[1]+"' not found.")
			return
		}
		v := len(vs)
		if parts[3] != "latest" {
			v, _ = strconv.Atoi(parts[3])
		}
		if v < 1 || v > len(vs) {
			writeErr(w, http.StatusNotFound, 40402, "Version "+parts[3]+" not found.")
			return
		}
		id := vs[v-1]
		writeJSON(w, map[string]any{"subject": parts[1], "version": v, "id": id, "schema": r.byID[id]})
	case q.Method == http.MethodPost && len(parts) == 3 && parts[0] == "subjects" && parts[2] == "versions":
		var body struct {
			Schema     string `json:"schema"`
			SchemaType string `json:"schemaType"`
		}
		if err := json.NewDecoder(q.Body).Decode(&body); err != nil {
			writeErr(w, http.StatusUnprocessableEntity, 42201, "Invalid schema: "+err.Error())
			return
		}
		id, err := r.registerLocked(parts[1], body.Schema)
		if err != nil {
			writeErr(w, http.StatusConflict, 409, err.Error())
			return
		}
		writeJSON(w, map[string]any{"id": id})
	default:
		writeErr(w, http.StatusNotFound, 404, "no such endpoint: "+q.Method+" "+q.URL.Path)
	}
}

// Register registers schema under subject, as a client's POST would.
func (r *Registry) Register(subject, schema string) (int, error) {
	r.mu.Lock()
	defer r.mu.Unlock()
	return r.registerLocked(subject, schema)
}

func (r *Registry) registerLocked(subject, schema string) (int, error) {
	sc, err := avro.ParseWithCache(schema, "", &avro.SchemaCache{})
	if err != nil {
		return 0, fmt.Errorf("invalid schema: %v", err)
	}
	canon := sc.String()
	vs := r.subs[subject]
	if id, ok := r.ids[canon]; ok {
		for _, v := range vs {
			if v == id {
				return id, nil
			}
		}
	}
	if len(vs) > 0 {
		prev, err := avro.ParseWithCache(r.byID[vs[len(vs)-1]], "", &avro.SchemaCache{})
		if err != nil {
			return 0, err
		}
		if err := avro.NewSchemaCompatibility().Compatible(sc, prev); err != nil {
			return 0, fmt.Errorf("Schema being registered is incompatible with an earlier schema for subject %q: %v", subject, err)
		}
	}
	id, ok := r.ids[canon]
	if !ok {
		id = len(r.byID) + 1
		r.ids[canon] = id
		r.byID[id] = schema
	}
	r.subs[subject] = append(vs, id)
	return id, nil
}

// Encode encodes v with schema and frames it in the Confluent wire
// format: magic byte 0, the schema id (big-endian), the Avro record.
func Encode(id int, schema string, v any) ([]byte, error) {
	sc, err := avro.ParseWithCache(schema, "", &avro.SchemaCache{})
	if err != nil {
		return nil, err
	}
	body, err := avro.Marshal(sc, v)
	if err != nil {
		return nil, err
	}
	out := make([]byte, 5, 5+len(body))
	binary.BigEndian.PutUint32(out[1:], uint32(id))
	return append(out, body...), nil
}

// Decode reads a message in the Confluent wire format with the schema of
// its id into v (a map or struct, as hamba/avro decodes).
func (r *Registry) Decode(msg []byte, v any) error {
	if len(msg) < 5 || msg[0] != 0 {
		return fmt.Errorf("not in the wire format")
	}
	r.mu.Lock()
	s, ok := r.byID[int(binary.BigEndian.Uint32(msg[1:5]))]
	r.mu.Unlock()
	if !ok {
		return fmt.Errorf("unknown schema id")
	}
	sc, err := avro.ParseWithCache(s, "", &avro.SchemaCache{})
	if err != nil {
		return err
	}
	return avro.Unmarshal(sc, msg[5:], v)
}

package fakeregistry

import (
	"bytes"
	"encoding/json"
	"fmt"
	"net/http"
	"net/url"
	"slices"
	"strconv"
	"strings"
	"sync"
	"time"
)

// Reference is a schema reference as Confluent's API writes it.
type Reference struct {
	Name    string `json:"name"`
	Subject string `json:"subject"`
	Version int    `json:"version"`
}

// Fault makes the registry misbehave. The zero Fault is no fault.
type Fault struct {
	// Status, when not 0, is answered instead of the real answer, with
	// Confluent's error JSON.
	Status int
	// Delay is waited before answering (the request's context ends it).
	Delay time.Duration
	// Garbage answers 200 with a body that is not JSON.
	Garbage bool
	// Path, when set, limits the fault to request paths with this prefix.
	Path string
	// Times, when > 0, is how many requests the fault hits before it
	// clears itself.
	Times int
}

type stored struct {
	id         int
	schema     string
	schemaType string
	refs       []Reference
}

type version struct {
	version int
	id      int
}

// Registry is an in-memory Schema Registry. Its zero value is not usable:
// call New or NewServer.
type Registry struct {
	// URL is the base URL when started by NewServer, else "".
	URL string

	mu       sync.Mutex
	schemas  []stored             // by id-1
	subjects map[string][]version // versions in order
	user     string
	pass     string
	auth     bool
	fault    Fault
	requests map[string]int
}

// New returns an empty registry.
func New() *Registry {
	return &Registry{subjects: map[string][]version{}, requests: map[string]int{}}
}

// RequireBasicAuth makes every request need these credentials (401
// otherwise).
func (r *Registry) RequireBasicAuth(user, pass string) {
	r.mu.Lock()
	defer r.mu.Unlock()
	r.user, r.pass, r.auth = user, pass, true
}

// SetFault installs f, replacing any earlier fault; SetFault(Fault{})
// clears it.
func (r *Registry) SetFault(f Fault) {
	r.mu.Lock()
	defer r.mu.Unlock()
	r.fault = f
}

// Requests returns how many requests reached path (faulted ones included).
func (r *Registry) Requests(path string) int {
	r.mu.Lock()
	defer r.mu.Unlock()
	return r.requests[path]
}

// TotalRequests returns how many requests reached the registry.
func (r *Registry) TotalRequests() int {
	r.mu.Lock()
	defer r.mu.Unlock()
	n := 0
	for _, c := range r.requests {
		n += c
	}
	return n
}

// Register registers an Avro schema under subject and returns its id. An
// identical schema (same text once compacted, same type and references)
// keeps its id; under the same subject it keeps its version too.
func (r *Registry) Register(subject, schema string, refs ...Reference) (int, error) {
	return r.RegisterType(subject, "AVRO", schema, refs...)
}

// RegisterType is Register for a schema of type AVRO, JSON or PROTOBUF.
func (r *Registry) RegisterType(subject, schemaType, schema string, refs ...Reference) (int, error) {
	r.mu.Lock()
	defer r.mu.Unlock()
	id, _, err := r.register(subject, schemaType, schema, refs)
	return id, err
}

type apiError struct {
	status int
	code   int
	msg    string
}

func (e *apiError) Error() string { return fmt.Sprintf("%d %s", e.code, e.msg) }

func normalize(schema string) string {
	var b bytes.Buffer
	if json.Compact(&b, []byte(schema)) == nil {
		return b.String()
	}
	return strings.TrimSpace(schema)
}

// register needs r.mu held.
func (r *Registry) register(subject, schemaType, schema string, refs []Reference) (int, int, error) {
	if subject == "" {
		return 0, 0, &apiError{http.StatusUnprocessableEntity, 42201, "Invalid schema: empty subject"}
	}
	schemaType = strings.ToUpper(schemaType)
	if schemaType == "" {
		schemaType = "AVRO"
	}
	switch schemaType {
	case "AVRO", "JSON":
		if !json.Valid([]byte(schema)) {
			return 0, 0, &apiError{http.StatusUnprocessableEntity, 42201, "Invalid schema: not JSON"}
		}
	case "PROTOBUF":
	default:
		return 0, 0, &apiError{http.StatusUnprocessableEntity, 42201, "Invalid schema type " + schemaType}
	}
	for _, ref := range refs {
		if _, err := r.lookupVersion(ref.Subject, strconv.Itoa(ref.Version)); err != nil {
			return 0, 0, &apiError{http.StatusUnprocessableEntity, 42201, "Invalid schema: reference " + ref.Name + " not found"}
		}
	}
	norm := normalize(schema)
	id := 0
	for _, s := range r.schemas {
		if s.schemaType == schemaType && normalize(s.schema) == norm && slices.Equal(s.refs, refs) {
			id = s.id
			break
		}
	}
	if id == 0 {
		id = len(r.schemas) + 1
		r.schemas = append(r.schemas, stored{id: id, schema: schema, schemaType: schemaType, refs: slices.Clone(refs)})
	}
	vs := r.subjects[subject]
	for _, v := range vs {
		if v.id == id {
			return id, v.version, nil
		}
	}
	v := 1
	if len(vs) > 0 {
		v = vs[len(vs)-1].version + 1
	}
	r.subjects[subject] = append(vs, version{version: v, id: id})
	return id, v, nil
}

// lookupVersion needs r.mu held.
func (r *Registry) lookupVersion(subject, v string) (version, error) {
	vs, ok := r.subjects[subject]
	if !ok {
		return version{}, &apiError{http.StatusNotFound, 40401, "Subject '" + subject + "' not found."}
	}
	if v == "latest" || v == "-1" {
		return vs[len(vs)-1], nil
	}
	n, err := strconv.Atoi(v)
	if err != nil || n <= 0 {
		return version{}, &apiError{http.StatusUnprocessableEntity, 42202, "The specified version '" + v + "' is not a valid version id."}
	}
	for _, x := range vs {
		if x.version == n {
			return x, nil
		}
	}
	return version{}, &apiError{http.StatusNotFound, 40402, "Version " + v + " not found."}
}

func writeJSON(w http.ResponseWriter, status int, v any) {
	w.Header().Set("Content-Type", "application/vnd.schemaregistry.v1+json")
	w.WriteHeader(status)
	_ = json.NewEncoder(w).Encode(v)
}

func writeError(w http.ResponseWriter, status, code int, msg string) {
	writeJSON(w, status, map[string]any{"error_code": code, "message": msg})
}

// schemaJSON is the answer of GET /schemas/ids/{id} and of subject versions.
type schemaJSON struct {
	Subject    string      `json:"subject,omitempty"`
	Version    int         `json:"version,omitempty"`
	ID         int         `json:"id,omitempty"`
	Schema     string      `json:"schema"`
	SchemaType string      `json:"schemaType,omitempty"`
	References []Reference `json:"references,omitempty"`
}

func (s stored) json() schemaJSON {
	out := schemaJSON{Schema: s.schema, References: s.refs}
	if s.schemaType != "AVRO" {
		out.SchemaType = s.schemaType // Confluent omits AVRO
	}
	return out
}

// ServeHTTP serves the registry's REST API.
func (r *Registry) ServeHTTP(w http.ResponseWriter, req *http.Request) {
	r.mu.Lock()
	r.requests[req.URL.Path]++
	f := r.fault
	hit := (f != Fault{}) && strings.HasPrefix(req.URL.Path, f.Path)
	if hit && f.Times > 0 {
		if r.fault.Times--; r.fault.Times == 0 {
			r.fault = Fault{}
		}
	}
	auth, user, pass := r.auth, r.user, r.pass
	r.mu.Unlock()

	if hit && f.Delay > 0 {
		t := time.NewTimer(f.Delay)
		select {
		case <-req.Context().Done():
			t.Stop()
			return
		case <-t.C:
		}
	}
	if auth {
		u, p, ok := req.BasicAuth()
		if !ok || u != user || p != pass {
			w.Header().Set("WWW-Authenticate", `Basic realm="fakeregistry"`)
			writeError(w, http.StatusUnauthorized, 401, "Unauthorized")
			return
		}
	}
	if hit && f.Status != 0 {
		writeError(w, f.Status, f.Status*100+1, http.StatusText(f.Status))
		return
	}
	if hit && f.Garbage {
		w.Header().Set("Content-Type", "application/vnd.schemaregistry.v1+json")
		_, _ = w.Write([]byte("<html>502 bad gateway, or so"))
		return
	}
	r.route(w, req)
}

func (r *Registry) route(w http.ResponseWriter, req *http.Request) {
	parts := strings.Split(strings.Trim(req.URL.EscapedPath(), "/"), "/")
	for i, p := range parts {
		if u, err := unescape(p); err == nil {
			parts[i] = u
		}
	}
	r.mu.Lock()
	defer r.mu.Unlock()
	get, post := req.Method == http.MethodGet, req.Method == http.MethodPost
	switch {
	case get && len(parts) == 1 && parts[0] == "config":
		writeJSON(w, http.StatusOK, map[string]string{"compatibilityLevel": "BACKWARD"})
	case get && len(parts) >= 3 && len(parts) <= 4 && parts[0] == "schemas" && parts[1] == "ids":
		id, err := strconv.Atoi(parts[2])
		if err != nil || id <= 0 || id > len(r.schemas) || (len(parts) == 4 && parts[3] != "schema") {
			writeError(w, http.StatusNotFound, 40403, "Schema "+parts[2]+" not found")
			return
		}
		s := r.schemas[id-1]
		if req.URL.Query().Get("format") == "serialized" {
			s.schema = r.serialized(s)
		}
		if len(parts) == 4 {
			w.Header().Set("Content-Type", "application/vnd.schemaregistry.v1+json")
			_, _ = w.Write([]byte(s.schema))
			return
		}
		writeJSON(w, http.StatusOK, s.json())
	case get && len(parts) == 1 && parts[0] == "subjects":
		names := make([]string, 0, len(r.subjects))
		for s := range r.subjects {
			names = append(names, s)
		}
		slices.Sort(names)
		writeJSON(w, http.StatusOK, names)
	case get && len(parts) == 3 && parts[0] == "subjects" && parts[2] == "versions":
		vs, ok := r.subjects[parts[1]]
		if !ok {
			writeError(w, http.StatusNotFound, 40401, "Subject '"+parts[1]+"' not found.")
			return
		}
		nums := make([]int, len(vs))
		for i, v := range vs {
			nums[i] = v.version
		}
		writeJSON(w, http.StatusOK, nums)
	case get && len(parts) == 4 && parts[0] == "subjects" && parts[2] == "versions":
		v, err := r.lookupVersion(parts[1], parts[3])
		if err != nil {
			r.fail(w, err)
			return
		}
		s := r.schemas[v.id-1]
		if req.URL.Query().Get("format") == "serialized" {
			s.schema = r.serialized(s)
		}
		out := s.json()
		out.Subject, out.Version, out.ID = parts[1], v.version, v.id
		writeJSON(w, http.StatusOK, out)
	case post && len(parts) == 3 && parts[0] == "subjects" && parts[2] == "versions":
		body, ok := decodeBody(w, req)
		if !ok {
			return
		}
		id, _, err := r.register(parts[1], body.SchemaType, body.Schema, body.References)
		if err != nil {
			r.fail(w, err)
			return
		}
		writeJSON(w, http.StatusOK, map[string]int{"id": id})
	case post && len(parts) == 2 && parts[0] == "subjects":
		body, ok := decodeBody(w, req)
		if !ok {
			return
		}
		vs, found := r.subjects[parts[1]]
		if !found {
			writeError(w, http.StatusNotFound, 40401, "Subject '"+parts[1]+"' not found.")
			return
		}
		typ := strings.ToUpper(body.SchemaType)
		if typ == "" {
			typ = "AVRO"
		}
		norm := normalize(body.Schema)
		for _, v := range vs {
			s := r.schemas[v.id-1]
			if s.schemaType == typ && normalize(s.schema) == norm {
				out := s.json()
				out.Subject, out.Version, out.ID = parts[1], v.version, v.id
				writeJSON(w, http.StatusOK, out)
				return
			}
		}
		writeError(w, http.StatusNotFound, 40403, "Schema not found")
	default:
		writeError(w, http.StatusNotFound, 404, "HTTP 404 Not Found")
	}
}

func (r *Registry) fail(w http.ResponseWriter, err error) {
	if ae, ok := err.(*apiError); ok {
		writeError(w, ae.status, ae.code, ae.msg)
		return
	}
	writeError(w, http.StatusInternalServerError, 50001, "Error in the backend data store")
}

type registerBody struct {
	Schema     string      `json:"schema"`
	SchemaType string      `json:"schemaType"`
	References []Reference `json:"references"`
}

func decodeBody(w http.ResponseWriter, req *http.Request) (registerBody, bool) {
	var body registerBody
	if err := json.NewDecoder(http.MaxBytesReader(w, req.Body, 8<<20)).Decode(&body); err != nil {
		writeError(w, http.StatusUnprocessableEntity, 42201, "Invalid schema: unreadable request body")
		return body, false
	}
	return body, true
}

func unescape(s string) (string, error) { return url.PathUnescape(s) }

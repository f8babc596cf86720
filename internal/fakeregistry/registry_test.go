package fakeregistry

import (
	"encoding/json"
	"io"
	"net/http"
	"strings"
	"testing"
	"time"
)

func call(t *testing.T, method, url, body string, setup ...func(*http.Request)) (int, map[string]any, string) {
	t.Helper()
	req, err := http.NewRequestWithContext(t.Context(), method, url, strings.NewReader(body))
	if err != nil {
		t.Fatal(err)
	}
	req.Header.Set("Content-Type", "application/vnd.schemaregistry.v1+json")
	for _, f := range setup {
		f(req)
	}
	resp, err := http.DefaultClient.Do(req)
	if err != nil {
		t.Fatal(err)
	}
	defer resp.Body.Close()
	raw, _ := io.ReadAll(resp.Body)
	var m map[string]any
	_ = json.Unmarshal(raw, &m)
	return resp.StatusCode, m, string(raw)
}

func TestRegisterReusesIDs(t *testing.T) {
	r := New()
	a, err := r.Register("a-value", `{"type":"record","name":"A","fields":[]}`)
	if err != nil {
		t.Fatal(err)
	}
	same, _ := r.Register("a-value", `{ "type": "record", "name": "A", "fields": [] }`)
	other, _ := r.Register("b-value", `{"type":"record","name":"A","fields":[]}`)
	b, _ := r.Register("a-value", `"long"`)
	if a != 1 || same != a || other != a || b != 2 {
		t.Errorf("ids %d %d %d %d, want 1 1 1 2", a, same, other, b)
	}
	if _, err := r.Register("x", `{not json`); err == nil {
		t.Error("registered a schema that is not JSON")
	}
	if _, err := r.Register("y", `"long"`, Reference{Name: "n", Subject: "missing", Version: 1}); err == nil {
		t.Error("registered a schema with a dangling reference")
	}
}

func TestREST(t *testing.T) {
	r := NewServer(t)
	status, m, _ := call(t, "POST", r.URL+"/subjects/orders-value/versions", `{"schema":"{\"type\":\"string\"}"}`)
	if status != 200 || m["id"] != 1.0 {
		t.Fatalf("register: %d %v", status, m)
	}
	status, m, _ = call(t, "POST", r.URL+"/subjects/orders-value/versions", `{"schema":"{\"type\":\"object\"}","schemaType":"JSON"}`)
	if status != 200 || m["id"] != 2.0 {
		t.Fatalf("register JSON: %d %v", status, m)
	}
	if _, err := r.Register("money", `"long"`); err != nil {
		t.Fatal(err)
	}
	status, m, _ = call(t, "POST", r.URL+"/subjects/with%2Fslash/versions", `{"schema":"\"int\"","references":[{"name":"M","subject":"money","version":1}]}`)
	if status != 200 || m["id"] != 4.0 {
		t.Fatalf("register with reference: %d %v", status, m)
	}
	for _, tt := range []struct {
		name, method, path, body string
		status                   int
		want                     string // a substring of the answer
	}{
		{"schema by id", "GET", "/schemas/ids/1", "", 200, `"schema":"{\"type\":\"string\"}"`},
		{"avro type omitted", "GET", "/schemas/ids/1", "", 200, `}`},
		{"json type", "GET", "/schemas/ids/2", "", 200, `"schemaType":"JSON"`},
		{"references", "GET", "/schemas/ids/4", "", 200, `"references":[{"name":"M","subject":"money","version":1}]`},
		{"raw schema", "GET", "/schemas/ids/1/schema", "", 200, `{"type":"string"}`},
		{"unknown id", "GET", "/schemas/ids/99", "", 404, `"error_code":40403`},
		{"subjects", "GET", "/subjects", "", 200, `["money","orders-value","with/slash"]`},
		{"versions", "GET", "/subjects/orders-value/versions", "", 200, `[1,2]`},
		{"version", "GET", "/subjects/orders-value/versions/1", "", 200, `"id":1`},
		{"latest", "GET", "/subjects/orders-value/versions/latest", "", 200, `"version":2`},
		{"escaped subject", "GET", "/subjects/with%2Fslash/versions/1", "", 200, `"subject":"with/slash"`},
		{"unknown subject", "GET", "/subjects/nope/versions/1", "", 404, `"error_code":40401`},
		{"unknown version", "GET", "/subjects/orders-value/versions/7", "", 404, `"error_code":40402`},
		{"bad version", "GET", "/subjects/orders-value/versions/x", "", 422, `"error_code":42202`},
		{"lookup", "POST", "/subjects/orders-value", `{"schema":"{\"type\": \"string\"}"}`, 200, `"version":1`},
		{"lookup missing", "POST", "/subjects/orders-value", `{"schema":"\"bytes\""}`, 404, `"error_code":40403`},
		{"invalid schema", "POST", "/subjects/x/versions", `{"schema":"{nope"}`, 422, `"error_code":42201`},
		{"config", "GET", "/config", "", 200, `"compatibilityLevel"`},
		{"unknown path", "GET", "/nothing", "", 404, `"error_code":404`},
	} {
		t.Run(tt.name, func(t *testing.T) {
			status, _, raw := call(t, tt.method, r.URL+tt.path, tt.body)
			if status != tt.status || !strings.Contains(raw, tt.want) {
				t.Errorf("%s %s = %d %s, want %d with %s", tt.method, tt.path, status, raw, tt.status, tt.want)
			}
		})
	}
	if n := r.Requests("/schemas/ids/1"); n != 2 {
		t.Errorf("Requests(/schemas/ids/1) = %d, want 2", n)
	}
}

func TestBasicAuth(t *testing.T) {
	r := NewServer(t)
	r.RequireBasicAuth("u", "p")
	status, m, _ := call(t, "GET", r.URL+"/subjects", "")
	if status != 401 || m["error_code"] != 401.0 {
		t.Errorf("no credentials: %d %v", status, m)
	}
	status, _, _ = call(t, "GET", r.URL+"/subjects", "", func(req *http.Request) { req.SetBasicAuth("u", "wrong") })
	if status != 401 {
		t.Errorf("wrong password: %d", status)
	}
	status, _, _ = call(t, "GET", r.URL+"/subjects", "", func(req *http.Request) { req.SetBasicAuth("u", "p") })
	if status != 200 {
		t.Errorf("right credentials: %d", status)
	}
}

func TestFaults(t *testing.T) {
	r := NewServer(t)
	if _, err := r.Register("s", `"long"`); err != nil {
		t.Fatal(err)
	}
	path := "/schemas/ids/1"

	r.SetFault(Fault{Status: 503, Times: 2})
	for i, want := range []int{503, 503, 200} {
		if status, _, _ := call(t, "GET", r.URL+path, ""); status != want {
			t.Errorf("request %d: status %d, want %d", i, status, want)
		}
	}

	r.SetFault(Fault{Garbage: true, Path: "/schemas/"})
	if _, m, raw := call(t, "GET", r.URL+path, ""); m != nil || json.Valid([]byte(raw)) {
		t.Errorf("garbage fault answered JSON %s", raw)
	}
	if status, _, _ := call(t, "GET", r.URL+"/subjects", ""); status != 200 {
		t.Errorf("fault limited to /schemas/ hit /subjects: %d", status)
	}

	r.SetFault(Fault{Delay: 200 * time.Millisecond})
	start := time.Now()
	call(t, "GET", r.URL+path, "")
	if d := time.Since(start); d < 200*time.Millisecond {
		t.Errorf("delayed answer came after %v", d)
	}
	r.SetFault(Fault{})
	if status, _, _ := call(t, "GET", r.URL+path, ""); status != 200 {
		t.Errorf("cleared fault: %d", status)
	}
	if n, total := r.Requests(path), r.TotalRequests(); n != 6 || total != 7 {
		t.Errorf("Requests = %d, TotalRequests = %d, want 6 and 7", n, total)
	}
}

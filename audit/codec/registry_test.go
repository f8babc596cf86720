package codec

import (
	"context"
	"crypto/tls"
	"encoding/pem"
	"errors"
	"net/http"
	"net/http/httptest"
	"os"
	"path/filepath"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/kaudit/kaudit/internal/fakeregistry"
)

const orderSchema = `{"type":"record","name":"Order","fields":[{"name":"orderId","type":"string"},{"name":"amount","type":"double"}]}`

func orderPayload(t testing.TB, id int) []byte {
	return encode(t, id, orderSchema, map[string]any{"orderId": "o-1", "amount": 9.5})
}

func TestRegistryDecode(t *testing.T) {
	reg, c := registryCodec(t, Config{})
	id, err := reg.Register("orders-value", orderSchema)
	if err != nil {
		t.Fatal(err)
	}
	v := mustDecode(t, c, orderPayload(t, id))
	if got, want := Text(v), `{"amount":9.5,"orderId":"o-1"}`; got != want {
		t.Errorf("Text = %s, want %s", got, want)
	}
	if got := c.Schemas()[int32(id)].Schema; !strings.Contains(got, `"orderId"`) {
		t.Errorf("Schemas()[%d] = %q, want the order schema", id, got)
	}
}

// TestRegistryCacheOncePerID decodes many records of two ids from many
// goroutines: the registry must see exactly one request per id, a missing
// id included.
func TestRegistryCacheOncePerID(t *testing.T) {
	reg, c := registryCodec(t, Config{})
	id1, _ := reg.Register("a-value", orderSchema)
	id2, _ := reg.Register("b-value", `"long"`)
	reg.SetFault(fakeregistry.Fault{Delay: 50 * time.Millisecond}) // let the callers pile up
	p1, p2 := orderPayload(t, id1), encode(t, id2, `"long"`, int64(5))
	missing := frame(77, []byte{0})
	var wg sync.WaitGroup
	errs := make(chan error, 64)
	for range 16 {
		wg.Go(func() {
			for _, p := range [][]byte{p1, p2, p1, p2} {
				if _, err := c.Decode(context.Background(), "t", false, p); err != nil {
					errs <- err
				}
			}
			if _, err := c.Decode(context.Background(), "t", false, missing); !errors.Is(err, ErrUnknownSchema) {
				errs <- err
			}
		})
	}
	wg.Wait()
	close(errs)
	for err := range errs {
		t.Error(err)
	}
	for _, path := range []string{"/schemas/ids/" + itoa(int32(id1)), "/schemas/ids/" + itoa(int32(id2)), "/schemas/ids/77"} {
		if n := reg.Requests(path); n != 1 {
			t.Errorf("%s requested %d times, want 1", path, n)
		}
	}
}

func TestRegistryFaults(t *testing.T) {
	for _, tt := range []struct {
		name         string
		fault        fakeregistry.Fault
		retries      int
		wantSentinel error
		wantDecode   bool // a *DecodeError (the record's fault), not a *RegistryError
		wantRequests int
		wantInMsg    string
	}{
		{"404 unknown id", fakeregistry.Fault{}, 2, ErrUnknownSchema, true, 1, "40403"},
		{"500 retried then error", fakeregistry.Fault{Status: 500}, 2, ErrRegistryUnavailable, false, 3, "HTTP 500"},
		{"503 without retries", fakeregistry.Fault{Status: 503}, -1, ErrRegistryUnavailable, false, 1, "HTTP 503"},
		{"500 once then ok", fakeregistry.Fault{Status: 500, Times: 1}, 2, nil, false, 2, ""},
		{"slow answer times out", fakeregistry.Fault{Delay: 2 * time.Second}, 1, ErrRegistryUnavailable, false, 2, "no answer within"},
		{"garbage JSON", fakeregistry.Fault{Garbage: true}, 2, ErrRegistryUnavailable, false, 1, "not schema registry JSON"},
		{"403 not retried", fakeregistry.Fault{Status: 403}, 2, ErrRegistryUnavailable, false, 1, "HTTP 403"},
		{"429 retried", fakeregistry.Fault{Status: 429}, 1, ErrRegistryUnavailable, false, 2, "HTTP 429"},
	} {
		t.Run(tt.name, func(t *testing.T) {
			reg, c := registryCodec(t, Config{Retries: tt.retries, Timeout: 150 * time.Millisecond, Backoff: 10 * time.Millisecond})
			id := 1
			if tt.wantSentinel != ErrUnknownSchema {
				id, _ = reg.Register("orders-value", orderSchema)
			}
			reg.SetFault(tt.fault)
			v, err := c.Decode(t.Context(), "orders", false, orderPayload(t, id))
			if n := reg.Requests("/schemas/ids/" + itoa(int32(id))); n != tt.wantRequests {
				t.Errorf("%d requests, want %d", n, tt.wantRequests)
			}
			if tt.wantSentinel == nil {
				if err != nil {
					t.Fatalf("decode: %v", err)
				}
				if Text(v) != `{"amount":9.5,"orderId":"o-1"}` {
					t.Errorf("Text = %s", Text(v))
				}
				return
			}
			if !errors.Is(err, tt.wantSentinel) {
				t.Fatalf("error %v does not wrap %v", err, tt.wantSentinel)
			}
			var de *DecodeError
			if errors.As(err, &de) != tt.wantDecode {
				t.Errorf("errors.As(*DecodeError) = %v, want %v (err %v)", !tt.wantDecode, tt.wantDecode, err)
			}
			if tt.wantDecode && de.SchemaID != int32(id) {
				t.Errorf("SchemaID = %d, want %d", de.SchemaID, id)
			}
			if !tt.wantDecode && errors.Is(err, ErrUnknownSchema) {
				t.Errorf("an unavailable registry must not look like an unknown schema: %v", err)
			}
			if !strings.Contains(err.Error(), tt.wantInMsg) || !strings.Contains(err.Error(), "/schemas/ids/") {
				t.Errorf("error %q does not name the URL and %q", err, tt.wantInMsg)
			}
		})
	}
}

func TestRegistryDown(t *testing.T) {
	srv := httptest.NewServer(http.NotFoundHandler())
	url := srv.URL
	srv.Close() // nothing listens there any more
	c, err := New(Config{ValueSerde: "avro", RegistryURL: url, Retries: 1, Backoff: time.Millisecond})
	if err != nil {
		t.Fatal(err)
	}
	_, err = c.Decode(t.Context(), "t", false, frame(1, []byte{0}))
	if !errors.Is(err, ErrRegistryUnavailable) {
		t.Fatalf("error %v does not wrap ErrRegistryUnavailable", err)
	}
	var re *RegistryError
	if !errors.As(err, &re) || re.Status != 0 || !strings.HasPrefix(re.URL, url) {
		t.Errorf("RegistryError = %+v, want status 0 and URL under %s", re, url)
	}
}

func TestRegistryFailover(t *testing.T) {
	srv := httptest.NewServer(http.NotFoundHandler())
	dead := srv.URL
	srv.Close()
	reg := fakeregistry.NewServer(t)
	id, _ := reg.Register("s", orderSchema)
	c, err := New(Config{ValueSerde: "avro", RegistryURL: dead + "," + reg.URL, Retries: -1})
	if err != nil {
		t.Fatal(err)
	}
	mustDecode(t, c, orderPayload(t, id))
}

func TestRegistryBasicAuth(t *testing.T) {
	const secret = "s3cr3t-pa55"
	for _, tt := range []struct {
		name   string
		url    func(base string) string
		props  map[string]string
		wantOK bool
	}{
		{"user info", nil, map[string]string{"basic.auth.credentials.source": "USER_INFO", "basic.auth.user.info": "alice:" + secret}, true},
		{"prefixed user info", nil, map[string]string{"schema.registry.basic.auth.user.info": "alice:" + secret, "basic.auth.user.info": "bob:wrong"}, true},
		{"url credentials", func(b string) string { return strings.Replace(b, "http://", "http://alice:"+secret+"@", 1) }, nil, true},
		{"sasl inherit", nil, map[string]string{"basic.auth.credentials.source": "SASL_INHERIT",
			"sasl.jaas.config": `org.apache.kafka.common.security.plain.PlainLoginModule required username="alice" password="` + secret + `";`}, true},
		{"wrong password", nil, map[string]string{"basic.auth.user.info": "alice:" + secret + "x"}, false},
		{"no credentials", nil, nil, false},
	} {
		t.Run(tt.name, func(t *testing.T) {
			reg := fakeregistry.NewServer(t)
			reg.RequireBasicAuth("alice", secret)
			id, _ := reg.Register("s", orderSchema)
			u := reg.URL
			if tt.url != nil {
				u = tt.url(u)
			}
			c, err := New(Config{ValueSerde: "avro", RegistryURL: u, Properties: tt.props})
			if err != nil {
				t.Fatal(err)
			}
			_, err = c.Decode(t.Context(), "t", false, orderPayload(t, id))
			if tt.wantOK {
				if err != nil {
					t.Fatalf("decode: %v", err)
				}
				return
			}
			if !errors.Is(err, ErrRegistryUnavailable) {
				t.Fatalf("error %v does not wrap ErrRegistryUnavailable", err)
			}
			if n := reg.TotalRequests(); n != 1 {
				t.Errorf("401 was retried: %d requests", n)
			}
			msg := err.Error()
			if !strings.Contains(msg, "401") || strings.Contains(msg, secret) || strings.Contains(msg, "Basic ") {
				t.Errorf("error %q: want the status and no credentials", msg)
			}
		})
	}
}

// TestRegistryReferences resolves a schema whose record type comes from a
// referenced subject, itself referencing another.
func TestRegistryReferences(t *testing.T) {
	reg, c := registryCodec(t, Config{})
	if _, err := reg.Register("money", `{"type":"record","name":"Money","namespace":"com.x","fields":[{"name":"cents","type":"long"},{"name":"cur","type":{"type":"enum","name":"Cur","symbols":["EUR","USD"]}}]}`); err != nil {
		t.Fatal(err)
	}
	if _, err := reg.Register("line", `{"type":"record","name":"Line","namespace":"com.x","fields":[{"name":"price","type":"com.x.Money"}]}`,
		fakeregistry.Reference{Name: "com.x.Money", Subject: "money", Version: 1}); err != nil {
		t.Fatal(err)
	}
	top := `{"type":"record","name":"Order","namespace":"com.x","fields":[{"name":"lines","type":{"type":"array","items":"com.x.Line"}},{"name":"total","type":"com.x.Money"}]}`
	id, err := reg.Register("orders-value", top,
		fakeregistry.Reference{Name: "com.x.Line", Subject: "line", Version: 1},
		fakeregistry.Reference{Name: "com.x.Money", Subject: "money", Version: 1})
	if err != nil {
		t.Fatal(err)
	}
	// The writer encodes with the self-contained schema.
	full := `{"type":"record","name":"Order","namespace":"com.x","fields":[
	  {"name":"lines","type":{"type":"array","items":{"type":"record","name":"Line","fields":[{"name":"price","type":
	    {"type":"record","name":"Money","fields":[{"name":"cents","type":"long"},{"name":"cur","type":{"type":"enum","name":"Cur","symbols":["EUR","USD"]}}]}}]}}},
	  {"name":"total","type":"Money"}]}`
	money := map[string]any{"cents": int64(250), "cur": "USD"}
	v := mustDecode(t, c, encode(t, id, full, map[string]any{"lines": []any{map[string]any{"price": money}}, "total": money}))
	if got, want := Text(v), `{"lines":[{"price":{"cents":250,"cur":"USD"}}],"total":{"cents":250,"cur":"USD"}}`; got != want {
		t.Errorf("Text = %s, want %s", got, want)
	}
	// A second id referencing the same subject versions reuses them.
	id2, err := reg.Register("orders2-value", strings.Replace(top, `"Order"`, `"Order2"`, 1),
		fakeregistry.Reference{Name: "com.x.Line", Subject: "line", Version: 1},
		fakeregistry.Reference{Name: "com.x.Money", Subject: "money", Version: 1})
	if err != nil {
		t.Fatal(err)
	}
	v2 := mustDecode(t, c, encode(t, id2, full, map[string]any{"lines": []any{}, "total": money}))
	if got, want := Text(v2), `{"lines":[],"total":{"cents":250,"cur":"USD"}}`; got != want {
		t.Errorf("Text = %s, want %s", got, want)
	}
	if n := reg.Requests("/subjects/money/versions/1"); n != 1 {
		t.Errorf("money fetched %d times, want 1 (shared by references and ids)", n)
	}

}

// TestRegistryDanglingReference serves a schema whose reference the
// registry no longer has: the schema is unusable, the registry is fine.
func TestRegistryDanglingReference(t *testing.T) {
	srv := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		if r.URL.Path == "/schemas/ids/5" {
			_, _ = w.Write([]byte(`{"schema":"{\"type\":\"record\",\"name\":\"X\",\"fields\":[{\"name\":\"m\",\"type\":\"Money\"}]}","references":[{"name":"Money","subject":"money","version":3}]}`))
			return
		}
		w.WriteHeader(http.StatusNotFound)
		_, _ = w.Write([]byte(`{"error_code":40402,"message":"Version 3 not found."}`))
	}))
	t.Cleanup(srv.Close)
	c, err := New(Config{ValueSerde: "avro", RegistryURL: srv.URL})
	if err != nil {
		t.Fatal(err)
	}
	_, err = c.Decode(t.Context(), "t", false, frame(5, []byte{0}))
	de := asDecodeError(t, err)
	if !errors.Is(err, ErrBadSchema) || errors.Is(err, ErrRegistryUnavailable) || de.SchemaID != 5 {
		t.Errorf("error %v: want ErrBadSchema for schema id 5", err)
	}
	if !strings.Contains(err.Error(), "40402") {
		t.Errorf("error %q does not carry the registry's error code", err)
	}
}

func TestRegistryJSONSchemaType(t *testing.T) {
	reg, c := registryCodec(t, Config{})
	id, err := reg.RegisterType("j-value", "JSON", `{"type":"object"}`)
	if err != nil {
		t.Fatal(err)
	}
	v := mustDecode(t, c, frame(id, []byte(`{"b":2,"a":1}`)))
	if got := Text(v); got != `{"a":1,"b":2}` {
		t.Errorf("Text = %s", got)
	}
	// the schema's type decides, whichever framed serde the topic has
	pid, _ := reg.RegisterType("p-value", "PROTOBUF", `syntax = "proto3"; message M { int32 n = 1; }`)
	if v := mustDecode(t, c, frame(pid, []byte{0, 8, 7})); Text(v) != `{"n":7}` {
		t.Errorf("protobuf schema under the avro serde: %s", Text(v))
	}
}

func TestRegistryBadSchema(t *testing.T) {
	reg, c := registryCodec(t, Config{})
	id, _ := reg.Register("s", `{"type":"record","name":"R","fields":[{"name":"a","type":"com.nowhere.Missing"}]}`)
	_, err := c.Decode(t.Context(), "t", false, frame(id, []byte{0}))
	de := asDecodeError(t, err)
	if !errors.Is(err, ErrBadSchema) || de.SchemaID != int32(id) {
		t.Errorf("error %v: want ErrBadSchema with schema id %d", err, id)
	}
}

// TestRegistryCanceled checks that a caller's cancelled context is
// returned as is and not cached: a later caller fetches the schema.
func TestRegistryCanceled(t *testing.T) {
	reg, c := registryCodec(t, Config{})
	id, _ := reg.Register("s", orderSchema)
	reg.SetFault(fakeregistry.Fault{Delay: time.Second, Times: 1})
	ctx, cancel := context.WithTimeout(t.Context(), 50*time.Millisecond)
	defer cancel()
	_, err := c.Decode(ctx, "t", false, orderPayload(t, id))
	if !errors.Is(err, context.DeadlineExceeded) || errors.Is(err, ErrRegistryUnavailable) {
		t.Fatalf("error %v, want the context's deadline", err)
	}
	mustDecode(t, c, orderPayload(t, id))
}

// TestRegistryTLS serves the registry over TLS with a client certificate
// required, trusting the server through ssl.ca.location.
func TestRegistryTLS(t *testing.T) {
	reg := fakeregistry.New()
	id, _ := reg.Register("s", orderSchema)
	srv := httptest.NewUnstartedServer(reg)
	srv.TLS = &tls.Config{ClientAuth: tls.RequireAnyClientCert}
	srv.StartTLS()
	t.Cleanup(srv.Close)
	dir := t.TempDir()
	cert := srv.TLS.Certificates[0]
	writePEM(t, filepath.Join(dir, "ca.pem"), "CERTIFICATE", cert.Certificate[0])
	// The server's own pair doubles as the client's certificate.
	writePEM(t, filepath.Join(dir, "client.pem"), "CERTIFICATE", cert.Certificate[0])
	keyDER := marshalKey(t, cert.PrivateKey)
	writePEM(t, filepath.Join(dir, "client.key"), "PRIVATE KEY", keyDER)

	c, err := New(Config{ValueSerde: "avro", RegistryURL: srv.URL, Retries: -1, Properties: map[string]string{
		"schema.registry.ssl.ca.location": filepath.Join(dir, "ca.pem"),
		"ssl.certificate.location":        filepath.Join(dir, "client.pem"),
		"ssl.key.location":                filepath.Join(dir, "client.key"),
	}})
	if err != nil {
		t.Fatal(err)
	}
	mustDecode(t, c, orderPayload(t, id))

	noCert, err := New(Config{ValueSerde: "avro", RegistryURL: srv.URL, Retries: -1, Properties: map[string]string{
		"ssl.ca.location": filepath.Join(dir, "ca.pem"),
	}})
	if err != nil {
		t.Fatal(err)
	}
	if _, err := noCert.Decode(t.Context(), "t", false, orderPayload(t, id)); !errors.Is(err, ErrRegistryUnavailable) {
		t.Errorf("without a client certificate: %v, want ErrRegistryUnavailable", err)
	}
}

func writePEM(t *testing.T, path, typ string, der []byte) {
	t.Helper()
	if err := os.WriteFile(path, pem.EncodeToMemory(&pem.Block{Type: typ, Bytes: der}), 0o600); err != nil {
		t.Fatal(err)
	}
}

// TestUnknownSchemaIsMissingEvidence: every record of an unknown schema id
// (a registry 404) fails with one and the same error, which wraps
// ErrRegistryUnavailable: the run reports one missing schema per id, not
// one undecodable finding per record.
func TestUnknownSchemaIsMissingEvidence(t *testing.T) {
	_, c := registryCodec(t, Config{Retries: 1, Timeout: time.Second, Backoff: 10 * time.Millisecond})
	msgs := map[string]bool{}
	for i := range 50 {
		p := orderPayload(t, 7)
		p = append(p, byte(i)) // another record of the same id
		_, err := c.Decode(t.Context(), "orders", false, p)
		if !errors.Is(err, ErrUnknownSchema) || !errors.Is(err, ErrRegistryUnavailable) {
			t.Fatalf("record %d: %v; want an unknown schema that is missing evidence", i, err)
		}
		msgs[err.Error()] = true
	}
	if len(msgs) != 1 {
		t.Fatalf("%d distinct errors for one unknown schema id: %v", len(msgs), msgs)
	}
}

package registrytest

import (
	"net"
	"net/http/httptest"
	"testing"
)

// NewServer starts a new Registry on 127.0.0.1 for the test and closes it
// on cleanup. Its URL field holds the base URL.
func NewServer(t testing.TB) *Registry {
	t.Helper()
	r := New()
	ln, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		t.Fatalf("listen: %v", err)
	}
	srv := httptest.NewUnstartedServer(r)
	srv.Listener.Close()
	srv.Listener = ln
	srv.Start()
	t.Cleanup(srv.Close)
	r.URL = srv.URL
	return r
}

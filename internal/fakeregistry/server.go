package fakeregistry

import (
	"net"
	"net/http"
)

// TB is the part of testing.TB NewServer uses: the package links no
// "testing" or "net/http/httptest", so the demo can ship it in the binary.
type TB interface {
	Helper()
	Fatalf(format string, args ...any)
	Cleanup(func())
}

// NewServer starts a new Registry on 127.0.0.1 for the test and closes it
// on cleanup. Its URL field holds the base URL.
func NewServer(t TB) *Registry {
	t.Helper()
	r := New()
	ln, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		t.Fatalf("listen: %v", err)
	}
	srv := &http.Server{Handler: r}
	go srv.Serve(ln) //nolint:errcheck // ends with Close
	t.Cleanup(func() { srv.Close() })
	r.URL = "http://" + ln.Addr().String()
	return r
}

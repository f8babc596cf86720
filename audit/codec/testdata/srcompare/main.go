// Command srcompare measures what franz-go's pkg/sr does where kaudit's registry
// client (audit/codec/registry.go) was kept instead (docs/decisions.md, "What is hand-written, and why"): a
// 503 before a 200, a 256 MiB error answer, an unreachable URL with credentials.
// Run: cd audit/codec/testdata/srcompare && go run .
package main

import (
	"context"
	"fmt"
	"net/http"
	"net/http/httptest"
	"runtime"
	"strings"
	"sync/atomic"

	"github.com/twmb/franz-go/pkg/sr"
)

func main() {
	var n atomic.Int32
	flaky := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		if n.Add(1) == 1 {
			w.WriteHeader(503)
			return
		}
		fmt.Fprint(w, `{"schema":"\"string\""}`)
	}))
	cl, _ := sr.NewClient(sr.URLs(flaky.URL))
	_, err := cl.SchemaByID(context.Background(), 1)
	fmt.Printf("503 then 200: err=%v (requests %d)\n", err, n.Load())

	big := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		w.WriteHeader(500)
		chunk := strings.Repeat("x", 1<<20)
		for range 256 {
			fmt.Fprint(w, chunk)
		}
	}))
	cl, _ = sr.NewClient(sr.URLs(big.URL))
	var before, after runtime.MemStats
	runtime.GC()
	runtime.ReadMemStats(&before)
	_, err = cl.SchemaByID(context.Background(), 1)
	runtime.ReadMemStats(&after)
	msg := err.Error()
	fmt.Printf("256 MiB error answer: allocated %d MiB, error message %d bytes\n", (after.TotalAlloc-before.TotalAlloc)>>20, len(msg))

	secretURL := "http://user:s3cret@127.0.0.1:1"
	cl, _ = sr.NewClient(sr.URLs(secretURL))
	_, err = cl.SchemaByID(context.Background(), 1)
	fmt.Printf("URL with credentials, unreachable: error shows the password: %v\n", strings.Contains(err.Error(), "s3cret"))
}

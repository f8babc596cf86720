package main

import (
	"os/exec"
	"strings"
	"testing"
)

// TestNoTestCodeInBinary: the demo's generator and registry ship in the
// binary (internal/fakeapp, internal/fakeregistry), but nothing of
// "testing" or "net/http/httptest" may come with them, and no package of
// kaudit's own named as a test helper (*test).
func TestNoTestCodeInBinary(t *testing.T) {
	out, err := exec.Command("go", "list", "-deps", "github.com/kaudit/kaudit/cmd/kaudit").Output()
	if err != nil {
		t.Skipf("go list: %v", err)
	}
	for _, dep := range strings.Fields(string(out)) {
		if dep == "testing" || dep == "net/http/httptest" || strings.HasPrefix(dep, "testing/") ||
			strings.HasPrefix(dep, "github.com/kaudit/") && strings.HasSuffix(dep, "test") {
			t.Errorf("the kaudit binary links %s", dep)
		}
	}
}

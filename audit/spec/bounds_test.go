package spec

import (
	"errors"
	"os"
	"path/filepath"
	"runtime"
	"strings"
	"testing"
	"time"
)

// TestSpecBounds: a spec too large or nested too deep is refused before
// the YAML parser runs, fast and with little memory; a real spec with a
// UTF-8 byte order mark is accepted.
func TestSpecBounds(t *testing.T) {
	nestedMap := func(levels int) string {
		var b strings.Builder
		for i := range levels {
			b.WriteString(strings.Repeat(" ", i) + "a:\n")
		}
		return b.String()
	}
	for _, tc := range []struct {
		name, spec string
	}{
		{"400 KB of [", strings.Repeat("[", 400<<10)},
		{"400 KB of {a: ", "tables: " + strings.Repeat("{a: ", 100<<10)},
		{"80 KB of nested mappings", nestedMap(400)},
		{"80 KB of nested sequences", strings.Repeat("- ", 40<<10) + "x\n"},
		{"a spec of 2 MiB", "app_id: x\n# " + strings.Repeat("x", 2<<20) + "\n"},
	} {
		t.Run(tc.name, func(t *testing.T) {
			var before, after runtime.MemStats
			runtime.ReadMemStats(&before)
			start := time.Now()
			_, err := ParseSpec("kaudit.yaml", []byte(tc.spec))
			took := time.Since(start)
			runtime.ReadMemStats(&after)
			var se *SpecError
			if !errors.As(err, &se) {
				t.Fatalf("ParseSpec: %v, want a *SpecError", err)
			}
			if !strings.Contains(se.Msg, "nests more than") && !strings.Contains(se.Msg, "a spec is at most") {
				t.Fatalf("ParseSpec: %v, want the bound named", err)
			}
			if alloc := (after.TotalAlloc - before.TotalAlloc) >> 20; took > time.Second || alloc > 64 {
				t.Fatalf("took %v and %d MiB", took, alloc)
			}
		})
	}
	good, err := os.ReadFile(filepath.Join("..", "..", "testdata", "incidents", "dropped.kaudit.yaml"))
	if err != nil {
		t.Fatal(err)
	}
	if d, _ := yamlDepth(good, MaxSpecDepth); d > 8 {
		t.Errorf("a real spec nests %d levels by yamlDepth", d)
	}
	t.Run("byte order mark", func(t *testing.T) {
		_, plain := ParseSpec("kaudit.yaml", good)
		_, bom := ParseSpec("kaudit.yaml", append([]byte("\xEF\xBB\xBF"), good...))
		if (plain == nil) != (bom == nil) || (bom != nil && strings.Contains(bom.Error(), "\ufeff")) {
			t.Fatalf("with a BOM: %v; without: %v", bom, plain)
		}
	})
}

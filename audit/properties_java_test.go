package audit

import (
	"fmt"
	"os"
	"os/exec"
	"path/filepath"
	"slices"
	"strings"
	"testing"
)

// javaCases are inputs on which ParseProperties must read what
// java.util.Properties.load reads.
var javaCases = []string{
	"", "a=b", "a b", "a:b", "a\tb", "a\fb", "# c\n! d\n", "k=v\\\n  w", `k=\u00e9`, "a\\", "\\", "k=v\\",
	"sasl.jaas.config=x required username=\"u\" password=\"p\";\r\nb=2\rc",
	"  =x", "\\ key\\ = \\ v", "a=\\t\\n\\r\\f\\\\", "a==b", `a\=b\:c\ d=e`, `k=tab\there\q`,
	"k=one, \\\n    two, \\\n\tthree\n", "a=x\\\\\nb=y", "# c \\\nk=v", "a=1\r\nb=2\rc=3", "a=1\na=2",
	"a=b#c", "a = ${b}", "k=\\u0041\\u00", "k=\\uZZZZ", "key with\\\n  continuation=v", "a=b\\\r\n  c",
	"a=b\\\n\\\n", "=", ":", "  \\\n", "!x\\\ny=z", "k=é", "ключ=значение", "a=  trailing  ", "a\\\n=b",
	"a=\\\n# not a comment", "\ufeffa=b", "a=\x00b", "k\\u003d=v",
}

// TestPropertiesLikeJava reads javaCases with Java's own Properties.load
// (through a Reader, UTF-8; Kafka's loadProps reads ISO-8859-1 bytes, so a
// non-ASCII value differs there anyway) and requires the same map, or an
// error where Java throws. Skipped where java is not installed.
func TestPropertiesLikeJava(t *testing.T) {
	java, err := exec.LookPath("java")
	if err != nil && os.Getenv("KAUDIT_REQUIRE_TOOLS") != "" {
		t.Fatal("java is not installed (KAUDIT_REQUIRE_TOOLS is set, as CI sets it)")
	}
	if err != nil {
		t.Skip("java is not installed")
	}
	if testing.Short() {
		t.Skip("starts a JVM")
	}
	dir := t.TempDir()
	var files []string
	for i, c := range javaCases {
		p := filepath.Join(dir, fmt.Sprintf("%02d.properties", i))
		if err := os.WriteFile(p, []byte(c), 0o600); err != nil {
			t.Fatal(err)
		}
		files = append(files, p)
	}
	out, err := exec.Command(java, append([]string{"testdata/Props.java"}, files...)...).Output()
	if err != nil {
		t.Fatalf("java: %v", err)
	}
	want := strings.Split(strings.TrimSuffix(string(out), "\n"), "\n")
	if len(want) != len(javaCases) {
		t.Fatalf("java printed %d lines for %d cases", len(want), len(javaCases))
	}
	t.Logf("%d inputs read as Java reads them", len(javaCases))
	for i, c := range javaCases {
		got := "ERROR"
		if m, err := ParseProperties(strings.NewReader(c)); err == nil {
			got = javaText(m)
		}
		if got != want[i] {
			t.Errorf("%q: kaudit reads %s, java %s", c, got, want[i])
		}
	}
}

// javaText prints a map as testdata/Props.java does.
func javaText(m map[string]string) string {
	esc := func(s string) string {
		var b strings.Builder
		for _, c := range s {
			if c > 0xffff {
				hi, lo := 0xd800+((c-0x10000)>>10), 0xdc00+((c-0x10000)&0x3ff)
				fmt.Fprintf(&b, "\\u%04x\\u%04x", hi, lo)
				continue
			}
			switch {
			case c == '\\':
				b.WriteString(`\\`)
			case c < 0x20 || c > 0x7e:
				fmt.Fprintf(&b, "\\u%04x", c)
			default:
				b.WriteRune(c)
			}
		}
		return b.String()
	}
	keys := slices.Sorted(func(yield func(string) bool) {
		for k := range m {
			if !yield(k) {
				return
			}
		}
	})
	var b strings.Builder
	for _, k := range keys {
		b.WriteString(esc(k) + "=" + esc(m[k]) + ";")
	}
	return b.String()
}

package spec

import (
	"fmt"
	"testing"
)

// TestSplitJava pins regexSplit to what Java 17's String#split printed for
// the same inputs (a throwaway Java program; the cases are its output).
func TestSplitJava(t *testing.T) {
	for _, tt := range []struct {
		s, re, want string
	}{
		{"a b c", `\W+`, "[a b c]"},
		{"   ", `\W+`, "[]"},
		{"", `\W+`, "[]"}, // Java: one empty string
		{" a b ", `\W+`, "[ a b]"},
		{"a,b,,", ",", "[a b]"},
		{",a", ",", "[ a]"},
		{"Hello, World!", `\W+`, "[Hello World]"},
		{"abc", "", "[a b c]"},
		{"a  b", `\s+`, "[a b]"},
		{"x", "x", "[]"},
	} {
		rx, err := splitRegex(tt.re)
		if err != nil {
			t.Fatal(err)
		}
		got := splitJava(tt.s, rx)
		if tt.s == "" {
			if len(got) != 1 || got[0] != "" {
				t.Errorf("split(%q, %q) = %q, want one empty string", tt.s, tt.re, got)
			}
			continue
		}
		if g := fmt.Sprint(got); g != tt.want {
			t.Errorf("split(%q, %q) = %s, want %s", tt.s, tt.re, g, tt.want)
		}
	}
}

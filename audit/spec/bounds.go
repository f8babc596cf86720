package spec

import (
	"bytes"
	"fmt"

	"github.com/kaudit/kaudit/internal/input"
)

// Bounds on a spec, read whole before parsing: a spec is a page of YAML;
// far larger input, or nesting far deeper than a spec uses, is refused
// before the parser runs (its time and memory can grow much faster than
// its input).
const (
	MaxSpecBytes = 1 << 20
	MaxSpecDepth = 64
)

// utf8BOM is the byte order mark some editors write at a file's start.
var utf8BOM = []byte{0xEF, 0xBB, 0xBF}

// trimBOM drops a UTF-8 byte order mark.
func trimBOM(b []byte) []byte { return bytes.TrimPrefix(b, utf8BOM) }

// yamlDepth estimates how deep the YAML in b nests: block mappings and
// sequences by indentation and "- " entries, flow collections by their
// brackets, outside quotes and comments. It stops counting once past
// limit, so it runs in one pass whatever the input.
func yamlDepth(b []byte, limit int) (depth, line int) {
	var indents []int
	flow := 0
	for ln, l := range bytes.Split(b, []byte("\n")) {
		l = bytes.TrimRight(l, "\r")
		indent := 0
		for indent < len(l) && l[indent] == ' ' {
			indent++
		}
		rest := l[indent:]
		if len(rest) == 0 || rest[0] == '#' {
			continue
		}
		if flow == 0 {
			for len(indents) > 0 && indents[len(indents)-1] >= indent {
				indents = indents[:len(indents)-1]
			}
			indents = append(indents, indent)
		}
		dashes := 0
		for len(rest) >= 2 && rest[0] == '-' && (rest[1] == ' ' || rest[1] == '\t') {
			dashes++
			rest = bytes.TrimLeft(rest[1:], " \t")
		}
		if len(rest) == 1 && rest[0] == '-' {
			dashes++
		}
		var quote byte
		for i := 0; i < len(rest); i++ {
			c := rest[i]
			switch {
			case quote != 0:
				if c == quote {
					quote = 0
				}
			case c == '"' || c == '\'':
				if i == 0 || rest[i-1] == ' ' || rest[i-1] == '[' || rest[i-1] == '{' || rest[i-1] == ',' || rest[i-1] == ':' {
					quote = c
				}
			case c == '#' && (i == 0 || rest[i-1] == ' '):
				i = len(rest)
			case c == '[' || c == '{':
				flow++
			case c == ']' || c == '}':
				flow = max(flow-1, 0)
			}
			if d := len(indents) + dashes + flow; d > depth {
				depth, line = d, ln+1
			}
		}
		if d := len(indents) + dashes + flow; d > depth {
			depth, line = d, ln+1
		}
		if depth > limit {
			return depth, line
		}
	}
	return depth, line
}

// checkSpecBounds refuses a spec too large or too deeply nested to be one.
func checkSpecBounds(name string, data []byte) error {
	if len(data) > MaxSpecBytes {
		return &SpecError{File: name, Msg: fmt.Sprintf("%d bytes: a spec is at most %d", len(data), MaxSpecBytes)}
	}
	if d, line := yamlDepth(data, MaxSpecDepth); d > MaxSpecDepth {
		return &SpecError{File: name, Line: line, Msg: fmt.Sprintf("the YAML nests more than %d levels deep: a spec needs a few", MaxSpecDepth)}
	}
	return nil
}

// readBounded reads a file named on the command line whole, bounded.
func readBounded(path string, limit int64) ([]byte, error) { return input.Read(path, limit) }

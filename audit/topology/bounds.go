package topology

import (
	"fmt"

	"github.com/kaudit/kaudit/internal/input"
)

// MaxTopologyBytes bounds a describe() text, read whole before parsing: one
// is a few hundred lines, and a parser's time and memory can grow much
// faster than its input.
const MaxTopologyBytes = 16 << 20

// utf8BOM is the byte order mark some editors write at a file's start.
var utf8BOM = []byte{0xEF, 0xBB, 0xBF}

// ReadFile reads and parses a describe() text file; a parse error names
// the file and line.
func ReadFile(path string) (*Topology, error) {
	f, err := input.Open(path, MaxTopologyBytes)
	if err != nil {
		return nil, fmt.Errorf("read topology: %w", err)
	}
	defer f.Close()
	t, err := Parse(f)
	if err != nil {
		return nil, fmt.Errorf("parse topology %s: %w", path, err)
	}
	return t, nil
}

// Package input opens the files kaudit is given by name (a topology, a
// spec, client properties, a report) with bounds: a device or a pipe could
// never end, and a file larger than its kind may hold is refused.
package input

import (
	"fmt"
	"io"
	"os"

	"github.com/kaudit/kaudit/audit/segment"
)

// Open opens path after checking, on the opened file, that it is a
// regular file of at most limit bytes (a symlink to /dev/zero is not).
func Open(path string, limit int64) (*os.File, error) {
	f, err := os.Open(path)
	if err != nil {
		return nil, err
	}
	info, err := f.Stat()
	if err != nil {
		f.Close()
		return nil, err
	}
	switch {
	case !info.Mode().IsRegular():
		f.Close()
		return nil, fmt.Errorf("%s is not a regular file but %s", path, segment.KindOf(info.Mode()))
	case info.Size() > limit:
		f.Close()
		return nil, fmt.Errorf("%s: %d bytes, more than the %d it may hold", path, info.Size(), limit)
	}
	return f, nil
}

// Read reads path whole, as Open bounds it.
func Read(path string, limit int64) ([]byte, error) {
	f, err := Open(path, limit)
	if err != nil {
		return nil, err
	}
	defer f.Close()
	return io.ReadAll(io.LimitReader(f, limit))
}

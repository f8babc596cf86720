// Package input opens the files kaudit is given by name (a topology, a
// spec, client properties, a report) with bounds: a device or a pipe could
// never end, and a file larger than its kind may hold is refused.
package input

import (
	"fmt"
	"io"
	"io/fs"
	"os"
	"syscall"
)

// Open opens path after checking, on the opened file, that it is a
// regular file of at most limit bytes (a symlink to /dev/zero is not).
// The open itself never blocks: a named pipe is refused, not waited on.
func Open(path string, limit int64) (*os.File, error) {
	f, err := OpenNonblock(path)
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
		return nil, fmt.Errorf("%s is not a regular file but %s", path, KindOf(info.Mode()))
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

// OpenNonblock opens path for reading with O_NONBLOCK, so that opening a
// named pipe or a device returns at once (its kind is then checked on the
// opened file), and clears the flag again: reads of a regular file never
// block anyway. A blocked open is where no cancelled context reaches.
func OpenNonblock(path string) (*os.File, error) {
	f, err := os.OpenFile(path, os.O_RDONLY|syscall.O_NONBLOCK, 0)
	if err != nil {
		return nil, err
	}
	if err := syscall.SetNonblock(int(f.Fd()), false); err != nil {
		f.Close()
		return nil, err
	}
	return f, nil
}

// MaxClientFileBytes bounds a client setting's file (a TLS store, a
// certificate, a key, a JAAS or token file).
const MaxClientFileBytes = 16 << 20

// KindOf names what a non-regular file is, for error messages.
func KindOf(m fs.FileMode) string {
	switch {
	case m&fs.ModeSymlink != 0:
		return "a symlink"
	case m.IsDir():
		return "a directory"
	case m&fs.ModeDevice != 0 || m&fs.ModeCharDevice != 0:
		return "a device"
	case m&fs.ModeNamedPipe != 0:
		return "a named pipe"
	case m&fs.ModeSocket != 0:
		return "a socket"
	}
	return "not a regular file"
}

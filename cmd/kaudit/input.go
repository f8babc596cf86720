package main

import (
	"fmt"
	"io"
	"os"

	"github.com/kaudit/kaudit/audit/segment"
)

// Bounds on the files kaudit reads whole from its flags.
const (
	maxConfigBytes = 1 << 20
	maxSchemaBytes = 16 << 20
	maxReportBytes = 4 << 30
)

// openInput opens a file given on the command line after checking, on the
// opened file, that it is a regular file of at most limit bytes: a device
// or a pipe could never end (a symlink to /dev/zero).
func openInput(path string, limit int64) (*os.File, error) {
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

// readInput reads a file given on the command line whole, as openInput
// bounds it.
func readInput(path string, limit int64) ([]byte, error) {
	f, err := openInput(path, limit)
	if err != nil {
		return nil, err
	}
	defer f.Close()
	return io.ReadAll(io.LimitReader(f, limit))
}

// checkWrites refuses to write any of outs inside one of the input dirs,
// or over one of the input files: kaudit never writes where it reads.
func checkWrites(outs, dirs, files []string) error {
	for _, out := range outs {
		o, err := realPath(out)
		if err != nil {
			return usagef("%s: %w", out, err)
		}
		for _, d := range dirs {
			if r, err := realPath(d); d != "" && err == nil && within(o, r) {
				return usagef("%s is inside the input %s, and kaudit never writes where it reads", out, d)
			}
		}
		for _, f := range files {
			if r, err := realPath(f); f != "" && err == nil && o == r {
				return usagef("%s is the input %s, and kaudit never writes where it reads", out, f)
			}
		}
	}
	return nil
}

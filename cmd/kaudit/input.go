package main

import (
	"os"

	"github.com/kaudit/kaudit/internal/input"
)

// Bounds on the files kaudit reads whole from its flags.
const (
	maxConfigBytes = 1 << 20
	maxSchemaBytes = 16 << 20
	maxReportBytes = 4 << 30
)

// openInput and readInput open a file given on the command line with
// bounds (see internal/input).
func openInput(path string, limit int64) (*os.File, error) { return input.Open(path, limit) }

func readInput(path string, limit int64) ([]byte, error) { return input.Read(path, limit) }

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

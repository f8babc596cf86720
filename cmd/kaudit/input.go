package main

import (
	"maps"
	"os"
	"slices"
	"strings"

	"github.com/kaudit/kaudit/audit"
	"github.com/kaudit/kaudit/internal/dest"
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

// checkWrites applies kaudit's one rule for every path it writes
// (internal/dest: never inside what it reads, never through a symlink,
// never over a file unless --force, never outside the folder named) to
// paths, against the inputs the command reads, before any work: a
// refusal is a usage error.
func checkWrites(paths []dest.Path, inputs []string) error {
	if err := dest.Check(paths, inputs); err != nil {
		return usageError{Err: err}
	}
	return nil
}

// sourceInputs are the files and folders a command's source flags make it
// read: the snapshot or log dirs, the client settings and the stores and
// files they name, the schemas.
func sourceInputs(o sourceOptions) []string {
	ins := append([]string{o.Snapshot, o.CommandConfig, o.SchemasDir}, o.LogDirs...)
	props := map[string]string{}
	if o.CommandConfig != "" {
		if f, err := openInput(o.CommandConfig, maxConfigBytes); err == nil {
			if p, err := audit.ParseProperties(f); err == nil { // else properties reports it
				props = p
			}
			f.Close()
		}
	}
	for _, kv := range o.CommandProps {
		_ = audit.ApplyProperty(props, kv)
	}
	for _, k := range slices.Sorted(maps.Keys(props)) {
		if strings.HasSuffix(k, ".location") && !strings.Contains(k, "url") {
			ins = append(ins, strings.TrimPrefix(props[k], "file://"))
		}
	}
	return ins
}

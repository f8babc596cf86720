package codec

import (
	"encoding/json"
	"fmt"
	"os"
	"path/filepath"
	"strconv"

	"github.com/kaudit/kaudit/audit"
)

// NewWithSchemas builds the codec cfg configures. Schemas a capture carries
// serve when cfg names no registry and no schema dir: they are staged in
// a temporary dir that the codec reads whole at once and that is removed
// before it returns. An error in cfg wraps audit.UsageError; schemas that
// cannot be used wrap audit.NotRunError (they are evidence).
func NewWithSchemas(cfg Config, schemas map[int32]audit.Schema) (*Codec, error) {
	staged := false
	if len(schemas) > 0 && cfg.RegistryURL == "" && cfg.SchemasDir == "" {
		dir, err := os.MkdirTemp("", "kaudit-schemas-")
		if err != nil {
			return nil, fmt.Errorf("stage snapshot schemas: %w", err)
		}
		defer os.RemoveAll(dir)
		m := make(map[string]audit.Schema, len(schemas))
		for id, s := range schemas {
			if id >= 0 { // no registry numbers a schema below 0
				m[strconv.Itoa(int(id))] = s
			}
		}
		data, err := json.Marshal(m)
		if err != nil {
			return nil, fmt.Errorf("stage snapshot schemas: %w", err)
		}
		if err := os.WriteFile(filepath.Join(dir, SchemasFile), data, 0o600); err != nil {
			return nil, fmt.Errorf("stage snapshot schemas: %w", err)
		}
		cfg.SchemasDir, staged = dir, true
		cfg.lenient = true
	}
	c, err := New(cfg)
	switch {
	case err != nil && staged:
		// the snapshot's own schemas are evidence: unusable ones leave
		// the run without it, they are no usage error
		return nil, audit.NotRunError{Err: fmt.Errorf("read the snapshot's schemas: %w", err)}
	case err != nil:
		return nil, audit.UsageError{Err: fmt.Errorf("configure decoding: %w", err)}
	}
	return c, nil
}

package segment

import (
	"errors"
	"fmt"

	"github.com/kaudit/kaudit/audit"
)

// ErrOldFormat is wrapped by errors about v0/v1 message sets (magic 0 or 1),
// which this reader does not decode; it also wraps audit.ErrNotSupported.
var ErrOldFormat = fmt.Errorf("old message format (magic 0/1): %w", audit.ErrNotSupported)

// errTruncated marks input that ends inside a batch or an entry.
var errTruncated = errors.New("truncated")

// FileError is an error decoding a file: it names the file and the byte
// offset of the batch or entry that could not be decoded.
type FileError struct {
	File string
	Pos  int64
	Err  error
}

func (e *FileError) Error() string {
	return fmt.Sprintf("read %s at byte %d: %v", e.File, e.Pos, e.Err)
}
func (e *FileError) Unwrap() error { return e.Err }

package segment

import (
	"bufio"
	"fmt"
	"os"

	"github.com/kaudit/kaudit/audit"
)

// SegmentName is the file name of the segment whose base offset is base, as
// Kafka names it: the offset in 20 digits, then ".log".
func SegmentName(base int64) string { return fmt.Sprintf("%020d.log", base) }

// Writer writes records to a .log file as v2 record batches: consecutive
// records with the same Batch.BaseOffset go into one batch, re-encoded with
// that batch's header (see AppendBatch).
type Writer struct {
	f       *os.File
	bw      *bufio.Writer
	path    string
	size    int64
	pending []audit.Record
	buf     []byte
}

// CreateSegment creates the .log file at path; it must not exist.
func CreateSegment(path string) (*Writer, error) {
	f, err := os.OpenFile(path, os.O_WRONLY|os.O_CREATE|os.O_EXCL, 0o644)
	if err != nil {
		return nil, fmt.Errorf("create segment: %w", err)
	}
	return &Writer{f: f, bw: bufio.NewWriterSize(f, 256<<10), path: path}, nil
}

// Write adds r, writing out the batch before it when r starts a new one.
func (w *Writer) Write(r audit.Record) error {
	if len(w.pending) > 0 && w.pending[0].Batch.BaseOffset != r.Batch.BaseOffset {
		if err := w.flush(); err != nil {
			return err
		}
	}
	w.pending = append(w.pending, r)
	return nil
}

// Size is the bytes written so far, the batch being gathered excluded.
func (w *Writer) Size() int64 { return w.size }

// Pending reports whether a batch is being gathered.
func (w *Writer) Pending() bool { return len(w.pending) > 0 }

// DropPending forgets the batch being gathered.
func (w *Writer) DropPending() { w.pending = w.pending[:0] }

// Flush writes out the batch being gathered.
func (w *Writer) Flush() error { return w.flush() }

func (w *Writer) flush() error {
	if len(w.pending) == 0 {
		return nil
	}
	var err error
	w.buf, err = AppendBatch(w.buf[:0], w.pending)
	if err != nil {
		return fmt.Errorf("write %s: %w", w.path, err)
	}
	if _, err := w.bw.Write(w.buf); err != nil {
		return fmt.Errorf("write segment: %w", err)
	}
	w.size += int64(len(w.buf))
	w.pending = w.pending[:0]
	return nil
}

// Close writes out the last batch, syncs and closes the file.
func (w *Writer) Close() error {
	err := w.flush()
	if err == nil {
		err = w.bw.Flush()
	}
	if err == nil {
		err = w.f.Sync()
	}
	if cerr := w.f.Close(); err == nil && cerr != nil {
		err = fmt.Errorf("close segment: %w", cerr)
	}
	return err
}

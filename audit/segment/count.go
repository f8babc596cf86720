package segment

import (
	"context"
	"encoding/binary"
	"fmt"
	"hash/crc32"
	"io"

	"github.com/kaudit/kaudit/audit"
)

// CheckSegment walks the batch frames of the segment file at path, checks
// each batch's CRC-32C, and sums their record counts (read from the
// headers, the records not decoded): a capture bundle's own check of its
// files, beside what its manifest says it copied. A frame that does not
// fit the file, that is not a v2 batch (a capture writes only those), or
// whose CRC fails is an error wrapping audit.ErrCorrupt (ErrTruncated for
// a file that ends inside one).
func CheckSegment(ctx context.Context, path string) (records int64, err error) {
	f, info, err := OpenRegular(path)
	if err != nil {
		return 0, err
	}
	defer f.Close()
	var (
		hdr [batchHeaderLen]byte
		buf = make([]byte, 64<<10)
		crc = crc32.New(castagnoli)
	)
	for pos, i := int64(0), 0; pos < info.Size(); i++ {
		if i%1024 == 0 && ctx.Err() != nil {
			return 0, ctx.Err()
		}
		if _, err := f.ReadAt(hdr[:], pos); err != nil {
			if err == io.EOF {
				err = ErrTruncated
			}
			return 0, &FileError{File: path, Pos: pos, Err: fmt.Errorf("read a batch header: %w", err)}
		}
		length := int64(int32(binary.BigEndian.Uint32(hdr[8:12])))
		count := int32(binary.BigEndian.Uint32(hdr[57:61]))
		switch {
		case int8(hdr[16]) != 2:
			return 0, &FileError{File: path, Pos: pos, Err: fmt.Errorf("magic byte %d, want 2: %w", int8(hdr[16]), audit.ErrCorrupt)}
		case length < minBatchLength || length > maxBatchLength:
			return 0, &FileError{File: path, Pos: pos, Err: fmt.Errorf("batch length %d out of range: %w", length, audit.ErrCorrupt)}
		case pos+logOverhead+length > info.Size():
			return 0, &FileError{File: path, Pos: pos, Err: fmt.Errorf("the batch needs %d bytes, %d are left: %w", logOverhead+length, info.Size()-pos, ErrTruncated)}
		case count < 0:
			return 0, &FileError{File: path, Pos: pos, Err: fmt.Errorf("record count %d: %w", count, audit.ErrCorrupt)}
		}
		// the CRC covers the batch from its attributes (byte 21) to its end
		crc.Reset()
		if _, err := io.CopyBuffer(crc, io.NewSectionReader(f, pos+21, logOverhead+length-21), buf); err != nil {
			return 0, &FileError{File: path, Pos: pos, Err: fmt.Errorf("read the batch: %w", err)}
		}
		if got, want := crc.Sum32(), binary.BigEndian.Uint32(hdr[17:21]); got != want {
			return 0, &FileError{File: path, Pos: pos, Err: fmt.Errorf("crc32c %08x, batch says %08x: %w", got, want, audit.ErrCorrupt)}
		}
		records += int64(count)
		pos += logOverhead + length
	}
	return records, nil
}

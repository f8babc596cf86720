package codec

import (
	"encoding/binary"
	"encoding/json"
	"fmt"
	"strconv"

	"github.com/kaudit/kaudit/audit"
)

// A windowed key as Kafka Streams 3.6 serializes it (WindowKeySchema):
// in a window store and its changelog (toStoreKeyBinary) the inner key's
// bytes, the window start as 8 bytes big-endian and a 4-byte sequence
// number (0 unless the store retains duplicates); on a topic written with
// WindowedSerdes.timeWindowedSerdeFrom (TimeWindowedSerializer, toBinary)
// the inner key's bytes and the start, with no sequence number.
const (
	windowStartSize = 8
	windowSeqSize   = 4
)

// SplitWindowedKey splits a windowed key: the inner key's bytes, the
// window start and, withSeq (a store's changelog), the sequence number.
// An error names what is wrong: a key too short for its suffix.
func SplitWindowedKey(b []byte, withSeq bool) (inner []byte, start int64, seq int32, err error) {
	n := windowStartSize
	if withSeq {
		n += windowSeqSize
	}
	if len(b) < n {
		return nil, 0, 0, fmt.Errorf("windowed key of %d bytes: want at least %d (key, 8-byte window start%s)", len(b), n, map[bool]string{true: ", 4-byte sequence number", false: ""}[withSeq])
	}
	k := len(b) - n
	start = int64(binary.BigEndian.Uint64(b[k : k+windowStartSize]))
	if withSeq {
		seq = int32(binary.BigEndian.Uint32(b[k+windowStartSize:]))
	}
	return b[:k:k], start, seq, nil
}

// AppendWindowedKey is SplitWindowedKey's inverse: inner, the start and,
// withSeq, the sequence number.
func AppendWindowedKey(dst, inner []byte, start int64, withSeq bool, seq int32) []byte {
	dst = append(dst, inner...)
	dst = binary.BigEndian.AppendUint64(dst, uint64(start))
	if withSeq {
		dst = binary.BigEndian.AppendUint32(dst, uint32(seq))
	}
	return dst
}

// WindowedKey is the canonical value of a windowed table key: the inner
// key and its window [start, end), as {"key": …, "start": …, "end": …}
// (Windowed.toString is [key@start/end]).
func WindowedKey(inner audit.Value, start, end int64) audit.Value {
	return map[string]any{"key": inner, "start": json.Number(strconv.FormatInt(start, 10)), "end": json.Number(strconv.FormatInt(end, 10))}
}

package reconcile

import (
	"bytes"
	"encoding/binary"
	"testing"
)

// FuzzDecodeChange: any bytes are read as a change record or refused,
// never a panic; what a ChangedSerializer writes reads back as written.
func FuzzDecodeChange(f *testing.F) {
	f.Add([]byte(`{"a":1}`), []byte(`{"a":2}`), uint8(2))
	f.Add([]byte(`x`), []byte(nil), uint8(1))
	f.Add([]byte(nil), []byte(`y`), uint8(0))
	f.Fuzz(func(t *testing.T, newV, oldV []byte, kind uint8) {
		_, _ = decodeChange(append(append([]byte(nil), newV...), oldV...)) // any bytes
		var b []byte
		switch kind % 3 {
		case 0:
			if len(oldV) == 0 {
				return
			}
			b, newV = append(append([]byte(nil), oldV...), 0), nil
		case 1:
			if len(newV) == 0 {
				return
			}
			b, oldV = append(append([]byte(nil), newV...), 1), nil
		case 2:
			if len(newV) == 0 || len(oldV) == 0 {
				return
			}
			b = binary.AppendUvarint(nil, uint64(len(newV))<<1)
			b = append(append(append(b, newV...), oldV...), 2)
		}
		ch, err := decodeChange(b)
		if err != nil {
			t.Fatalf("decodeChange(%x): %v", b, err)
		}
		if !bytes.Equal(ch.newV, newV) || !bytes.Equal(ch.oldV, oldV) {
			t.Fatalf("decodeChange(%x) = %q, %q; want %q, %q", b, ch.newV, ch.oldV, newV, oldV)
		}
	})
}

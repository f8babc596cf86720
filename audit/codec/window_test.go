package codec

import (
	"testing"
)

// TestSplitWindowedKey pins WindowKeySchema's layouts (Kafka Streams
// 3.6.2): toStoreKeyBinary = key + 8-byte big-endian start + 4-byte
// seqnum (the changelog), toBinary = key + start (TimeWindowedSerializer).
func TestSplitWindowedKey(t *testing.T) {
	store := []byte{'o', '-', '1', 0, 0, 0, 0, 0, 0, 0xea, 0x60, 0, 0, 0, 1}
	inner, start, seq, err := SplitWindowedKey(store, true)
	if err != nil || string(inner) != "o-1" || start != 60_000 || seq != 1 {
		t.Fatalf("store key: %q %d %d %v", inner, start, seq, err)
	}
	inner, start, _, err = SplitWindowedKey(store[:len(store)-4], false)
	if err != nil || string(inner) != "o-1" || start != 60_000 {
		t.Fatalf("serializer key: %q %d %v", inner, start, err)
	}
	if _, _, _, err := SplitWindowedKey(store[:11], true); err == nil {
		t.Fatal("11 bytes split as a store key")
	}
	if got := Text(WindowedKey("o-1", 60_000, 120_000)); got != `{"end":120000,"key":"o-1","start":60000}` {
		t.Fatalf("text %s", got)
	}
}

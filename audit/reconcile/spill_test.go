package reconcile

import (
	"bytes"
	"encoding/binary"
	"math/rand/v2"
	"os"
	"slices"
	"testing"

	"github.com/kaudit/kaudit/audit"
)

type spilledInput struct {
	key string
	x   inputRec
	raw []byte
}

type spilledState struct {
	key string
	p   int32
	e   clEntry
	txn int64
}

// TestSpillRoundTrip: what a bucket gives back is what was written to it,
// in the order written, every key in one bucket, and a value kept empty
// is not a value not kept; on disk and in memory.
func TestSpillRoundTrip(t *testing.T) {
	for _, c := range []struct {
		n    int
		disk bool
	}{{1, true}, {3, true}, {16, true}, {1, false}, {7, false}, {64, false}} {
		n := c.n
		s := newMemSpill(n, true)
		if c.disk {
			var err error
			// chunks smaller than some records: a record larger than its
			// bucket's chunk is a chunk of its own
			if s, err = newSpill(t.TempDir(), n, true, 64+n*16); err != nil {
				t.Fatal(err)
			}
		}
		rng := rand.New(rand.NewPCG(uint64(n), 1))
		wantCopies := make([][]copyEvent, n)
		wantInputs := make([][]spilledInput, n)
		wantStates := make([][]spilledState, n)
		for i := range 2000 {
			key := []string{`"o-1"`, `"o-2"`, `"é"`, `""`, `{"a":1}`}[rng.IntN(5)] + string(rune('a'+i%7))
			b := s.bucket(key)
			ev := copyEvent{partition: rng.Int32N(12), offset: rng.Int64(), ts: -rng.Int64(), fate: audit.Fate(rng.IntN(4)), applied: rng.IntN(2) == 1}
			binary.LittleEndian.PutUint64(ev.f[:], rng.Uint64())
			binary.LittleEndian.PutUint64(ev.f[8:], rng.Uint64())
			s.addCopy(key, ev)
			wantCopies[b] = append(wantCopies[b], ev)
			x := inputRec{offset: rng.Int64N(1 << 40), ts: rng.Int64(), part: rng.Int32N(12), r: -1}
			binary.LittleEndian.PutUint64(x.digest[:], rng.Uint64())
			binary.LittleEndian.PutUint64(x.digest[8:], rng.Uint64())
			var raw []byte
			switch i % 3 {
			case 1:
				raw = []byte{}
			case 2:
				raw = bytes.Repeat([]byte{byte(i)}, rng.IntN(300))
			}
			s.addInput(key, x, raw)
			wantInputs[b] = append(wantInputs[b], spilledInput{key, x, raw})
			st := spilledState{key: key, p: rng.Int32N(12), e: clEntry{offset: rng.Int64N(1 << 40), ts: rng.Int64(), null: i%5 == 0}, txn: rng.Int64N(1<<40) - 1}
			if !st.e.null {
				binary.LittleEndian.PutUint64(st.e.digest[:], rng.Uint64())
			}
			s.addState(key, st.p, st.e, st.txn)
			wantStates[b] = append(wantStates[b], st)
		}
		if err := s.finish(); err != nil {
			t.Fatal(err)
		}
		keyBucket := map[string]int{}
		for b := range s.buckets() {
			var copies []copyEvent
			if err := s.eachCopy(b, func(ev copyEvent) { copies = append(copies, ev) }); err != nil {
				t.Fatal(err)
			}
			if !slices.Equal(copies, wantCopies[b]) {
				t.Errorf("%d buckets: bucket %d gave back %d copies, not the %d written", n, b, len(copies), len(wantCopies[b]))
			}
			var inputs []spilledInput
			err := s.eachInput(b, func(key []byte, x inputRec, raw []byte) error {
				if prev, ok := keyBucket[string(key)]; ok && prev != b {
					t.Errorf("key %s in buckets %d and %d", key, prev, b)
				}
				keyBucket[string(key)] = b
				inputs = append(inputs, spilledInput{string(key), x, bytes.Clone(raw)})
				return nil
			})
			if err != nil {
				t.Fatal(err)
			}
			var states []spilledState
			err = s.eachState(b, func(key []byte, p int32, e clEntry, txn int64) {
				if prev, ok := keyBucket[string(key)]; ok && prev != b {
					t.Errorf("key %s in buckets %d and %d", key, prev, b)
				}
				states = append(states, spilledState{string(key), p, e, txn})
			})
			if err != nil {
				t.Fatal(err)
			}
			if !slices.Equal(states, wantStates[b]) {
				t.Errorf("%d buckets: bucket %d gave back %d states, not the %d written", n, b, len(states), len(wantStates[b]))
			}
			if len(inputs) != len(wantInputs[b]) {
				t.Fatalf("%d buckets: bucket %d gave back %d inputs, not the %d written", n, b, len(inputs), len(wantInputs[b]))
			}
			for i, got := range inputs {
				want := wantInputs[b][i]
				if got.key != want.key || got.x != want.x || !bytes.Equal(got.raw, want.raw) || (got.raw == nil) != (want.raw == nil) {
					t.Errorf("%d buckets: bucket %d input %d is %+v, want %+v", n, b, i, got, want)
				}
			}
		}
		dir := s.dir
		s.close()
		if _, err := os.Stat(dir); c.disk && !os.IsNotExist(err) {
			t.Errorf("the spill directory is still there after close: %v", err)
		}
	}
}

// FuzzSpillInputs: a damaged spill file (a full disk, a truncated write)
// is an error, never a panic or an endless read.
func FuzzSpillInputs(f *testing.F) {
	s := newMemSpill(1, false)
	s.addInput(`"o-1"`, inputRec{offset: 7, ts: 9, part: 2}, []byte("value"))
	s.addInput(`"o-2"`, inputRec{offset: 8}, nil)
	good := slices.Concat(s.inputs[0].chunks...)
	f.Add(good)
	f.Add(good[:len(good)-3])
	f.Add([]byte{0xff, 0xff, 0xff, 0xff, 0xff, 0xff, 0xff, 0xff, 0xff, 0x01})
	f.Fuzz(func(t *testing.T, data []byte) {
		n := 0
		_ = readInputs(bytes.NewReader(data), uint64(len(data)), func(key []byte, x inputRec, raw []byte) error {
			n++
			return nil
		})
		if n > len(data) {
			t.Errorf("%d inputs read from %d bytes", n, len(data))
		}
	})
}

// FuzzSpillStates: a damaged file of changelog states is an error, never
// a panic or an endless read.
func FuzzSpillStates(f *testing.F) {
	s := newMemSpill(1, true)
	s.addState(`"o-1"`, 3, clEntry{offset: 7, ts: 9}, 5)
	s.addState(`"o-2"`, 0, clEntry{offset: 8, null: true}, -1)
	f.Add(slices.Concat(s.states[0].chunks...))
	f.Add(slices.Concat(s.states[0].chunks...)[:20])
	f.Add([]byte{0xff, 0xff, 0xff, 0xff, 0xff, 0xff, 0xff, 0xff, 0xff, 0x01})
	f.Fuzz(func(t *testing.T, data []byte) {
		n := 0
		_ = readStates(bytes.NewReader(data), uint64(len(data)), func([]byte, int32, clEntry, int64) { n++ })
		if n > len(data) {
			t.Errorf("%d states read from %d bytes", n, len(data))
		}
	})
}

package infer

import (
	"context"
	"encoding/binary"
	"errors"
	"fmt"
	"iter"

	"github.com/kaudit/kaudit/audit"
	"github.com/kaudit/kaudit/audit/codec"
	"github.com/kaudit/kaudit/audit/ledger"
)

// Rec is one committed data record of a topic, with its decoded key and
// value (nil when null or not decoded).
type Rec struct {
	Partition int32
	Offset    int64
	RawKey    []byte
	RawValue  []byte
	Key       any
	Value     any
	Timestamp int64
	// Undecodable is set when the key or value could not be decoded.
	Undecodable bool
	// keyD and valD are DigestOf(Key) and DigestOf(Value) where hasKeyD
	// and hasValD say so: Read takes them as it decodes, so the checks,
	// which compare values many times, digest each record once (a Rec's
	// Key and Value are not to be changed after Read).
	keyD, valD       codec.Digest
	hasKeyD, hasValD bool
}

// key is r's key with its digest.
func (r *Rec) key() val {
	if r.hasKeyD {
		return val{r.Key, r.keyD}
	}
	return valOf(r.Key)
}

// value is r's value with its digest.
func (r *Rec) value() val {
	if r.hasValD {
		return val{r.Value, r.valD}
	}
	return valOf(r.Value)
}

// Topic is what was read of one topic: its committed records, per
// partition in offset order.
type Topic struct {
	Name string
	// Parts holds the partitions read, by partition number; a partition
	// not read is absent.
	Parts map[int32][]Rec
	// Whole says, per partition read, that it was read from offset 0 (no
	// record was purged or deleted before the log start).
	Whole map[int32]bool
	// Full says, per partition read, that it was read to its end (no
	// bound stopped the read).
	Full map[int32]bool
	// KeyMod is the key sample kept (ReadOptions.KeyMod; 0 or 1: all).
	KeyMod uint64
	// Partitions is the topic's partition count.
	Partitions int32
	// Undecodable counts the records that could not be decoded.
	Undecodable int
	// FirstError is the first decoding error, for the report.
	FirstError error
	// Committed is, per partition, the app's committed offset on the
	// topic (a source's), when the caller knows it: a record below it
	// was consumed.
	Committed map[int32]int64
}

// Records yields every record read, partition by partition.
func (t *Topic) Records() []Rec {
	var out []Rec
	for p := int32(0); p < t.Partitions; p++ {
		out = append(out, t.Parts[p]...)
	}
	return out
}

// each yields every record read as Records does, without copying them.
func (t *Topic) each() iter.Seq[*Rec] {
	return func(yield func(*Rec) bool) {
		for p := int32(0); p < t.Partitions; p++ {
			rs := t.Parts[p]
			for i := range rs {
				if !yield(&rs[i]) {
					return
				}
			}
		}
	}
}

// Count is the number of records read.
func (t *Topic) Count() int {
	n := 0
	for _, rs := range t.Parts {
		n += len(rs)
	}
	return n
}

// ReadOptions bound what Read takes of a topic.
type ReadOptions struct {
	// Partitions, when non-nil, are the only partitions read.
	Partitions []int32
	// PerPartition bounds the records kept per partition (0: all).
	PerPartition int
	// KeyMod, when above 1, keeps only the records whose decoded key's
	// digest is 0 modulo KeyMod (with a decoder): a sample of the keys
	// that is the same in every topic with the same keys.
	KeyMod uint64
	// undigested leaves the values' digests to the checks that compare
	// them: a source's, of which MatchCopies compares the few with a
	// copy's timestamp.
	undigested bool
}

// Read reads the committed data records of a topic (aborted and open
// transactions' data, markers and purged offsets left out) and decodes
// them with dec, or keeps them raw when dec is nil.
func Read(ctx context.Context, src audit.RecordSource, dec audit.Decoder, topic string, o ReadOptions) (*Topic, error) {
	n, err := src.Partitions(ctx, topic)
	if err != nil {
		return nil, fmt.Errorf("read topic %s: %w", topic, err)
	}
	t := &Topic{Name: topic, Parts: map[int32][]Rec{}, Whole: map[int32]bool{}, Full: map[int32]bool{}, Partitions: n, KeyMod: o.KeyMod}
	parts := o.Partitions
	if parts == nil {
		for p := range n {
			parts = append(parts, p)
		}
	}
	walked := src
	if sr, ok := src.(audit.SampleReader); ok && o.PerPartition > 0 {
		// the walk stops at the bound: a live source's full fetches would
		// fetch and decode records past it, the whole partition up to 8 MiB
		walked = sampled{src, sr}
	}
	for _, p := range parts {
		if p < 0 || p >= n {
			continue
		}
		tp := audit.TopicPartition{Topic: topic, Partition: p}
		offs, err := src.Offsets(ctx, tp)
		if err != nil {
			return nil, fmt.Errorf("read %s: %w", tp, err)
		}
		recs := make([]Rec, 0, expected(offs, o))
		var l *ledger.Ledger
		var kept slab
		full := true
	walk:
		for e, err := range ledger.Walk(ctx, walked, tp, ledger.Options{}, &l) {
			if err != nil {
				return nil, fmt.Errorf("read %s: %w", tp, err)
			}
			if e.Fate != audit.FateCommitted {
				continue
			}
			r := Rec{Partition: p, Offset: e.Record.Offset, RawKey: e.Record.Key, RawValue: e.Record.Value, Timestamp: e.Record.Timestamp}
			if dec != nil {
				if !t.decode(ctx, dec, &r, o.KeyMod, !o.undigested) {
					continue
				}
			}
			// a copy: the record's bytes may share a fetch buffer that a
			// kept slice would pin whole
			r.RawKey, r.RawValue = kept.copy(r.RawKey), kept.copy(r.RawValue)
			recs = append(recs, r)
			if o.PerPartition > 0 && len(recs) >= o.PerPartition {
				full = false
				break walk
			}
		}
		t.Parts[p] = recs
		t.Whole[p] = offs.LogStart == 0
		t.Full[p] = full
	}
	return t, nil
}

// sampled reads a source's records with RecordsSample.
type sampled struct {
	audit.RecordSource
	sr audit.SampleReader
}

func (s sampled) Records(ctx context.Context, tp audit.TopicPartition, from, to int64) iter.Seq2[audit.Record, error] {
	return s.sr.RecordsSample(ctx, tp, from, to)
}

// expected is how many records Read keeps of a partition, about: its
// offsets, a sample's share of them, bounded (compaction leaves offsets
// without records).
func expected(offs audit.PartitionOffsets, o ReadOptions) int64 {
	n := offs.HW - offs.LogStart
	if o.KeyMod > 1 {
		n /= int64(o.KeyMod)
		n += n / 8 // to spare: a sample of keys keeps only about its share
	}
	if o.PerPartition > 0 {
		n = min(n, int64(o.PerPartition))
	}
	return max(0, min(n, 1<<16))
}

// slab holds copies of the kept records' bytes, many to an allocation:
// they pin nothing but each other.
type slab struct{ buf []byte }

// copy is bytes.Clone(b) in the slab.
func (s *slab) copy(b []byte) []byte {
	switch {
	case b == nil:
		return nil
	case len(b) == 0:
		return []byte{}
	case cap(s.buf)-len(s.buf) < len(b):
		s.buf = make([]byte, 0, max(64<<10, len(b)))
	}
	s.buf = append(s.buf, b...)
	return s.buf[len(s.buf)-len(b) : len(s.buf) : len(s.buf)]
}

// digestDecoder decodes and digests a value in one pass (codec.Codec
// writes an Avro value's canonical JSON as it decodes it).
type digestDecoder interface {
	DecodeDigest(ctx context.Context, topic string, isKey bool, data []byte) (audit.Value, codec.Digest, error)
}

// decode decodes r's key, and its value when the key is in the sample;
// false when it is not. It digests the value when digest says so, and
// the key where the sample needs it.
func (t *Topic) decode(ctx context.Context, dec audit.Decoder, r *Rec, keyMod uint64, digest bool) bool {
	var kerr, verr error
	if r.RawKey != nil {
		r.Key, kerr = dec.Decode(ctx, t.Name, true, r.RawKey)
	}
	if keyMod > 1 {
		if r.Key == nil {
			return false
		}
		r.keyD, r.hasKeyD = codec.DigestOf(r.Key), true
		if binary.BigEndian.Uint64(r.keyD[:8])%keyMod != 0 {
			return false
		}
	}
	if r.RawValue != nil {
		dd, ok := dec.(digestDecoder)
		switch {
		case !digest:
			r.Value, verr = dec.Decode(ctx, t.Name, false, r.RawValue)
		case ok:
			r.Value, r.valD, verr = dd.DecodeDigest(ctx, t.Name, false, r.RawValue)
			r.hasValD = verr == nil
		default:
			if r.Value, verr = dec.Decode(ctx, t.Name, false, r.RawValue); verr == nil {
				r.valD, r.hasValD = codec.DigestOf(r.Value), true
			}
		}
	}
	if kerr != nil || verr != nil {
		err := errors.Join(kerr, verr)
		r.Undecodable = true
		t.Undecodable++
		if t.FirstError == nil {
			t.FirstError = err
		}
	}
	return true
}

// Decode decodes every record's key and value with dec.
func (t *Topic) Decode(ctx context.Context, dec audit.Decoder) {
	t.Undecodable, t.FirstError = 0, nil
	for p, rs := range t.Parts {
		for i := range rs {
			r := &rs[i]
			r.Key, r.Value, r.Undecodable = nil, nil, false
			r.hasKeyD, r.hasValD = false, false
			t.decode(ctx, dec, r, 0, true)
		}
		t.Parts[p] = rs
	}
}

// val is a decoded value with its digest (none for nil): a value compared
// many times is digested once.
type val struct {
	v any
	d codec.Digest
}

func valOf(v any) val {
	if v == nil {
		return val{}
	}
	return val{v, codec.DigestOf(v)}
}

// same reports whether two decoded values are equal as canonical JSON.
func (a val) same(b val) bool {
	if a.v == nil || b.v == nil {
		return a.v == nil && b.v == nil
	}
	return a.d == b.d
}

// keyOf is a decoded key as a map key.
func keyOf(k any) string { return codec.Text(k) }

// Union is one topic holding the records of several (the sources merged
// into one stream): their partitions numbered one after another, each
// record's Partition renumbered alike. Nil topics are left out.
func Union(name string, ts ...*Topic) *Topic {
	u := &Topic{Name: name, Parts: map[int32][]Rec{}, Whole: map[int32]bool{}, Full: map[int32]bool{}}
	for _, t := range ts {
		if t == nil {
			continue
		}
		base := u.Partitions
		for p := int32(0); p < t.Partitions; p++ {
			if rs, ok := t.Parts[p]; ok {
				out := make([]Rec, len(rs))
				for i, r := range rs {
					r.Partition = base + p
					out[i] = r
				}
				u.Parts[base+p] = out
				u.Whole[base+p], u.Full[base+p] = t.Whole[p], t.Full[p]
			}
			if c, ok := t.Committed[p]; ok {
				if u.Committed == nil {
					u.Committed = map[int32]int64{}
				}
				u.Committed[base+p] = c
			}
		}
		u.Partitions += t.Partitions
		u.KeyMod = max(u.KeyMod, t.KeyMod)
		u.Undecodable += t.Undecodable
		if u.FirstError == nil {
			u.FirstError = t.FirstError
		}
	}
	return u
}

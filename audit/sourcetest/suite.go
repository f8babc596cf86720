package sourcetest

import (
	"bytes"
	"context"
	"encoding/binary"
	"errors"
	"fmt"
	"slices"
	"testing"

	"github.com/kaudit/kaudit/audit"
)

// Topic is the fixture's topic: its name holds a dot and dashes, as
// partition dir names must be split on the last dash only.
const Topic = "conf.orders-v1-repartition"

// Fixture offsets, per partition.
var (
	// Partition 0: committed and aborted transactions, non-transactional
	// batches; everything is stable.
	Offsets0 = audit.PartitionOffsets{LogStart: 0, LSO: 10, HW: 10}
	// Partition 1: a transaction is still open from offset 2.
	Offsets1 = audit.PartitionOffsets{LogStart: 0, LSO: 2, HW: 4}
)

const baseTime = 1_700_000_000_000

// Fixture returns the records the suite expects a source to hold: topic
// Topic with two partitions. Every record carries its full batch header;
// control records carry their raw key and value bytes and their Marker.
// Compression is none throughout and timestamps are CreateTime.
func Fixture() []audit.Record {
	var out []audit.Record
	add := func(p int32, b audit.Batch, recs ...audit.Record) {
		b.LastOffsetDelta = int32(len(recs) - 1)
		b.Compression = "none"
		b.MaxTimestamp = 0
		for i := range recs {
			b.MaxTimestamp = max(b.MaxTimestamp, recs[i].Timestamp)
		}
		for i := range recs {
			recs[i].Topic, recs[i].Partition, recs[i].Batch = Topic, p, b
			recs[i].Offset = b.BaseOffset + int64(i)
		}
		out = append(out, recs...)
	}
	data := func(ts int64, key, value string, hs ...audit.Header) audit.Record {
		r := audit.Record{Timestamp: baseTime + ts, Headers: hs}
		if key != "" {
			r.Key = []byte(key)
		}
		if value != "" {
			r.Value = []byte(value)
		}
		return r
	}
	marker := func(ts int64, t audit.MarkerType, coordEpoch int32) audit.Record {
		key := binary.BigEndian.AppendUint16(binary.BigEndian.AppendUint16(nil, 0), uint16(t))
		value := binary.BigEndian.AppendUint32(binary.BigEndian.AppendUint16(nil, 0), uint32(coordEpoch))
		return audit.Record{Timestamp: baseTime + ts, Key: key, Value: value, Marker: &audit.Marker{Type: t, CoordinatorEpoch: coordEpoch}}
	}
	idem := func(base, pid int64, epoch int16, seq int32) audit.Batch {
		return audit.Batch{BaseOffset: base, ProducerID: pid, ProducerEpoch: epoch, BaseSequence: seq}
	}
	txn := func(base, pid int64, epoch int16, seq int32) audit.Batch {
		b := idem(base, pid, epoch, seq)
		b.Transactional = true
		return b
	}
	ctl := func(base, pid int64, epoch int16) audit.Batch {
		b := idem(base, pid, epoch, -1)
		b.Transactional, b.Control = true, true
		return b
	}

	add(0, idem(0, 1000, 0, 0),
		data(0, "o-1", `{"orderId":"o-1","amount":10}`, audit.Header{Key: "trace", Value: []byte("a1")}),
		data(1, "", `{"orderId":null}`),
		data(-5, "o-2", ""))
	add(0, txn(3, 2000, 3, 0),
		data(10, "o-3", `{"orderId":"o-3"}`, audit.Header{Key: "h1", Value: nil}, audit.Header{Key: "h2", Value: []byte{}}),
		data(11, "o-4", `{"orderId":"o-4"}`))
	add(0, ctl(5, 2000, 3), marker(12, audit.MarkerCommit, 7))
	add(0, txn(6, 2001, 0, 0), data(20, "o-5", "lost"), data(21, "o-6", "lost too"))
	add(0, ctl(8, 2001, 0), marker(22, audit.MarkerAbort, 7))
	add(0, idem(9, -1, -1, -1), data(30, "o-7", `{"orderId":"o-7"}`))

	add(1, idem(0, 1001, 1, 5), data(40, "p-1", "v1"), data(41, "p-2", "v2"))
	add(1, txn(2, 3000, 0, 0), data(50, "p-3", "open"), data(51, "p-4", "open too"))
	return out
}

// Options relax RunSourceTestsWith for sources that cannot reproduce the
// fixture byte for byte.
type Options struct {
	// ProducedHeaders compares of each batch header only what a producer
	// controls (transactional and control flags, base offset, last offset
	// delta): a live cluster assigns producer ids, epochs, sequences,
	// leader epochs and timestamps itself. Record timestamps are then not
	// compared either.
	ProducedHeaders bool
}

// RunSourceTests checks a RecordSource against the contract of
// audit.RecordSource. open must return a source holding exactly recs (the
// records of Fixture), with their offsets, batch headers and markers.
func RunSourceTests(t *testing.T, open func(t *testing.T, recs []audit.Record) audit.RecordSource) {
	t.Helper()
	RunSourceTestsWith(t, Options{}, open)
}

// RunSourceTestsWith is RunSourceTests with options.
func RunSourceTestsWith(t *testing.T, opts Options, open func(t *testing.T, recs []audit.Record) audit.RecordSource) {
	t.Helper()
	fixture := Fixture()
	src := open(t, fixture)
	Diff := func(got, want []audit.Record) string {
		if opts.ProducedHeaders {
			got, want = produced(got), produced(want)
		}
		return Diff(got, want)
	}
	tp0 := audit.TopicPartition{Topic: Topic, Partition: 0}
	tp1 := audit.TopicPartition{Topic: Topic, Partition: 1}
	want := func(tp audit.TopicPartition, from, to int64) []audit.Record {
		var out []audit.Record
		for _, r := range fixture {
			if r.TP() == tp && r.Offset >= from && (to < 0 || r.Offset < to) {
				out = append(out, r)
			}
		}
		return out
	}

	t.Run("partitions", func(t *testing.T) {
		n, err := src.Partitions(t.Context(), Topic)
		if err != nil || n != 2 {
			t.Fatalf("Partitions(%s) = %d, %v; want 2", Topic, n, err)
		}
		if _, err := src.Partitions(t.Context(), "no-such-topic"); !errors.Is(err, audit.ErrTopicNotFound) {
			t.Fatalf("Partitions(no-such-topic) error = %v; want ErrTopicNotFound", err)
		}
	})

	t.Run("offsets", func(t *testing.T) {
		for _, tc := range []struct {
			tp   audit.TopicPartition
			want audit.PartitionOffsets
		}{{tp0, Offsets0}, {tp1, Offsets1}} {
			got, err := src.Offsets(t.Context(), tc.tp)
			if err != nil || got != tc.want {
				t.Errorf("Offsets(%s) = %+v, %v; want %+v", tc.tp, got, err, tc.want)
			}
		}
		if _, err := src.Offsets(t.Context(), audit.TopicPartition{Topic: Topic, Partition: 7}); !errors.Is(err, audit.ErrPartitionNotFound) {
			t.Errorf("Offsets(partition 7) error = %v; want ErrPartitionNotFound", err)
		}
	})

	t.Run("missing topic", func(t *testing.T) {
		recs, errs := collect(t.Context(), src, audit.TopicPartition{Topic: "no-such-topic"}, 0, -1, -1)
		if len(recs) != 0 || len(errs) != 1 || !errors.Is(errs[0], audit.ErrTopicNotFound) {
			t.Fatalf("Records(no-such-topic) = %d records, errors %v; want one error wrapping ErrTopicNotFound", len(recs), errs)
		}
	})

	t.Run("bounds", func(t *testing.T) {
		for _, tc := range []struct {
			name     string
			tp       audit.TopicPartition
			from, to int64
		}{
			{"all", tp0, 0, -1},
			{"all of partition 1", tp1, 0, -1},
			{"mid batch", tp0, 1, 4},
			{"batch boundaries", tp0, 3, 6},
			{"one control record", tp0, 5, 6},
			{"empty range", tp0, 4, 4},
			{"to beyond the end", tp0, 7, 1000},
			{"from beyond the end", tp0, 50, -1},
			{"open transaction", tp1, 1, -1},
		} {
			t.Run(tc.name, func(t *testing.T) {
				got, errs := collect(t.Context(), src, tc.tp, tc.from, tc.to, -1)
				if len(errs) != 0 {
					t.Fatalf("Records: %v", errs)
				}
				if d := Diff(got, want(tc.tp, tc.from, tc.to)); d != "" {
					t.Fatalf("Records(%s, %d, %d): %s", tc.tp, tc.from, tc.to, d)
				}
			})
		}
	})

	t.Run("break early", func(t *testing.T) {
		for _, n := range []int{1, 3, 4} {
			got, errs := collect(t.Context(), src, tp0, 0, -1, n)
			if len(errs) != 0 {
				t.Fatalf("Records: %v", errs)
			}
			if d := Diff(got, want(tp0, 0, -1)[:n]); d != "" {
				t.Fatalf("break after %d: %s", n, d)
			}
		}
	})

	t.Run("cancelled context", func(t *testing.T) {
		ctx, cancel := context.WithCancel(t.Context())
		cancel()
		n, errs, after := 0, 0, 0
		for _, err := range src.Records(ctx, tp0, 0, -1) {
			switch {
			case errs > 0:
				after++
			case err != nil:
				errs++
				if !errors.Is(err, context.Canceled) {
					t.Errorf("error %v does not wrap context.Canceled", err)
				}
			default:
				n++
			}
		}
		if errs != 1 || after != 0 {
			t.Fatalf("cancelled: %d records, %d errors, %d items after the error; want one final error", n, errs, after)
		}
	})

	t.Run("control records", func(t *testing.T) {
		got, errs := collect(t.Context(), src, tp0, 5, 9, -1)
		if len(errs) != 0 {
			t.Fatalf("Records: %v", errs)
		}
		var markers []string
		for _, r := range got {
			if r.IsControl() {
				if r.Marker == nil {
					t.Fatalf("control record at %d has no Marker", r.Offset)
				}
				if opts.ProducedHeaders {
					markers = append(markers, fmt.Sprintf("%d:%s", r.Offset, r.Marker.Type))
					continue
				}
				markers = append(markers, fmt.Sprintf("%d:%s:%d:%d", r.Offset, r.Marker.Type, r.Marker.CoordinatorEpoch, r.Batch.ProducerID))
			} else if r.Marker != nil {
				t.Errorf("data record at %d has a Marker", r.Offset)
			}
		}
		w := []string{"5:COMMIT:7:2000", "8:ABORT:7:2001"}
		if opts.ProducedHeaders {
			w = []string{"5:COMMIT", "8:ABORT"}
		}
		if !slices.Equal(markers, w) {
			t.Fatalf("markers = %v; want %v", markers, w)
		}
	})

	t.Run("batch headers", func(t *testing.T) {
		got, errs := collect(t.Context(), src, tp0, 0, -1, -1)
		if len(errs) != 0 {
			t.Fatalf("Records: %v", errs)
		}
		if opts.ProducedHeaders {
			got = produced(got)
		}
		var hs []audit.Batch
		for _, r := range got {
			if len(hs) == 0 || hs[len(hs)-1].BaseOffset != r.Batch.BaseOffset {
				hs = append(hs, r.Batch)
			}
		}
		wantRecs := want(tp0, 0, -1)
		if opts.ProducedHeaders {
			wantRecs = produced(wantRecs)
		}
		var wantHs []audit.Batch
		for _, r := range wantRecs {
			if len(wantHs) == 0 || wantHs[len(wantHs)-1].BaseOffset != r.Batch.BaseOffset {
				wantHs = append(wantHs, r.Batch)
			}
		}
		if !slices.Equal(hs, wantHs) {
			t.Fatalf("batch headers:\n got %+v\nwant %+v", hs, wantHs)
		}
	})
}

// produced keeps of each record's batch header what a producer controls.
func produced(rs []audit.Record) []audit.Record {
	out := make([]audit.Record, len(rs))
	for i, r := range rs {
		b := r.Batch
		r.Batch = audit.Batch{BaseOffset: b.BaseOffset, LastOffsetDelta: b.LastOffsetDelta, Transactional: b.Transactional, Control: b.Control}
		r.Timestamp = 0
		if r.Marker != nil {
			m := *r.Marker
			m.CoordinatorEpoch = 0
			r.Marker = &m
			r.Key, r.Value = nil, nil
		}
		out[i] = r
	}
	return out
}

// collect reads [from, to) of tp, stopping after limit records when limit
// ≥ 0. It fails the test when the iterator yields after an error.
func collect(ctx context.Context, src audit.RecordSource, tp audit.TopicPartition, from, to int64, limit int) ([]audit.Record, []error) {
	var (
		recs []audit.Record
		errs []error
	)
	for r, err := range src.Records(ctx, tp, from, to) {
		if err != nil {
			errs = append(errs, err)
			continue
		}
		if len(errs) > 0 {
			errs = append(errs, fmt.Errorf("record at offset %d yielded after an error", r.Offset))
		}
		recs = append(recs, r)
		if limit >= 0 && len(recs) >= limit {
			break
		}
	}
	return recs, errs
}

// Diff describes the first difference between two record lists, or returns
// "" when every field of every record is equal (nil and empty keys, values
// and header values differ: null is not empty).
func Diff(got, want []audit.Record) string {
	for i := range min(len(got), len(want)) {
		if d := diffRecord(&got[i], &want[i]); d != "" {
			return fmt.Sprintf("record %d (offset %d): %s", i, want[i].Offset, d)
		}
	}
	if len(got) != len(want) {
		return fmt.Sprintf("%d records, want %d (offsets %v, want %v)", len(got), len(want), offsets(got), offsets(want))
	}
	return ""
}

func offsets(rs []audit.Record) []int64 {
	out := make([]int64, len(rs))
	for i, r := range rs {
		out[i] = r.Offset
	}
	return out
}

func diffBytes(name string, a, b []byte) string {
	if (a == nil) != (b == nil) || !bytes.Equal(a, b) {
		return fmt.Sprintf("%s = %q (nil %t), want %q (nil %t)", name, a, a == nil, b, b == nil)
	}
	return ""
}

func diffRecord(a, b *audit.Record) string {
	switch {
	case a.Topic != b.Topic || a.Partition != b.Partition || a.Offset != b.Offset:
		return fmt.Sprintf("at %s@%d, want %s@%d", a.TP(), a.Offset, b.TP(), b.Offset)
	case a.Timestamp != b.Timestamp:
		return fmt.Sprintf("timestamp %d, want %d", a.Timestamp, b.Timestamp)
	case a.Batch != b.Batch:
		return fmt.Sprintf("batch %+v, want %+v", a.Batch, b.Batch)
	case (a.Marker == nil) != (b.Marker == nil) || (a.Marker != nil && *a.Marker != *b.Marker):
		return fmt.Sprintf("marker %v, want %v", a.Marker, b.Marker)
	case len(a.Headers) != len(b.Headers):
		return fmt.Sprintf("%d headers, want %d", len(a.Headers), len(b.Headers))
	}
	if d := diffBytes("key", a.Key, b.Key); d != "" {
		return d
	}
	if d := diffBytes("value", a.Value, b.Value); d != "" {
		return d
	}
	for i := range a.Headers {
		if a.Headers[i].Key != b.Headers[i].Key {
			return fmt.Sprintf("header %d key %q, want %q", i, a.Headers[i].Key, b.Headers[i].Key)
		}
		if d := diffBytes(fmt.Sprintf("header %q value", a.Headers[i].Key), a.Headers[i].Value, b.Headers[i].Value); d != "" {
			return d
		}
	}
	return ""
}

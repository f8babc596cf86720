package codec

import (
	"context"
	"math/big"
	"syscall"
	"testing"
	"time"
)

// benchSchema is a 10-field order record with a mix of types.
const benchSchema = `{"type":"record","name":"Order","namespace":"bench","fields":[
 {"name":"orderId","type":"string"},
 {"name":"customer","type":"string"},
 {"name":"qty","type":"int"},
 {"name":"amount","type":"double"},
 {"name":"paid","type":"boolean"},
 {"name":"status","type":{"type":"enum","name":"Status","symbols":["NEW","PAID","SHIPPED"]}},
 {"name":"note","type":["null","string"]},
 {"name":"createdAt","type":{"type":"long","logicalType":"timestamp-millis"}},
 {"name":"price","type":{"type":"bytes","logicalType":"decimal","precision":10,"scale":2}},
 {"name":"version","type":"long"}
]}`

func benchPayload(tb testing.TB) []byte {
	return encode(tb, 1, benchSchema, map[string]any{
		"orderId": "order-000123456", "customer": "customer-98765", "qty": 3, "amount": 129.99,
		"paid": true, "status": "PAID", "note": map[string]any{"string": "leave at the door"},
		"createdAt": time.UnixMilli(1764496800123), "price": big.NewRat(4333, 100), "version": int64(1234567),
	})
}

// BenchmarkDecodeDigest decodes a framed 10-field Avro record and digests
// it, as the reconciler does for every record. Run with
// go test ./audit/codec -run '^$' -bench DecodeDigest -cpu 1.
func BenchmarkDecodeDigest(b *testing.B) {
	benchRecords(b, func(c *Codec, ctx context.Context, data []byte) (Digest, error) {
		v, err := c.Decode(ctx, "orders", false, data)
		return DigestOf(v), err
	})
}

// BenchmarkDecodeDigestFused is BenchmarkDecodeDigest through
// DecodeDigest, which writes the canonical JSON while decoding.
func BenchmarkDecodeDigestFused(b *testing.B) {
	benchRecords(b, func(c *Codec, ctx context.Context, data []byte) (Digest, error) {
		_, d, err := c.DecodeDigest(ctx, "orders", false, data)
		return d, err
	})
}

// BenchmarkDigestBytes digests the record of BenchmarkDecodeDigest
// without building its value, as a caller that only compares records
// would.
func BenchmarkDigestBytes(b *testing.B) {
	benchRecords(b, func(c *Codec, ctx context.Context, data []byte) (Digest, error) {
		return c.DigestBytes(ctx, "orders", false, data)
	})
}

// benchRecords runs digest on the bench record b.N times and reports
// records per second of wall time and, since on a shared machine wall
// time undercounts, of the CPU time the process used.
func benchRecords(b *testing.B, digest func(c *Codec, ctx context.Context, data []byte) (Digest, error)) {
	benchRecordsOf(b, benchSchema, benchPayload(b), digest)
}

// benchRecordsOf is benchRecords on a payload of schema id 1.
func benchRecordsOf(b *testing.B, schema string, data []byte, digest func(c *Codec, ctx context.Context, data []byte) (Digest, error)) {
	c := offlineCodec(b, map[int]string{1: schema})
	ctx := context.Background()
	var sink Digest
	cpu0 := cpuTime()
	b.ReportAllocs()
	b.SetBytes(int64(len(data)))
	for b.Loop() {
		d, err := digest(c, ctx, data)
		if err != nil {
			b.Fatal(err)
		}
		sink = d
	}
	_ = sink
	b.ReportMetric(float64(b.N)/b.Elapsed().Seconds(), "records/s")
	if cpu := cpuTime() - cpu0; cpu > 0 {
		b.ReportMetric(float64(b.N)/cpu.Seconds(), "records/cpu-s")
	}
}

func TestBenchPayload(t *testing.T) {
	c := offlineCodec(t, map[int]string{1: benchSchema})
	want := `{"amount":129.99,"createdAt":"2025-11-30T10:00:00.123Z","customer":"customer-98765","note":"leave at the door","orderId":"order-000123456","paid":true,"price":"43.33","qty":3,"status":"PAID","version":1234567}`
	if got := Text(mustDecode(t, c, benchPayload(t))); got != want {
		t.Errorf("Text = %s\nwant   %s", got, want)
	}
}

func cpuTime() time.Duration {
	var ru syscall.Rusage
	if err := syscall.Getrusage(syscall.RUSAGE_SELF, &ru); err != nil {
		return 0
	}
	return time.Duration(ru.Utime.Nano() + ru.Stime.Nano())
}

// BenchmarkDecode and BenchmarkDigest split BenchmarkDecodeDigest.
func BenchmarkDecode(b *testing.B) {
	benchDecode(b, benchSchema, benchPayload(b))
}

func benchDecode(b *testing.B, schema string, data []byte) {
	c := offlineCodec(b, map[int]string{1: schema})
	ctx := context.Background()
	cpu0 := cpuTime()
	b.ReportAllocs()
	for b.Loop() {
		if _, err := c.Decode(ctx, "orders", false, data); err != nil {
			b.Fatal(err)
		}
	}
	b.ReportMetric(float64((cpuTime()-cpu0).Nanoseconds())/float64(b.N), "cpu-ns/op")
}

func BenchmarkDigest(b *testing.B) {
	c := offlineCodec(b, map[int]string{1: benchSchema})
	v := mustDecode(b, c, benchPayload(b))
	var sink Digest
	cpu0 := cpuTime()
	b.ReportAllocs()
	for b.Loop() {
		sink = DigestOf(v)
	}
	_ = sink
	b.ReportMetric(float64((cpuTime()-cpu0).Nanoseconds())/float64(b.N), "cpu-ns/op")
}

// BenchmarkDigestField digests the bench record and builds its orderId,
// as a table keyed by value.orderId reads a source record.
func BenchmarkDigestField(b *testing.B) {
	benchRecords(b, func(c *Codec, ctx context.Context, data []byte) (Digest, error) {
		_, d, _, err := c.DigestField(ctx, "orders", data, "orderId")
		return d, err
	})
}

// eventSchema and eventPayload are the records of the project's end-to-end
// benchmark: five strings, one of them a long note, and a double.
const eventSchema = `{"type":"record","name":"Order","namespace":"bench","fields":[
 {"name":"orderId","type":"string"},
 {"name":"amount","type":"double"},
 {"name":"customer","type":"string"},
 {"name":"currency","type":"string"},
 {"name":"status","type":"string"},
 {"name":"note","type":"string"}
]}`

func eventPayload(tb testing.TB) []byte {
	return encode(tb, 1, eventSchema, map[string]any{
		"orderId": "order-728518", "amount": 3497.26, "customer": "cust-265297", "currency": "USD", "status": "CANCELLED",
		"note": "orders event 2: tetur adipiscing elit, sed do eiusmod tempor incididunt ut labore et dolore magna aliqua. Ut enim ad minim veniam, quis nostrud ex",
	})
}

// BenchmarkDigestBytesEvent, BenchmarkDigestFieldEvent and
// BenchmarkDecodeEvent are DigestBytes, DigestField and Decode on the
// end-to-end benchmark's records.
func BenchmarkDigestBytesEvent(b *testing.B) {
	benchRecordsOf(b, eventSchema, eventPayload(b), func(c *Codec, ctx context.Context, data []byte) (Digest, error) {
		return c.DigestBytes(ctx, "orders", false, data)
	})
}

func BenchmarkDigestFieldEvent(b *testing.B) {
	benchRecordsOf(b, eventSchema, eventPayload(b), func(c *Codec, ctx context.Context, data []byte) (Digest, error) {
		_, d, _, err := c.DigestField(ctx, "orders", data, "orderId")
		return d, err
	})
}

func BenchmarkDecodeEvent(b *testing.B) {
	benchDecode(b, eventSchema, eventPayload(b))
}

// BenchmarkDecodeFields decodes the two fields of the end-to-end
// benchmark's record that its join reads; BenchmarkDecodeEvent decodes
// them all.
func BenchmarkDecodeFields(b *testing.B) {
	c := offlineCodec(b, map[int]string{1: eventSchema})
	data := eventPayload(b)
	ctx := context.Background()
	fields := []string{"orderId", "amount"}
	cpu0 := cpuTime()
	b.ReportAllocs()
	for b.Loop() {
		if _, ok, err := c.DecodeFields(ctx, "orders", data, fields); !ok || err != nil {
			b.Fatal(ok, err)
		}
	}
	b.ReportMetric(float64((cpuTime()-cpu0).Nanoseconds())/float64(b.N), "cpu-ns/op")
}

// BenchmarkDecodeKey decodes a string key, as the reconciler does for
// every record.
func BenchmarkDecodeKey(b *testing.B) {
	c := offlineCodec(b, map[int]string{1: eventSchema})
	key := []byte("order-728518")
	ctx := context.Background()
	cpu0 := cpuTime()
	b.ReportAllocs()
	for b.Loop() {
		if _, err := c.Decode(ctx, "orders", true, key); err != nil {
			b.Fatal(err)
		}
	}
	b.ReportMetric(float64((cpuTime()-cpu0).Nanoseconds())/float64(b.N), "cpu-ns/op")
}

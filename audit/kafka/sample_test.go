package kafka

import (
	"fmt"
	"math/rand/v2"
	"slices"
	"sync"
	"testing"

	"github.com/twmb/franz-go/pkg/kmsg"

	"github.com/kaudit/kaudit/audit"
)

// fetchSizes records the PartitionMaxBytes of every fetch c answers.
func fetchSizes(c interface {
	ControlKey(int16, func(kmsg.Request) (kmsg.Response, error, bool))
	KeepControl()
}) func() []int32 {
	var mu sync.Mutex
	var sizes []int32
	c.ControlKey(int16(kmsg.Fetch), func(req kmsg.Request) (kmsg.Response, error, bool) {
		c.KeepControl()
		mu.Lock()
		defer mu.Unlock()
		for _, rt := range req.(*kmsg.FetchRequest).Topics {
			for _, rp := range rt.Partitions {
				sizes = append(sizes, rp.PartitionMaxBytes)
			}
		}
		return nil, nil, false
	})
	return func() []int32 { mu.Lock(); defer mu.Unlock(); return slices.Clone(sizes) }
}

// A sample's read that stops after its first records fetches about them
// (sampleFirstBytes), where Records' first fetch asks for the whole
// partition (partitionMaxBytes), every batch of which is decompressed and
// decoded before the first record is yielded; read to the end, it yields
// what Records yields, in fetches growing to partitionMaxBytes.
func TestRecordsSampleFetchesLittle(t *testing.T) {
	c := newCluster(t)
	cl := newClient(t, c)
	createTopic(t, cl, "t", 1, nil)
	const n = 300 // batches of one record, about 300 KB however compressed
	rng := rand.New(rand.NewPCG(1, 2))
	for i := range n {
		value := make([]byte, 1000)
		for j := range value {
			value[j] = byte(rng.Uint32())
		}
		produce(t, cl, "t", 0, fmt.Sprint("k", i), string(value))
	}
	s := openSource(t, c, nil)
	sizes := fetchSizes(c)
	tp := audit.TopicPartition{Topic: "t", Partition: 0}

	first := func(seq func(func(audit.Record, error) bool), k int) []int64 {
		var offs []int64
		for r, err := range seq {
			if err != nil {
				t.Fatal(err)
			}
			if offs = append(offs, r.Offset); len(offs) == k {
				break
			}
		}
		return offs
	}
	got := first(s.RecordsSample(t.Context(), tp, 0, -1), 10)
	if want := []int64{0, 1, 2, 3, 4, 5, 6, 7, 8, 9}; !slices.Equal(got, want) {
		t.Fatalf("sample offsets %v, want %v", got, want)
	}
	if got, want := sizes(), []int32{sampleFirstBytes}; !slices.Equal(got, want) {
		t.Fatalf("a sample of 10 records fetched %v bytes, want %v", got, want)
	}

	all := offsetsOf(collect(t, s.Records(t.Context(), tp, 0, -1)))
	before := len(sizes())
	sample := offsetsOf(collect(t, s.RecordsSample(t.Context(), tp, 0, -1)))
	if len(all) != n || !slices.Equal(sample, all) {
		t.Fatalf("read to its end, the sample yields %d records, Records %d (want %d, the same)", len(sample), len(all), n)
	}
	grown := sizes()[before:]
	if len(grown) < 2 || grown[0] != sampleFirstBytes || grown[1] != 4*sampleFirstBytes {
		t.Fatalf("a whole sample read fetched %v bytes, want %d, then 4 times more", grown, sampleFirstBytes)
	}
}

package kafka

import (
	"fmt"
	"slices"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/twmb/franz-go/pkg/kfake"
	"github.com/twmb/franz-go/pkg/kgo"
	"github.com/twmb/franz-go/pkg/kmsg"

	"github.com/kaudit/kaudit/audit"
	"github.com/kaudit/kaudit/audit/ledger"
	"github.com/kaudit/kaudit/audit/sourcetest"
)

// fetchLog records the Fetch requests a kfake cluster serves.
type fetchLog struct {
	mu      sync.Mutex
	fetches []fetchSeen
}

type fetchSeen struct {
	offset    int64
	committed bool
	wait      int32 // ms
}

// watch starts recording c's fetches in l.
func (l *fetchLog) watch(c *kfake.Cluster) {
	c.ControlKey(int16(kmsg.Fetch), func(kreq kmsg.Request) (kmsg.Response, error, bool) {
		c.KeepControl()
		req := kreq.(*kmsg.FetchRequest)
		l.mu.Lock()
		defer l.mu.Unlock()
		l.fetches = append(l.fetches, fetchSeen{req.Topics[0].Partitions[0].FetchOffset, req.IsolationLevel == 1, req.MaxWaitMillis})
		return nil, nil, false
	})
}

func (l *fetchLog) seen() []fetchSeen {
	l.mu.Lock()
	defer l.mu.Unlock()
	return append([]fetchSeen(nil), l.fetches...)
}

func (l *fetchLog) reset() {
	l.mu.Lock()
	defer l.mu.Unlock()
	l.fetches = nil
}

// TestCrossCheckReadsOnce checks that the ledger's cross-check against a
// live cluster costs no second read: the indexed read fetches read_committed
// below the LSO and read_uncommitted from it, and never fetches an offset
// range twice.
func TestCrossCheckReadsOnce(t *testing.T) {
	smallFetches(t) // several fetches per read
	c, s, sc := newScenarioCluster(t)
	var log fetchLog
	log.watch(c)
	tp := audit.TopicPartition{Topic: sc.topic}

	for _, cross := range []bool{false, true} {
		t.Run(fmt.Sprint("cross-check ", cross), func(t *testing.T) {
			log.reset()
			l, err := ledger.Build(t.Context(), s, tp, ledger.Options{CrossCheck: cross})
			if err != nil {
				t.Fatal(err)
			}
			if len(l.Findings) != 0 {
				t.Errorf("findings %+v, want none", l.Findings)
			}
			fs := log.seen()
			var committed, uncommitted int
			for i, f := range fs {
				if i > 0 && f.offset <= fs[i-1].offset {
					t.Errorf("fetch %d at offset %d after one at %d: a range is read twice (%+v)", i, f.offset, fs[i-1].offset, fs)
				}
				switch {
				case f.committed && (!cross || f.offset >= sc.openFrom):
					t.Errorf("read_committed fetch at %d (LSO %d, cross-check %v)", f.offset, sc.openFrom, cross)
				case f.committed:
					committed++
				case cross && f.offset < sc.openFrom:
					t.Errorf("read_uncommitted fetch at %d below the LSO %d", f.offset, sc.openFrom)
				default:
					uncommitted++
				}
			}
			if cross && (committed == 0 || uncommitted == 0) {
				t.Errorf("%d read_committed and %d read_uncommitted fetches, want both below and above the LSO %d: %+v", committed, uncommitted, sc.openFrom, fs)
			}
		})
	}
}

// TestCrossCheckBrokerView serves the fixture with aborted-transaction
// indexes that disagree with its markers, as a broker whose index is wrong
// would, and checks that the ledger's cross-check over the live source
// names the disagreement, finding what the second read through franz-go's
// read_committed filtering finds.
func TestCrossCheckBrokerView(t *testing.T) {
	// partition 0: plain 0-2, producer 2000 committed 3-4 (COMMIT at 5),
	// producer 2001 aborted 6-7 (ABORT at 8), plain 9; LSO = HW = 10
	for _, tt := range []struct {
		name    string
		aborted []audit.AbortedTxn
		want    string // the detail's count, "" when the views agree
		first   int64
		why     string
	}{
		{name: "agrees", aborted: []audit.AbortedTxn{{ProducerID: 2001, FirstOffset: 6}}},
		{
			name:  "aborted transaction missing from the index",
			want:  "2 records it returns are not committed by the markers, 0 committed records it does not return (first at offset 6)",
			first: 6,
			why:   "producer 2001's transaction from offset 6 is aborted by the markers (ABORT at 8) and not in the broker's aborted-transaction index",
		},
		{
			name:    "committed transaction in the index",
			aborted: []audit.AbortedTxn{{ProducerID: 2000, FirstOffset: 3}, {ProducerID: 2001, FirstOffset: 6}},
			want:    "0 records it returns are not committed by the markers, 2 committed records it does not return (first at offset 3)",
			first:   3,
			why:     "the broker's aborted-transaction index lists producer 2000's transaction from offset 3 as aborted",
		},
	} {
		t.Run(tt.name, func(t *testing.T) {
			c := newCluster(t)
			createTopic(t, newClient(t, c), sourcetest.Topic, 2, nil)
			serveLog(c, sourcetest.Fixture(), map[int32]audit.PartitionOffsets{0: sourcetest.Offsets0, 1: sourcetest.Offsets1},
				map[int32][]audit.AbortedTxn{0: tt.aborted})
			s := openSource(t, c, nil)
			tp := audit.TopicPartition{Topic: sourcetest.Topic}
			opts := ledger.Options{CrossCheck: true}
			for _, src := range []struct {
				how string
				src audit.RecordSource
				why string
			}{
				{"from the index", s, tt.why},
				{"from a second read", struct {
					audit.RecordSource
					audit.CommittedReader
				}{s, s}, ""},
			} {
				l, err := ledger.Build(t.Context(), src.src, tp, opts)
				if err != nil {
					t.Fatalf("%s: %v", src.how, err)
				}
				if tt.want == "" {
					if len(l.Findings) != 0 {
						t.Errorf("%s: findings %+v, want none", src.how, l.Findings)
					}
					continue
				}
				if len(l.Findings) != 1 {
					t.Fatalf("%s: findings %+v, want one", src.how, l.Findings)
				}
				f := l.Findings[0]
				if f.Cause != audit.CauseTransactionInconsistent || f.Offset != tt.first || !strings.Contains(f.Detail, tt.want) || !strings.Contains(f.Detail, src.why) {
					t.Errorf("%s: finding %s at %d: %q; want %s at %d: %q naming %q", src.how, f.Cause, f.Offset, f.Detail,
						audit.CauseTransactionInconsistent, tt.first, tt.want, src.why)
				}
			}
		})
	}
}

// TestIndexedReadFromTheLSO reads a partition whose log starts with an open
// transaction: nothing is below the LSO, and the read must not wait at the
// LSO for data a read_committed fetch cannot return.
func TestIndexedReadFromTheLSO(t *testing.T) {
	c := newCluster(t)
	o := newClient(t, c, kgo.TransactionalID("open"), kgo.TransactionTimeout(time.Minute))
	createTopic(t, o, "t", 1, nil)
	begin(t, o)
	produce(t, o, "t", 0, "o1", "v", "o2", "v")
	produce(t, newClient(t, c), "t", 0, "p1", "v")
	s := openSource(t, c, nil)
	var log fetchLog
	log.watch(c)
	tp := audit.TopicPartition{Topic: "t"}
	var idx audit.CommittedIndex
	got := offsetsOf(collect(t, s.RecordsIndexed(t.Context(), tp, 0, -1, &idx)))
	if !slices.Equal(got, []int64{0, 1, 2}) || idx.LSO != 0 || len(idx.Aborted) != 0 {
		t.Errorf("read %v with index %+v, want offsets 0-2, LSO 0 and no aborted transaction", got, idx)
	}
	for _, f := range log.seen() {
		if f.committed && f.offset >= idx.LSO && f.wait > 0 {
			t.Errorf("a read_committed fetch at %d, at or above the LSO %d, waits %d ms", f.offset, idx.LSO, f.wait)
		}
	}
}

package reconcile_test

import (
	"encoding/binary"
	"fmt"
	"testing"
	"time"

	"github.com/kaudit/kaudit/audit"
	"github.com/kaudit/kaudit/audit/codec"
	"github.com/kaudit/kaudit/audit/history"
	"github.com/kaudit/kaudit/audit/reconcile"
	"github.com/kaudit/kaudit/audit/spec"
	"github.com/kaudit/kaudit/internal/fakeapp"
)

// TestPurgedRepartitionOfAKeyedTable: a table re-keyed by key % 3 (Long
// keys, its serdes' own key serde beside the spec's default String), two
// copies of one repartition partition purged past the committed offset.
//
//   - Before the app restarts, the inputs are named purged-before-commit:
//     each key is placed in its repartition partition by the bytes of the
//     table's own key serde (seed 1069 of AB's generator: placed by the
//     default's, they were looked for in the wrong partition and called
//     unapplied).
//   - After the restart, the app committed past the purge and later inputs
//     of the same keys overwrote their effects: no key shows the loss, and
//     the commit history proves the purge; the range is the loss, keyless
//     (AB's V11: nothing was reported).
func TestPurgedRepartitionOfAKeyedTable(t *testing.T) {
	const yaml = `app_id: app
serdes: {key: string, value: json}
tables:
  - {name: t, source: in, serdes: {key: long, value: json}, select_key: 'key % 3', reduce: latest, store: S}
`
	sp, err := spec.ParseSpec("kaudit.yaml", []byte(yaml))
	if err != nil {
		t.Fatal(err)
	}
	plan, err := spec.Resolve(sp, nil, "")
	if err != nil {
		t.Fatal(err)
	}
	for _, restarted := range []bool{false, true} {
		t.Run(fmt.Sprintf("restarted %v", restarted), func(t *testing.T) {
			m, hist, rp := purgedKeyedEvidence(restarted)
			dec, err := codec.New(codec.Config{KeySerde: "string", ValueSerde: "json", Topics: map[string]codec.TopicSerdes{
				"in": {Key: "long"}, "app-S-repartition": {Key: "long"}, "app-S-changelog": {Key: "long"}}})
			if err != nil {
				t.Fatal(err)
			}
			opts := reconcile.Options{Decoder: dec}
			if hist != nil {
				opts.History = hist
			}
			r, err := reconcile.Run(t.Context(), m, reconcile.FromPlan(plan, "string"), opts)
			if err != nil {
				t.Fatal(err)
			}
			causes, keyless := map[audit.Cause]int{}, 0
			for _, f := range r.Findings {
				if f.Severity != audit.SeverityLoss {
					continue
				}
				causes[f.Cause]++
				if f.Key == "" {
					keyless++
					if f.Topic != "app-S-repartition" || f.Partition != rp || f.Count != 2 {
						t.Errorf("keyless %s at %s/%d@%d+%d, want the purged range of partition %d", f.Cause, f.Topic, f.Partition, f.Offset, f.Count, rp)
					}
				}
			}
			if causes[audit.CausePurgedBeforeCommit] == 0 || len(causes) != 1 {
				t.Errorf("losses %v, want the purge's inputs or range purged-before-commit (verdict %s, missing %v)", causes, r.Summary.Verdict, r.Summary.Missing)
			}
			if !restarted && keyless > 0 {
				t.Errorf("%d keyless findings before the restart: the keys name the purged inputs", keyless)
			}
		})
	}
}

// purgedKeyedEvidence writes the evidence of TestPurgedRepartitionOfAKeyedTable:
// 24 inputs keyed 0-23 re-keyed by key % 3 onto 2 repartition partitions,
// the last two copies of one partition purged past its committed offset;
// restarted, 6 later inputs of every key applied and the group committed
// past the purge, the commit history and a log-start observation between
// its two commits proving it. It returns the partition purged.
func purgedKeyedEvidence(restarted bool) (*fakeapp.Memory, *history.Evidence, int32) {
	const rep, cl = "app-S-repartition", "app-S-changelog"
	m := fakeapp.NewMemory(time.UnixMilli(1_000_000))
	m.AddTopic(audit.TopicInfo{Name: "in", Partitions: 1})
	m.AddTopic(audit.TopicInfo{Name: rep, Partitions: 2})
	m.AddTopic(audit.TopicInfo{Name: cl, Partitions: 2, Configs: map[string]string{"cleanup.policy": "compact"}})
	plain := audit.Batch{ProducerID: -1, ProducerEpoch: -1}
	long := func(n int64) []byte { return binary.BigEndian.AppendUint64(nil, uint64(n)) }
	const n, later = 24, 6
	next := map[audit.TopicPartition]int64{}
	type copyAt struct {
		p   int32
		off int64
	}
	var copies []copyAt
	total := int64(n)
	if restarted {
		total += later
	}
	for i := range total {
		v := []byte(fmt.Sprintf(`{"n":%d}`, i))
		m.Append(audit.Record{Topic: "in", Offset: i, Key: long(i), Value: v, Timestamp: 1000 + i, Batch: plain})
		k := long(i % 3)
		rtp := audit.TopicPartition{Topic: rep, Partition: audit.DefaultPartition(k, 2)}
		m.Append(audit.Record{Topic: rep, Partition: rtp.Partition, Offset: next[rtp], Key: k, Value: v, Timestamp: 1000 + i, Batch: plain})
		copies = append(copies, copyAt{rtp.Partition, next[rtp]})
		next[rtp]++
	}
	// the last two copies of one partition among the first n are purged
	// past its committed offset, never applied
	last := copies[n-1]
	purged := map[copyAt]bool{last: true}
	for i := n - 2; i >= 0; i-- {
		if copies[i].p == last.p {
			purged[copies[i]] = true
			break
		}
	}
	for i := range total {
		c := copies[i]
		if purged[c] {
			continue
		}
		ctp := audit.TopicPartition{Topic: cl, Partition: c.p}
		m.Append(audit.Record{Topic: cl, Partition: c.p, Offset: next[ctp], Key: long(i % 3), Value: []byte(fmt.Sprintf(`{"n":%d}`, i)), Timestamp: 1000 + i, Batch: plain})
		next[ctp]++
	}
	ptp := audit.TopicPartition{Topic: rep, Partition: last.p}
	committed, purgedTo, end := last.off-1, last.off+1, next[ptp]
	m.SetOffsets(ptp, audit.PartitionOffsets{LogStart: purgedTo, LSO: end, HW: end})
	other := audit.TopicPartition{Topic: rep, Partition: 1 - last.p}
	g := audit.GroupOffsets{Group: "app", Offsets: map[audit.TopicPartition]int64{{Topic: "in"}: total, ptp: committed, other: next[other]}}
	if !restarted {
		m.SetGroup(g)
		return m, nil, last.p
	}
	g.Offsets[ptp] = end
	m.SetGroup(g)
	h := &audit.CommitHistory{Group: "app", WholeFrom: 0, Commits: map[audit.TopicPartition][]audit.Commit{
		{Topic: "in"}: {{Offset: total, Time: 300, At: 3}},
		ptp:           {{Offset: committed, Time: 100, At: 1}, {Offset: end, Time: 300, At: 4}},
		other:         {{Offset: next[other], Time: 100, At: 2}},
	}}
	return m, &history.Evidence{Group: "app", History: h, LogStarts: map[audit.TopicPartition][]history.LogStartAt{
		ptp: {{Time: time.UnixMilli(200), Offset: purgedTo, Why: "a capture before the restart"}}}}, last.p
}

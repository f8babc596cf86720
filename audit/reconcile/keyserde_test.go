package reconcile_test

import (
	"encoding/binary"
	"fmt"
	"testing"
	"time"

	"github.com/kaudit/kaudit/audit"
	"github.com/kaudit/kaudit/audit/codec"
	"github.com/kaudit/kaudit/audit/reconcile"
	"github.com/kaudit/kaudit/audit/spec"
	"github.com/kaudit/kaudit/internal/fakeapp"
)

// TestTableKeySerdePlacesKeys (AB's seed 1069): a table whose serdes name
// its own key serde (Long keys re-keyed by key % 3, the spec's default
// String) places each key in its repartition partition by the bytes of
// that serde. Placed by the default's, the inputs whose copies a purge
// past the committed offset took were looked for in the wrong partition:
// unapplied ("dropped or purged after it was applied"), not
// purged-before-commit.
func TestTableKeySerdePlacesKeys(t *testing.T) {
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
	rep, cl := "app-S-repartition", "app-S-changelog"
	m := fakeapp.NewMemory(time.UnixMilli(1_000_000))
	m.AddTopic(audit.TopicInfo{Name: "in", Partitions: 1})
	m.AddTopic(audit.TopicInfo{Name: rep, Partitions: 2})
	m.AddTopic(audit.TopicInfo{Name: cl, Partitions: 2, Configs: map[string]string{"cleanup.policy": "compact"}})
	plain := audit.Batch{ProducerID: -1, ProducerEpoch: -1}
	long := func(n int64) []byte { return binary.BigEndian.AppendUint64(nil, uint64(n)) }
	const n = 24
	next := map[string]int64{}
	type copyAt struct {
		p   int32
		off int64
	}
	var copies []copyAt
	for i := range int64(n) {
		v := []byte(fmt.Sprintf(`{"n":%d}`, i))
		m.Append(audit.Record{Topic: "in", Offset: i, Key: long(i), Value: v, Timestamp: 1000 + i, Batch: plain})
		k := long(i % 3)
		p := audit.DefaultPartition(k, 2)
		rtp := fmt.Sprintf("%s/%d", rep, p)
		m.Append(audit.Record{Topic: rep, Partition: p, Offset: next[rtp], Key: k, Value: v, Timestamp: 1000 + i, Batch: plain})
		copies = append(copies, copyAt{p, next[rtp]})
		next[rtp]++
	}
	// the last two copies of one partition are purged past its committed
	// offset, never applied; every other copy is applied
	last := copies[n-1]
	purged := map[copyAt]bool{last: true}
	for i := n - 2; i >= 0; i-- {
		if copies[i].p == last.p {
			purged[copies[i]] = true
			break
		}
	}
	for i := range int64(n) {
		c := copies[i]
		if purged[c] {
			continue
		}
		ctp := fmt.Sprintf("%s/%d", cl, c.p)
		m.Append(audit.Record{Topic: cl, Partition: c.p, Offset: next[ctp], Key: long(i % 3), Value: []byte(fmt.Sprintf(`{"n":%d}`, i)), Timestamp: 1000 + i, Batch: plain})
		next[ctp]++
	}
	committed := last.off - 1
	end := next[fmt.Sprintf("%s/%d", rep, last.p)]
	m.SetOffsets(audit.TopicPartition{Topic: rep, Partition: last.p}, audit.PartitionOffsets{LogStart: end, LSO: end, HW: end})
	g := audit.GroupOffsets{Group: "app", Offsets: map[audit.TopicPartition]int64{{Topic: "in"}: n, {Topic: rep, Partition: last.p}: committed}}
	other := 1 - last.p
	g.Offsets[audit.TopicPartition{Topic: rep, Partition: other}] = next[fmt.Sprintf("%s/%d", rep, other)]
	m.SetGroup(g)
	dec, err := codec.New(codec.Config{KeySerde: "string", ValueSerde: "json", Topics: map[string]codec.TopicSerdes{
		"in": {Key: "long"}, rep: {Key: "long"}, cl: {Key: "long"}}})
	if err != nil {
		t.Fatal(err)
	}
	r, err := reconcile.Run(t.Context(), m, reconcile.FromPlan(plan, "string"), reconcile.Options{Decoder: dec})
	if err != nil {
		t.Fatal(err)
	}
	causes := map[audit.Cause]int{}
	for _, f := range r.Findings {
		if f.Severity == audit.SeverityLoss {
			causes[f.Cause]++
		}
	}
	if causes[audit.CausePurgedBeforeCommit] != 2 || len(causes) != 1 {
		t.Errorf("losses %v, want the two purged inputs purged-before-commit (verdict %s, missing %v)", causes, r.Summary.Verdict, r.Summary.Missing)
	}
}

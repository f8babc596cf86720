package report

import (
	"fmt"
	"time"

	"github.com/kaudit/kaudit/audit"
)

// Fixed clock for every golden file.
var (
	testGenerated = time.Date(2026, 11, 30, 11, 5, 0, 0, time.UTC)
	testNow       = time.Date(2026, 11, 30, 12, 0, 0, 0, time.UTC)
	incidentStart = time.Date(2026, 11, 30, 10, 0, 0, 0, time.UTC)
)

func testOptions() Options {
	return Options{Now: testNow, KafkaVersion: "3.6.1", StreamsVersion: "3.6.1", SVGPath: "timeline.svg", ReplayBootstrap: "broker1:9092"}
}

func tp(topic string, p int32) audit.TopicPartition {
	return audit.TopicPartition{Topic: topic, Partition: p}
}

const repartition = "orders-app-KSTREAM-KEY-SELECT-0000000003-repartition"

func seedCut() []audit.PartitionCut {
	return []audit.PartitionCut{
		{Topic: "orders-v1", Partition: 0, Role: "source", Committed: 1200, LogStart: 0, LSO: 1200, HW: 1200},
		{Topic: "orders-v1", Partition: 1, Role: "source", Committed: 1180, LogStart: 0, LSO: 1190, HW: 1190},
		{Topic: "payments-v1", Partition: 0, Role: "source", Committed: 900, LogStart: 0, LSO: 900, HW: 900},
		{Topic: repartition, Partition: 0, Role: "repartition", Committed: 2300, LogStart: 2290, LSO: 2300, HW: 2300},
		{Topic: "orders-app-KSTREAM-REDUCE-STATE-STORE-0000000005-changelog", Partition: 0, Role: "changelog", Committed: -1, LogStart: 0, LSO: 2140, HW: 2140},
		{Topic: "order-status", Partition: 0, Role: "output", Committed: -1, LogStart: 0, LSO: 1500, HW: 1500},
	}
}

// seedEdges are the pipeline's hops; the hops out of the sources count
// the inputs judged, orders+payments, as the timeline does.
func seedEdges(orders, payments int64, lost bool) []audit.Edge {
	e := []audit.Edge{
		{From: "orders-v1", To: repartition, Records: orders},
		{From: repartition, To: "orders store", Records: orders},
		{From: "payments-v1", To: "payments store", Records: payments},
		{From: "orders store", To: "order-status", Records: 1500},
		{From: "payments store", To: "order-status", Records: 880},
	}
	if lost {
		e[0].Vanished = 60
		e[1].Records, e[1].Vanished = orders-60, 21
		e[2].Vanished = 4
		e[3].Vanished = 1
	}
	return e
}

// seedRecords is the funnel of judged inputs with pending ones at the
// source and two null keys.
func seedRecords(judged, pending int64) map[string]int64 {
	return map[string]int64{"read": judged + pending + 2, "consumed": judged + 2, "repartitioned": judged, "applied": judged, "joined": 1500, "output": 1500, "null-key": 2}
}

// steadyTimeline is n quiet minutes of steady traffic.
func steadyTimeline(n int) []audit.Minute {
	var ms []audit.Minute
	for i := range n {
		ms = append(ms, audit.Minute{Start: incidentStart.Add(time.Duration(i) * time.Minute).UnixMilli(), Produced: 100, Committed: 12})
	}
	return ms
}

// cleanReport has pending records and a risky setting, nothing worse.
func cleanReport() *audit.Report {
	r := &audit.Report{
		AppID: "orders-app", GeneratedAt: testGenerated, Source: "live broker1:9092",
		Cut: seedCut(), Edges: seedEdges(700, 300, false), Timeline: steadyTimeline(10),
		Summary: audit.Summary{Records: seedRecords(1000, 10)},
	}
	for i := range int64(10) {
		f := audit.NewFinding(audit.StageSource, audit.CausePending, tp("orders-v1", 1), 1180+i)
		f.Key = fmt.Sprintf("o-%d", 900+i)
		r.Findings = append(r.Findings, f)
	}
	f := audit.NewFinding(audit.StageConfig, audit.CauseConfigRisk, tp(repartition, 0), -1)
	f.Count = 0
	f.Detail = "min.insync.replicas=1 with replication.factor=3"
	r.Findings = append(r.Findings, f)
	r.Finish()
	return r
}

// lossReport is the seed incident: a 20-minute outage, aborted
// transactions, purged repartition records, a state reset and more.
func lossReport() *audit.Report {
	r := &audit.Report{
		AppID: "orders-app", GeneratedAt: testGenerated, Source: "snapshot /var/kaudit/incident-42 captured 2026-11-30T11:00:00Z",
		Cut: seedCut(), Edges: seedEdges(1400, 635, true),
		Summary: audit.Summary{Records: seedRecords(2035, 10), Notes: []string{"order of orders inputs was ambiguous for 3 keys; any interleaving accepted"}},
	}
	r.Cut[1].LogStart, r.Cut[1].HW = 5, 1192 // retention gap; a hanging transaction holds the LSO
	r.Cut[3].Committed = 2270                // purged before commit: log-start 2290 above it
	// Timeline: 10 steady minutes, 3 minutes of aborts, a 20-minute gap,
	// recovery with vanished records, then steady again.
	ms := steadyTimeline(10)
	at := func(i int) int64 { return incidentStart.Add(time.Duration(i) * time.Minute).UnixMilli() }
	ms = append(ms,
		audit.Minute{Start: at(10), Produced: 90, Committed: 4, Aborted: 6, Vanished: 30},
		audit.Minute{Start: at(11), Produced: 40, Committed: 0, Aborted: 9, Vanished: 34},
		audit.Minute{Start: at(12), Produced: 5, Committed: 0, Aborted: 2},
	)
	// minutes 13..32 absent: nothing produced (filled in by the renderer)
	ms = append(ms, audit.Minute{Start: at(33), Produced: 300, Committed: 10, Aborted: 1, Vanished: 1})
	for i := 34; i < 40; i++ {
		ms = append(ms, audit.Minute{Start: at(i), Produced: 100, Committed: 12})
	}
	r.Timeline = ms

	// 60 aborted-not-replayed on orders-v1/0 (two ranges) and 4 on
	// payments-v1/0: more than the per-cause cap of the Markdown.
	for i := range int64(60) {
		off := 1000 + i
		if i >= 40 {
			off = 1100 + i
		}
		f := audit.NewFinding(audit.StageRepartition, audit.CauseAbortedNotReplayed, tp("orders-v1", 0), off)
		f.Key = fmt.Sprintf("o-%d", off)
		f.Timestamp = incidentStart.Add(10*time.Minute + time.Duration(i)*time.Second).UnixMilli()
		f.TransactionalID = "orders-app-6a3c-1"
		f.ProducerID, f.ProducerEpoch = 4001, 3
		f.Detail = "derived record only in aborted txn at " + repartition + "/0@2210"
		r.Findings = append(r.Findings, f)
	}
	for i := range int64(4) {
		f := audit.NewFinding(audit.StageRepartition, audit.CauseAbortedNotReplayed, tp("payments-v1", 0), 500+i)
		f.Key = fmt.Sprintf("o-%d", 70+i)
		f.ProducerID, f.ProducerEpoch = 4002, 1
		r.Findings = append(r.Findings, f)
	}
	// 20 repartition offsets purged before commit: the gap [2270, 2290).
	f := audit.NewFinding(audit.StageRepartition, audit.CausePurgedBeforeCommit, tp(repartition, 0), 2270)
	f.Count = 20
	f.Detail = "log-start 2290 above the committed offset 2270 at the time of the abort | candidates: orders-v1/1@[1100,1120)"
	r.Findings = append(r.Findings, f)
	// A retention gap on orders-v1/1 (gone).
	f = audit.NewFinding(audit.StageSource, audit.CauseRetentionGap, tp("orders-v1", 1), 0)
	f.Count = 5
	f.Detail = "log-start 5 was above the committed offset 0 when the group first committed"
	r.Findings = append(r.Findings, f)
	// A state reset on the orders store.
	f = audit.NewFinding(audit.StageStore, audit.CauseStateReset, tp("orders-v1", 1), 1150)
	f.Key = "o-42"
	f.Expected = `{"orderId":"o-42","status":"SHIPPED","items":3}`
	f.Actual = `{"orderId":"o-42","status":"NEW"}`
	f.Detail = "changelog 2101 restarts from input orders-v1/1@1150 instead of reduce(prev, in)"
	r.Findings = append(r.Findings, f)
	// A missing join output.
	f = audit.NewFinding(audit.StageJoin, audit.CauseJoinMissing, tp("order-status", 0), -1)
	f.Key = "o-17"
	f.Expected = `{"orderId":"o-17","paid":12.5,"shipped":null}`
	r.Findings = append(r.Findings, f)
	// Anomalies, info and risk.
	f = audit.NewFinding(audit.StageStore, audit.CauseDuplicate, tp("payments-v1", 0), 610)
	f.Key = "o-88"
	f.Detail = "applied twice: changelog offsets 880 and 884"
	r.Findings = append(r.Findings, f)
	f = audit.NewFinding(audit.StageTransactions, audit.CauseHangingTransaction, tp("orders-v1", 1), 1190)
	f.TransactionalID = "legacy-loader-1"
	f.ProducerID, f.ProducerEpoch = 77, 0
	f.Detail = "open since 2026-11-30T10:11:00Z, longer than 15m; no coordinator state (KIP-664)"
	r.Findings = append(r.Findings, f)
	f = audit.NewFinding(audit.StageSource, audit.CauseNullKey, tp("orders-v1", 0), 1199)
	f.Count = 2
	r.Findings = append(r.Findings, f)
	f = audit.NewFinding(audit.StageSource, audit.CausePending, tp("orders-v1", 1), 1180)
	f.Count = 10
	r.Findings = append(r.Findings, f)
	f = audit.NewFinding(audit.StageConfig, audit.CauseConfigRisk, tp(repartition, 0), -1)
	f.Count = 0
	f.Detail = "cleanup.policy=compact on a repartition topic"
	r.Findings = append(r.Findings, f)
	r.Finish()
	// Lineage of two samples, pointing at findings after sorting.
	for i, f := range r.Findings {
		switch {
		case f.Cause == audit.CauseAbortedNotReplayed && f.Offset == 1000:
			r.Lineage = append(r.Lineage, audit.Lineage{Finding: i, Hops: []audit.Hop{
				{Stage: audit.StageSource, Topic: "orders-v1", Partition: 0, Offset: 1000, Expected: "committed input", Actual: `{"orderId":"o-1000"}`},
				{Stage: audit.StageRepartition, Topic: repartition, Partition: 0, Offset: 2210, Expected: "committed copy", Actual: "aborted copy only", Note: "txn pid 4001 epoch 3 aborted at 10:11:02"},
				{Stage: audit.StageStore, Topic: "orders-app-KSTREAM-REDUCE-STATE-STORE-0000000005-changelog", Partition: 0, Offset: -1, Expected: `{"orderId":"o-1000"}`, Actual: "key absent"},
			}})
		case f.Cause == audit.CauseStateReset:
			r.Lineage = append(r.Lineage, audit.Lineage{Finding: i, Hops: []audit.Hop{
				{Stage: audit.StageStore, Topic: "orders-app-KSTREAM-REDUCE-STATE-STORE-0000000005-changelog", Partition: 0, Offset: 2101, Expected: f.Expected, Actual: f.Actual},
			}})
		}
	}
	return r
}

// incompleteReport found nothing, but could not read everything.
func incompleteReport() *audit.Report {
	r := &audit.Report{
		AppID: "orders-app", GeneratedAt: testGenerated, Source: "log dirs /data/kafka-1",
		Cut: seedCut()[:3],
		Summary: audit.Summary{
			Missing: []string{"payments-v1/1: partition directory not found", "schema id 17 unknown (orders-v1)"},
			Skipped: []string{"join check: no spec given (--spec)"},
			Notes:   []string{"group offsets read from the capture, not live"},
		},
	}
	f := audit.NewFinding(audit.StageOffsets, audit.CauseUnreadable, tp("payments-v1", 1), -1)
	f.Count = 0
	f.Detail = "open /data/kafka-1/payments-v1-1: no such file or directory"
	r.Findings = append(r.Findings, f)
	r.Finish()
	return r
}

func testLedger(withOffsets bool) *audit.TopicLedger {
	l := &audit.TopicLedger{Topic: repartition, Partitions: []audit.PartitionLedger{
		{Partition: 0, LogStart: 2290, LSO: 2300, HW: 2302,
			Fates:        audit.FateCounts{Committed: 8, Marker: 2, Open: 2, Purged: 2290},
			Transactions: audit.TxnCounts{Committed: 2, Open: 1}},
		{Partition: 1, LogStart: 0, LSO: 10, HW: 10,
			Fates:        audit.FateCounts{Committed: 6, Aborted: 3, Marker: 1},
			Transactions: audit.TxnCounts{Aborted: 1}},
	}}
	f := audit.NewFinding(audit.StageRepartition, audit.CausePurgedBeforeCommit, tp(repartition, 0), 2270)
	f.Count = 20
	f.Detail = "log-start 2290 above committed 2270"
	l.Partitions[0].Findings = []audit.Finding{f}
	if withOffsets {
		l.Partitions[1].Offsets = []audit.OffsetFate{
			{Offset: 3, Fate: audit.FateAborted, ProducerID: 4001, ProducerEpoch: 3, Transactional: true},
			{Offset: 4, Fate: audit.FateAborted, ProducerID: 4001, ProducerEpoch: 3, Transactional: true},
			{Offset: 5, Fate: audit.FateMarker, ProducerID: 4001, ProducerEpoch: 3, Transactional: true, Control: true},
			{Offset: 6, Fate: audit.FateCommitted, ProducerID: -1, ProducerEpoch: -1},
		}
		l.Partitions[1].Values = []audit.DecodedRecord{{Offset: 6, Key: `"o-1006"`, Value: `{"orderId":"o-1006","status":"PAID"}`, Timestamp: 1796036400000}}
	}
	return l
}

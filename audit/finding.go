package audit

import (
	"cmp"
	"slices"
)

// Stage is the hop where a record stopped, or the area of an anomaly that
// concerns no single record.
type Stage string

const (
	StageSource       Stage = "source"       // never consumed by the app
	StageRepartition  Stage = "repartition"  // consumed from its source, never applied from the repartition topic
	StageStore        Stage = "store"        // applied input not reflected in the store's changelog
	StageJoin         Stage = "join"         // tables right, output wrong
	StageOffsets      Stage = "offsets"      // offsets of a partition (gaps, purges, checkpoints)
	StageTransactions Stage = "transactions" // transactions and markers
	StageConfig       Stage = "config"       // settings that allow loss
)

// Stages lists every stage in pipeline order.
var Stages = []Stage{StageSource, StageRepartition, StageStore, StageJoin, StageOffsets, StageTransactions, StageConfig}

// Severity grades a finding. Only loss and anomaly change the verdict.
type Severity string

const (
	SeverityLoss    Severity = "loss"
	SeverityAnomaly Severity = "anomaly"
	SeverityRisk    Severity = "risk"
	SeverityInfo    Severity = "info"
)

// Cause names the evidence that proves why a record vanished or what the
// anomaly is. The vocabulary is closed: each cause has its CauseDoc
// (causes.go), which README.md's findings table must match.
type Cause string

const (
	CauseRetentionGap       Cause = "retention-gap"
	CausePurgedBeforeCommit Cause = "purged-before-commit"
	CauseAbortedNotReplayed Cause = "aborted-not-replayed"
	CauseDropped            Cause = "dropped"
	CauseUnapplied          Cause = "unapplied"
	CauseStateDiverged      Cause = "state-diverged"
	CauseStateReset         Cause = "state-reset"
	CauseDuplicate          Cause = "duplicate"
	CauseJoinMissing        Cause = "join-missing"
	CauseJoinStale          Cause = "join-stale"
	CausePending            Cause = "pending"
	CauseNullKey            Cause = "null-key"
	// CauseFiltered counts consumed inputs that the app's own steps, as
	// the spec states them, emit nothing for (a filter, a branch not
	// taken, an empty flatMap): by design, never a loss.
	CauseFiltered Cause = "filtered"
	// CauseLate is an input a windowed aggregation skipped by design: its
	// window had closed (end + grace at or below the task's stream time).
	CauseLate               Cause = "late"
	CauseHangingTransaction Cause = "hanging-transaction"
	CauseCheckpointAhead    Cause = "checkpoint-ahead"
	CauseTruncated          Cause = "truncated"
	CauseOffsetGap          Cause = "offset-gap"
	CauseConfigRisk         Cause = "config-risk"
	CauseUndecodable        Cause = "undecodable"
	CauseUnreadable         Cause = "unreadable"
	// CauseTransactionInconsistent covers transaction evidence that
	// contradicts itself: data with no marker below the LSO, a marker with
	// no data, or a derived read_committed view that disagrees with the
	// broker's.
	CauseTransactionInconsistent Cause = "transaction-inconsistent"
	// CauseUncleanShutdown is a Streams task directory holding a store but
	// no .checkpoint under exactly-once: the last close was not clean.
	CauseUncleanShutdown Cause = "unclean-shutdown"
	// CauseUnderReplicated is a range of offsets the replica the audit
	// reads (the last leader's) holds and other replicas of the partition
	// lack: nothing is lost while that replica lives, but it is the only
	// copy (broker log dirs only).
	CauseUnderReplicated Cause = "under-replicated"
	// CauseOffsetsForward is a range the group's committed offset was
	// moved past by hand (a plain OffsetCommit while the group had no
	// member, or one not made by the app's transactional producers): the
	// app never consumed it.
	CauseOffsetsForward Cause = "offsets-forward"
)

var causeSeverity = map[Cause]Severity{
	CauseRetentionGap:            SeverityLoss,
	CausePurgedBeforeCommit:      SeverityLoss,
	CauseAbortedNotReplayed:      SeverityLoss,
	CauseDropped:                 SeverityLoss,
	CauseUnapplied:               SeverityLoss,
	CauseStateDiverged:           SeverityLoss,
	CauseStateReset:              SeverityLoss,
	CauseDuplicate:               SeverityAnomaly,
	CauseJoinMissing:             SeverityLoss,
	CauseJoinStale:               SeverityLoss,
	CausePending:                 SeverityInfo,
	CauseNullKey:                 SeverityInfo,
	CauseFiltered:                SeverityInfo,
	CauseLate:                    SeverityInfo,
	CauseHangingTransaction:      SeverityAnomaly,
	CauseCheckpointAhead:         SeverityAnomaly,
	CauseTruncated:               SeverityLoss,
	CauseOffsetGap:               SeverityAnomaly,
	CauseConfigRisk:              SeverityRisk,
	CauseUndecodable:             SeverityAnomaly,
	CauseUnreadable:              SeverityAnomaly,
	CauseTransactionInconsistent: SeverityAnomaly,
	CauseUncleanShutdown:         SeverityInfo,
	CauseUnderReplicated:         SeverityRisk,
	CauseOffsetsForward:          SeverityLoss,
}

// Causes lists every cause, in the order of README.md's findings table.
var Causes = []Cause{
	CauseRetentionGap, CausePurgedBeforeCommit, CauseAbortedNotReplayed, CauseDropped,
	CauseUnapplied, CauseStateDiverged, CauseStateReset, CauseDuplicate, CauseJoinMissing,
	CauseJoinStale, CausePending, CauseNullKey, CauseFiltered, CauseLate, CauseHangingTransaction, CauseCheckpointAhead,
	CauseTruncated, CauseOffsetGap, CauseConfigRisk, CauseUndecodable, CauseUnreadable,
	CauseTransactionInconsistent, CauseUncleanShutdown, CauseUnderReplicated, CauseOffsetsForward,
}

// Severity is the cause's fixed severity.
func (c Cause) Severity() Severity {
	if s, ok := causeSeverity[c]; ok {
		return s
	}
	return SeverityAnomaly
}

// Finding is one vanished record or one anomaly. Field order is the CSV and
// JSON column order of the report (docs/how-it-decides.md, "Findings").
//
// Topic, Partition and Offset name the vanished input where it can still be
// read, furthest upstream; where nothing holds it any more they name the
// first offset of the gap and Count the number of offsets in it. Join
// findings name the output partition, with Offset the stale output record or
// -1 when the key is absent. Key is the table key (the selected key).
type Finding struct {
	Stage           Stage    `json:"stage"`
	Cause           Cause    `json:"cause"`
	Severity        Severity `json:"severity"`
	Topic           string   `json:"topic"`
	Partition       int32    `json:"partition"`
	Offset          int64    `json:"offset"`
	Count           int64    `json:"count"`
	Key             string   `json:"key"`
	Timestamp       int64    `json:"timestamp"` // ms since the epoch, -1 when unknown
	TransactionalID string   `json:"transactional_id"`
	ProducerID      int64    `json:"producer_id"` // -1 when none
	ProducerEpoch   int16    `json:"producer_epoch"`
	Expected        string   `json:"expected"`
	Actual          string   `json:"actual"`
	Detail          string   `json:"detail"`
	// Candidates lists, for an undecided loss (Count of these inputs are
	// missing, the evidence cannot tell which), the candidate inputs as
	// topic/partition@offset, separated by ", ". It is not a CSV column.
	Candidates string `json:"candidates,omitempty"`
}

// NewFinding returns a finding for cause with its severity set and the
// numeric fields that mean "unknown" set to -1.
func NewFinding(stage Stage, cause Cause, tp TopicPartition, offset int64) Finding {
	return Finding{
		Stage: stage, Cause: cause, Severity: cause.Severity(),
		Topic: tp.Topic, Partition: tp.Partition, Offset: offset, Count: 1,
		Timestamp: -1, ProducerID: -1, ProducerEpoch: -1,
	}
}

// FindingColumns are the CSV header, in order.
var FindingColumns = []string{"stage", "cause", "severity", "topic", "partition", "offset", "count",
	"key", "timestamp", "transactional_id", "producer_id", "producer_epoch", "expected", "actual", "detail"}

// SortFindings orders findings deterministically: by stage, cause, topic,
// partition, offset, key.
func SortFindings(fs []Finding) {
	stageRank := map[Stage]int{}
	for i, s := range Stages {
		stageRank[s] = i
	}
	slices.SortStableFunc(fs, func(a, b Finding) int {
		return cmp.Or(
			cmp.Compare(stageRank[a.Stage], stageRank[b.Stage]),
			cmp.Compare(a.Cause, b.Cause),
			cmp.Compare(a.Topic, b.Topic),
			cmp.Compare(a.Partition, b.Partition),
			cmp.Compare(a.Offset, b.Offset),
			cmp.Compare(a.Key, b.Key),
			cmp.Compare(a.Detail, b.Detail),
		)
	})
}

package audit

import (
	"strings"
	"unicode"
	"unicode/utf8"
)

// CauseDoc is what kaudit says of a cause, in one place: the findings
// table of README.md (stage, severity, meaning) is checked against it by
// TestFindingsTableMatchesCauseDocs, and the postmortem's paragraph for a
// cause is Explain. The severity is Cause.Severity.
type CauseDoc struct {
	// Stages are the stages a finding of the cause can carry, in
	// pipeline order.
	Stages []Stage
	// Meaning is the evidence that proves the cause: the findings
	// table's "meaning" column, Markdown, lowercase, no final period.
	Meaning string
	// Consequence is what it means for the records concerned, one or
	// more sentences; the postmortem adds it to Meaning. May be empty.
	Consequence string
	// Phrase completes "N records …" in the postmortem's summary.
	Phrase string
}

var causeDocs = map[Cause]CauseDoc{
	CauseRetentionGap: {
		Stages:      []Stage{StageSource},
		Meaning:     "a source partition's log-start offset is above the group's committed offset (or, against a baseline capture, records it held are below the log start now): records deleted before the app read them",
		Consequence: "The finding names the first deleted offset and the number of offsets gone. They can only be recovered from the system that produced them.",
		Phrase:      "deleted by retention before the app read them",
	},
	CausePurgedBeforeCommit: {
		Stages:      []Stage{StageRepartition},
		Meaning:     "a repartition partition's log-start offset is above the group's committed offset there: records purged before the app applied them (the KAFKA-17635 signature)",
		Consequence: "The records are gone from the repartition topic; their source records may still be readable upstream.",
		Phrase:      "purged from a repartition topic before their commit",
	},
	CauseAbortedNotReplayed: {
		Stages:  []Stage{StageRepartition},
		Meaning: "the input was consumed and its repartition copy exists only in aborted transactions",
		Consequence: "Under exactly-once the input offset and the derived writes commit together, so a committed offset past an input whose output was aborted " +
			"means the transaction that moved the offset was not the one that held the output. The input is still readable and can be replayed.",
		Phrase: "consumed but written only in aborted transactions",
	},
	CauseDropped: {
		Stages:      []Stage{StageRepartition},
		Meaning:     "the input was consumed and has no copy anywhere, although the repartition partition it goes to still holds the copies of earlier and later inputs of its source partition, or was never purged (log start 0)",
		Consequence: "The application consumed it and wrote nothing for it.",
		Phrase:      "consumed and never written",
	},
	CauseUnapplied: {
		Stages: []Stage{StageRepartition, StageStore},
		Meaning: "the input was consumed and its effect is missing, and the range that would hold its copy is purged (or the table has no hop): dropped, or applied and lost, the evidence cannot tell (`detail` lists both); " +
			"or a key's state proves `count` inputs missing and the evidence cannot tell which (`candidates` lists them)",
		Consequence: "The input is still readable on its source topic.",
		Phrase:      "consumed and never applied (the range is purged)",
	},
	CauseStateDiverged: {
		Stages:      []Stage{StageStore},
		Meaning:     "its repartition copy is committed and below the group's committed offset, yet the store's changelog does not reflect it",
		Consequence: "The store lost an update it had applied, or never applied one it had consumed.",
		Phrase:      "not reflected in the store",
	},
	CauseStateReset: {
		Stages:      []Stage{StageStore},
		Meaning:     "the changelog history shows the aggregate continuing, then restarting (empty, or from an earlier state), which explains it with fewer lost inputs than any other explanation: the inputs applied before the restart are lost (the KAFKA-16017 signature)",
		Consequence: "The store was rebuilt from an incomplete restore and carried on as if it were whole.",
		Phrase:      "lost to a store that restarted from scratch",
	},
	CauseDuplicate: {
		Stages:      []Stage{StageRepartition, StageStore, StageJoin},
		Meaning:     "one input has two committed repartition copies, or only applying an input twice explains a fold's history, or a copied input (`copies:`) is on the output twice",
		Consequence: "Exactly-once should make this impossible; it is an anomaly, not a loss.",
		Phrase:      "applied twice",
	},
	CauseJoinMissing: {
		Stages: []Stage{StageJoin},
		Meaning: "the left table holds the key at the cut, the output has no record for it; or, for a table's own output (`output:`), a committed changelog state of the key is not among the output's records; " +
			"or, for a copy (`copies:`), a consumed input has no committed copy on the output; or, for a stream-table join (`stream_joins:`), a consumed record that reached the join has no joined record " +
			"(left: always due; inner: due where the table held the key whenever the task could have joined it)",
		Consequence: "Downstream consumers of the output never saw it.",
		Phrase:      "missing from the join output",
	},
	CauseJoinStale: {
		Stages:      []Stage{StageJoin},
		Meaning:     "the output's last record for the key differs from the joiner over the tables at the cut (for a table's own output, from the store's final state; for a stream-table join, the joined record's value is the joiner over no state the table held then)",
		Consequence: "Downstream consumers see an older or partial result.",
		Phrase:      "stale in the join output",
	},
	CausePending: {
		Stages:      []Stage{StageSource, StageRepartition},
		Meaning:     "the input is at or above the group's committed offset: lag, not loss",
		Consequence: "The application has not processed it yet; it will when the application runs.",
		Phrase:      "not processed yet",
	},
	CauseNullKey: {
		Stages:      []Stage{StageSource},
		Meaning:     "the selected key is null: Streams drops such records by design",
		Consequence: "This is information, not loss, unless the null key itself is a bug upstream.",
		Phrase:      "dropped for a null key",
	},
	CauseFiltered: {
		Stages:      []Stage{StageSource},
		Meaning:     "the table's steps, as the spec states them, emit nothing for the input (a filter, a branch not taken, an empty flatMap): the app drops it by design",
		Consequence: "This is information, not loss: the count says how many inputs the app's own filters kept out.",
		Phrase:      "filtered out by the app's own steps",
	},
	CauseLate: {
		Stages:      []Stage{StageStore},
		Meaning:     "windowed tables: the input is missing from a window whose end plus grace was at or below the task's stream time before it (computed without restarts): Streams skips it by design",
		Consequence: "This is information, not loss.",
		Phrase:      "skipped for a closed window",
	},
	CauseHangingTransaction: {
		Stages:      []Stage{StageTransactions},
		Meaning:     "a transaction is open longer than `--max-transaction-timeout` (15m), or open with no coordinator state (KIP-664)",
		Consequence: "It holds the last stable offset down: read_committed consumers, including the application itself, stall behind it.",
		Phrase:      "hanging transactions",
	},
	CauseCheckpointAhead: {
		Stages:      []Stage{StageOffsets},
		Meaning:     "a state-dir `.checkpoint` is beyond what the changelog holds, or beyond its end at the committed cut",
		Consequence: "On restart the store will believe it is restored further than it is and skip changelog records.",
		Phrase:      "checkpoints ahead of the changelog",
	},
	CauseTruncated: {
		Stages:      []Stage{StageSource, StageRepartition, StageOffsets},
		Meaning:     "records in a baseline capture (or on another replica) are gone or different now, or the group's committed offset is above the partition's high watermark",
		Consequence: "The log was truncated, typically by an unclean leader election or a cluster-wide crash with unflushed data.",
		Phrase:      "truncated from the log",
	},
	CauseOffsetGap: {
		Stages:      []Stage{StageOffsets},
		Meaning:     "offsets are missing inside a non-compacted partition above its log start",
		Consequence: "Kafka does not leave such gaps in a healthy log; the evidence is damaged or the log was rewritten.",
		Phrase:      "offset gaps",
	},
	CauseConfigRisk: {
		Stages:      []Stage{StageConfig},
		Meaning:     "a setting allows loss: a compacted repartition topic, a changelog not compacted, min.insync.replicas < 2 with RF 3 or more, unclean leader election on, retention shorter than the outage",
		Consequence: "No loss was found from it; it is a risk to fix.",
		Phrase:      "risky settings",
	},
	CauseUndecodable: {
		Stages:      []Stage{StageSource},
		Meaning:     "a whole record (its batch intact) cannot be decoded with the serdes (not Confluent-framed, not their format); a record of a damaged batch is `unreadable`, and without --spec one that does not decode with the inferred serdes is missing evidence (the guess, not the record, may be wrong)",
		Consequence: "The audit could not compare its content, so conclusions about its key are weaker.",
		Phrase:      "undecodable records",
	},
	CauseUnreadable: {
		Stages:      []Stage{StageOffsets},
		Meaning:     "a partition or file could not be read (hidden, missing, a batch whose CRC fails, a bundle's segment cut, listed twice or overlapping): the verdict is then at least `incomplete`",
		Consequence: "Everything that depends on it is unchecked.",
		Phrase:      "unreadable partitions or files",
	},
	CauseTransactionInconsistent: {
		Stages:  []Stage{StageTransactions},
		Meaning: "transaction evidence contradicts itself: data with no marker below the LSO, a COMMIT marker with no data, or a read_committed view derived from the markers that differs from the broker's",
		Phrase:  "inconsistent transaction evidence",
	},
	CauseUncleanShutdown: {
		Stages:      []Stage{StageStore},
		Meaning:     "a task dir holds a store and no `.checkpoint` under EOS: the last close was not clean",
		Consequence: "Streams will wipe and restore the store on its next start.",
		Phrase:      "unclean task shutdowns",
	},
	CauseUnderReplicated: {
		Stages:      []Stage{StageOffsets},
		Meaning:     "broker log dirs only: the replica the audit reads (the last leader's) holds offsets that other replicas of the partition lack",
		Consequence: "Nothing is lost while that replica lives, but it is the only copy of those records.",
		Phrase:      "held by one replica only",
	},
	CauseOffsetsForward: {
		Stages:      []Stage{StageSource, StageRepartition},
		Meaning:     "the group's commit history shows its committed offset moved past these offsets by a commit the app did not make (a plain commit while the group had no member, or outside the transactions an exactly-once app commits in): never consumed",
		Consequence: "The app resumed after them and never consumed them; they are still in the topic if retention has not removed them, and can be replayed.",
		Phrase:      "skipped by a committed offset moved forward by hand",
	},
}

// Doc returns what kaudit says of the cause; ok is false for a cause not
// in the vocabulary.
func (c Cause) Doc() (d CauseDoc, ok bool) {
	d, ok = causeDocs[c]
	return d, ok
}

// Explain is the postmortem's paragraph for the cause: its meaning as a
// sentence, then its consequence. It is empty for a cause not in the
// vocabulary.
func (c Cause) Explain() string {
	d, ok := causeDocs[c]
	if !ok {
		return ""
	}
	r, n := utf8.DecodeRuneInString(d.Meaning)
	s := string(unicode.ToUpper(r)) + d.Meaning[n:] + "."
	if d.Consequence != "" {
		s += " " + d.Consequence
	}
	return s
}

// StagesText is the stages of the cause as the findings table prints
// them: "repartition, store".
func (d CauseDoc) StagesText() string {
	s := make([]string, len(d.Stages))
	for i, st := range d.Stages {
		s[i] = string(st)
	}
	return strings.Join(s, ", ")
}

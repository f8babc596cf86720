package report

import (
	"fmt"
	"strconv"
	"strings"

	"github.com/kaudit/kaudit/audit"
)

// CauseText explains each cause in one paragraph: what the evidence shows
// and what it means for the records concerned. The README reuses it.
var CauseText = map[audit.Cause]string{
	audit.CauseRetentionGap: "The source partition's log-start offset is above the group's committed offset: " +
		"retention (or DeleteRecords) removed records before the application read them, so they never " +
		"entered the pipeline. The finding names the first deleted offset and the number of offsets gone. " +
		"They can only be recovered from the system that produced them.",
	audit.CausePurgedBeforeCommit: "A repartition partition's log-start offset is above the group's committed offset " +
		"there: Kafka Streams purged repartition records that its own committed position says were not yet " +
		"applied. This is the signature of KAFKA-17635 under exactly-once v2. The records are gone from the " +
		"repartition topic; their source records may still be readable upstream.",
	audit.CauseAbortedNotReplayed: "The input was consumed (its offset is below the committed offset) but every record " +
		"derived from it sits in an aborted transaction. Under exactly-once the input offset and the derived " +
		"writes commit together, so a committed offset past an input whose output was aborted means the " +
		"transaction that moved the offset was not the one that held the output. The input is still readable " +
		"and can be replayed.",
	audit.CauseDropped: "The input was consumed and no derived record exists anywhere, although the position where it " +
		"must have been written is still readable (copies of earlier and later inputs of the same source " +
		"partition are there). The application consumed it and wrote nothing for it.",
	audit.CauseUnapplied: "The input was consumed and its effect is missing, but the range that held (or should have " +
		"held) its derived record has been purged. Either it was dropped before the sink or it was purged " +
		"before it was applied; the evidence left cannot tell these apart, and the finding's detail lists the " +
		"candidates.",
	audit.CauseStateDiverged: "The derived record is readable, committed and below the committed offset, yet the " +
		"store's committed state (its changelog) does not reflect it. The store lost an update it had applied, " +
		"or never applied one it had consumed.",
	audit.CauseStateReset: "The changelog history shows a state that restarts from a raw input instead of continuing " +
		"the aggregate: the store was rebuilt from an incomplete restore and carried on as if it were whole. " +
		"The inputs folded before the reset are the vanished ones. This is the signature of KAFKA-16017.",
	audit.CauseDuplicate: "One input was applied twice in committed data: two committed derived copies, or a sum or " +
		"count that counts it twice. Exactly-once should make this impossible; it is an anomaly, not a loss.",
	audit.CauseJoinMissing: "The join's left table holds the key at the committed cut, but the output topic has no " +
		"record for it. Downstream consumers never saw this entity.",
	audit.CauseJoinStale: "The output's last record for the key differs from what the joiner computes over the " +
		"tables at the committed cut: the output shows an older or partial result.",
	audit.CausePending: "The input is at or above the committed offset: the application has not processed it yet. " +
		"This is lag, not loss; it will be processed when the application runs.",
	audit.CauseNullKey: "The selected key of the input is null. Kafka Streams drops such records by design when it " +
		"re-keys a stream; this is information, not loss, unless the null key itself is a bug upstream.",
	audit.CauseLate: "The input's window had closed when the task processed it: its end plus the grace period was at " +
		"or below the task's stream time. Kafka Streams skips such a record for an expired window by design; " +
		"this is information, not loss (a restart lowers stream time, and the window may then hold it).",
	audit.CauseHangingTransaction: "A transaction has been open longer than the maximum transaction timeout, or is " +
		"open on a partition with no coordinator state (KIP-664). It holds the last stable offset down: " +
		"read_committed consumers, including the application itself, stall behind it.",
	audit.CauseCheckpointAhead: "A state directory's .checkpoint records a changelog offset beyond what the changelog " +
		"holds, or ahead of the committed cut. On restart the store will believe it is restored further than " +
		"it is and skip changelog records.",
	audit.CauseTruncated: "Records seen earlier (in a baseline capture or on another replica) are gone, or an offset " +
		"now holds different content: the log was truncated, typically by an unclean leader election or a " +
		"cluster-wide crash with unflushed data.",
	audit.CauseOffsetGap: "Offsets are missing inside a non-compacted partition above its log-start offset. Kafka " +
		"does not leave such gaps in a healthy log; the evidence is damaged or the log was rewritten.",
	audit.CauseConfigRisk: "A setting allows loss even though none was found: a compacted repartition topic, " +
		"min.insync.replicas below 2 with replication factor 3, unclean leader election enabled, or a " +
		"retention shorter than the outage.",
	audit.CauseUndecodable: "A record could not be decoded (unknown schema id, not Confluent-framed, corrupt). The " +
		"audit could not compare its content, so conclusions about its key are weaker.",
	audit.CauseUnreadable: "A partition or file could not be read. Everything that depends on it is unchecked, so the " +
		"run is incomplete, never clean.",
	audit.CauseTransactionInconsistent: "Transaction evidence contradicts itself: data with no marker below the last " +
		"stable offset, a marker with no data, or a read_committed view derived from the markers that " +
		"disagrees with the broker's own read_committed fetch.",
	audit.CauseUncleanShutdown: "A Streams task directory holds a store but no .checkpoint under exactly-once: the " +
		"last close of that task was not clean, so Streams will wipe and restore the store on its next start.",
	audit.CauseUnderReplicated: "The replica the audit reads (the last leader's, in the broker log dirs) holds " +
		"offsets other replicas of the partition lack: a follower was behind, or cut back when it restarted. " +
		"Nothing is lost while that replica lives, but it is the only copy of those records.",
	audit.CauseOffsetsForward: "The group's commit history shows its committed offset moved past these offsets by a " +
		"commit the app did not make: a plain OffsetCommit while the group had no member (kafka-consumer-groups " +
		"--reset-offsets, an admin client), or one outside the transactions an exactly-once app commits in. The app " +
		"resumed after them and never consumed them; they are still in the topic if retention has not removed them, " +
		"and can be replayed.",
}

// causeShort is the phrase the summary paragraph uses for a cause.
var causeShort = map[audit.Cause]string{
	audit.CauseRetentionGap:            "deleted by retention before the app read them",
	audit.CausePurgedBeforeCommit:      "purged from a repartition topic before their commit",
	audit.CauseAbortedNotReplayed:      "consumed but written only in aborted transactions",
	audit.CauseDropped:                 "consumed and never written",
	audit.CauseUnapplied:               "consumed and never applied (the range is purged)",
	audit.CauseStateDiverged:           "not reflected in the store",
	audit.CauseStateReset:              "lost to a store that restarted from scratch",
	audit.CauseDuplicate:               "applied twice",
	audit.CauseJoinMissing:             "missing from the join output",
	audit.CauseJoinStale:               "stale in the join output",
	audit.CausePending:                 "not processed yet",
	audit.CauseNullKey:                 "dropped for a null key",
	audit.CauseLate:                    "skipped for a closed window",
	audit.CauseHangingTransaction:      "hanging transactions",
	audit.CauseCheckpointAhead:         "checkpoints ahead of the changelog",
	audit.CauseTruncated:               "truncated from the log",
	audit.CauseOffsetGap:               "offset gaps",
	audit.CauseConfigRisk:              "risky settings",
	audit.CauseUndecodable:             "undecodable records",
	audit.CauseUnreadable:              "unreadable partitions or files",
	audit.CauseTransactionInconsistent: "inconsistent transaction evidence",
	audit.CauseUncleanShutdown:         "unclean task shutdowns",
	audit.CauseUnderReplicated:         "held by one replica only",
	audit.CauseOffsetsForward:          "skipped by a committed offset moved forward by hand",
}

// Explain returns CauseText for c, or a fallback naming the cause.
func Explain(c audit.Cause) string {
	if t, ok := CauseText[c]; ok {
		return t
	}
	return fmt.Sprintf("Cause %q is not in this kaudit's vocabulary; see the finding's detail.", string(c))
}

// KnownIssue is a Kafka bug whose forensic signature matches a cause.
type KnownIssue struct {
	ID        string        // e.g. "KAFKA-16017"
	Title     string        // one line
	Causes    []audit.Cause // the causes whose findings match its signature
	Mechanism string        // what happens
	// AffectedFrom is the first affected version, empty when every older
	// version is affected.
	AffectedFrom string
	// FixedIn lists the first fixed release of each release line, lowest
	// first; a version on a later line than the last is fixed too.
	FixedIn []string
	// Broker is true when the bug is in the broker rather than the client.
	Broker bool
	// Caveat qualifies the version data where it is not verified.
	Caveat string
}

// KnownIssues are the issues the postmortem cites (see the notes on Kafka
// Streams internals, section 5).
var KnownIssues = []KnownIssue{
	{
		ID: "KAFKA-17635", Title: "repartition records purged before their commit under exactly-once v2",
		Causes:    []audit.Cause{audit.CausePurgedBeforeCommit, audit.CauseUnapplied},
		Mechanism: "Streams calls DeleteRecords on a repartition topic up to an offset its committed transaction does not yet cover; after an abort the records it must re-read are gone.",
		FixedIn:   []string{"3.7.2", "3.8.1", "3.9.0"},
		Caveat:    "3.7.2 is from the upgrade notes; the 3.8.1 and 3.9.0 backports are from the issue's fix list",
	},
	{
		ID: "KAFKA-16017", Title: "checkpointed offset wrong after a clean close during restoration (EOS)",
		Causes:    []audit.Cause{audit.CauseStateReset, audit.CauseStateDiverged, audit.CauseJoinStale, audit.CauseCheckpointAhead},
		Mechanism: "After a TaskCorrupted wipe, a task closed cleanly mid-restore writes the producer's written changelog offsets as its checkpoint; on re-init it skips the unrestored changelog range and the reducer continues from a partial state.",
		FixedIn:   []string{"3.6.2", "3.7.0"},
	},
	{
		ID: "KAFKA-16903", Title: "a produce error on the shared exactly-once v2 producer is invisible to other tasks",
		Causes:    []audit.Cause{audit.CauseAbortedNotReplayed, audit.CauseDuplicate},
		Mechanism: "One task's send error puts the thread's single transaction into an abortable state other tasks do not see; the thread's whole transaction aborts (InvalidTxnStateException) and every task reprocesses.",
		FixedIn:   []string{"3.8.0"},
	},
	{
		ID: "KAFKA-16221", Title: "IllegalStateException from abortTransaction during a dirty close kills the stream thread",
		Causes:    []audit.Cause{audit.CauseAbortedNotReplayed},
		Mechanism: "Corruption handling aborts the transaction and the thread dies; its tasks move elsewhere.",
		FixedIn:   []string{"3.7.0"},
	},
	{
		ID: "KAFKA-15653", Title: "KIP-890 verification with compression fails produce requests (broker)",
		Causes:       []audit.Cause{audit.CauseAbortedNotReplayed, audit.CauseHangingTransaction},
		Mechanism:    "Produce requests on compressed topics fail with InvalidRecord or UnknownServerException, then transactions abort. Workaround: transaction.partition.verification.enable=false.",
		AffectedFrom: "3.6.0", FixedIn: []string{"3.6.1"}, Broker: true,
	},
	{
		ID: "KAFKA-14172", Title: "cache not cleared when a standby task is recycled to active",
		Causes:       []audit.Cause{audit.CauseStateDiverged, audit.CauseJoinStale},
		Mechanism:    "A recycled standby serves stale cached aggregates after a rebalance.",
		AffectedFrom: "3.4.0", FixedIn: []string{"3.4.1", "3.5.0"},
	},
	{
		ID: "KAFKA-12671", Title: "hanging transactions (detect and abort with KIP-664 tooling)",
		Causes:    []audit.Cause{audit.CauseHangingTransaction},
		Mechanism: "A transaction is never finished, so the LSO stops below the high watermark and read_committed readers stall. Brokers from 3.6.0 defend against the known cause with KIP-890 part 1; `kafka-transactions.sh find-hanging` and `abort` (KIP-664) clear one.",
		FixedIn:   []string{"3.6.0"}, Broker: true,
		Caveat: "3.6.0 is the KIP-890 part 1 defence, not a verified fix version of KAFKA-12671",
	},
}

// IssueStatus is how a known issue stands for one Kafka version.
type IssueStatus int

const (
	StatusUnknown     IssueStatus = iota // no version given, or not parseable
	StatusAffected                       // the version has the bug
	StatusFixed                          // the version has the fix
	StatusNotAffected                    // the version predates the bug
)

func (s IssueStatus) String() string {
	switch s {
	case StatusAffected:
		return "affects your version"
	case StatusFixed:
		return "fixed in your version"
	case StatusNotAffected:
		return "does not affect your version"
	}
	return "version not checked"
}

// Status says whether version (e.g. "3.6.1") has the issue.
func (k KnownIssue) Status(version string) IssueStatus {
	v, ok := parseVersion(version)
	if !ok {
		return StatusUnknown
	}
	if k.AffectedFrom != "" {
		if from, ok := parseVersion(k.AffectedFrom); ok && v.less(from) {
			return StatusNotAffected
		}
	}
	var last version3
	for _, f := range k.FixedIn {
		fv, ok := parseVersion(f)
		if !ok {
			continue
		}
		if fv.major == v.major && fv.minor == v.minor {
			if v.less(fv) {
				return StatusAffected
			}
			return StatusFixed
		}
		last = fv
	}
	if len(k.FixedIn) > 0 && last.less(v) {
		return StatusFixed
	}
	return StatusAffected
}

// Versions says in words which versions the issue affects.
func (k KnownIssue) Versions() string {
	var parts []string
	if k.AffectedFrom != "" {
		parts = append(parts, "affects "+k.AffectedFrom+" and later")
	}
	if len(k.FixedIn) > 0 {
		parts = append(parts, "fixed in "+strings.Join(k.FixedIn, ", "))
	}
	if len(parts) == 0 {
		parts = append(parts, "no fixed version known")
	}
	var b strings.Builder
	b.WriteString(strings.Join(parts, "; "))
	if k.Broker {
		b.WriteString(" (broker)")
	}
	return b.String()
}

type version3 struct{ major, minor, patch int }

func (a version3) less(b version3) bool {
	if a.major != b.major {
		return a.major < b.major
	}
	if a.minor != b.minor {
		return a.minor < b.minor
	}
	return a.patch < b.patch
}

// parseVersion reads "3.6.1", "3.6" or "3.6.1-ce" style versions.
func parseVersion(s string) (version3, bool) {
	s = strings.TrimPrefix(strings.TrimSpace(s), "v")
	if i := strings.IndexAny(s, "-+ "); i >= 0 {
		s = s[:i]
	}
	parts := strings.Split(s, ".")
	if len(parts) < 2 || len(parts) > 3 {
		return version3{}, false
	}
	var n [3]int
	for i, p := range parts {
		x, err := strconv.Atoi(p)
		if err != nil || x < 0 {
			return version3{}, false
		}
		n[i] = x
	}
	return version3{n[0], n[1], n[2]}, true
}

// issuesFor returns the known issues whose signature matches c.
func issuesFor(c audit.Cause) []KnownIssue {
	var out []KnownIssue
	for _, k := range KnownIssues {
		for _, kc := range k.Causes {
			if kc == c {
				out = append(out, k)
				break
			}
		}
	}
	return out
}

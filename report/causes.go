package report

import (
	"fmt"
	"strconv"
	"strings"

	"github.com/kaudit/kaudit/audit"
)

// Explain returns the postmortem's paragraph for c (audit.Cause.Explain:
// its meaning, then what it means for the records), or a fallback naming
// the cause.
func Explain(c audit.Cause) string {
	if t := c.Explain(); t != "" {
		return t
	}
	return fmt.Sprintf("Cause %q is not in this kaudit's vocabulary; see the finding's detail.", string(c))
}

// causePhrase is the phrase the summary paragraph uses for a cause.
func causePhrase(c audit.Cause) (string, bool) {
	d, ok := c.Doc()
	return d.Phrase, ok && d.Phrase != ""
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

// KnownIssues are the issues the postmortem cites.
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

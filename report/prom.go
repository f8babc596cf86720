package report

import (
	"cmp"
	"fmt"
	"io"
	"slices"
	"strings"

	"github.com/kaudit/kaudit/audit"
)

// Prom writes the report as Prometheus text exposition (format 0.0.4), for
// a node-exporter textfile collector or a push gateway:
//
//	kaudit_records_vanished{stage,cause}  input records with a loss finding
//	kaudit_verdict{verdict}               1 for the report's verdict, 0 for the others
//	kaudit_pending_records                records not processed yet
//	kaudit_open_transactions              open transactions the evidence shows (a lower bound)
//	kaudit_findings{severity}             findings by severity
//	kaudit_missing_evidence               pieces of evidence missing (the run is incomplete when > 0)
func Prom(w io.Writer, r *audit.Report) error {
	var b strings.Builder
	family := func(name, help string) {
		fmt.Fprintf(&b, "# HELP %s %s\n# TYPE %s gauge\n", name, help, name)
	}

	family("kaudit_records_vanished", "Input records that vanished, by the stage where they stopped and the cause.")
	type sc struct {
		stage audit.Stage
		cause audit.Cause
	}
	vanished := map[sc]int64{}
	for _, f := range r.Findings {
		if f.Severity == audit.SeverityLoss {
			vanished[sc{f.Stage, f.Cause}] += max(f.Count, 1)
		}
	}
	keys := make([]sc, 0, len(vanished))
	for k := range vanished {
		keys = append(keys, k)
	}
	slices.SortFunc(keys, func(a, b sc) int { return cmp.Or(cmp.Compare(a.stage, b.stage), cmp.Compare(a.cause, b.cause)) })
	for _, k := range keys {
		fmt.Fprintf(&b, "kaudit_records_vanished{stage=\"%s\",cause=\"%s\"} %d\n", labelValue(string(k.stage)), labelValue(string(k.cause)), vanished[k])
	}

	family("kaudit_verdict", "The audit's verdict: 1 for the current one, 0 for the others.")
	v := verdictOf(r)
	for _, name := range []audit.Verdict{audit.VerdictClean, audit.VerdictLoss, audit.VerdictAnomaly, audit.VerdictIncomplete} {
		n := 0
		if name == v {
			n = 1
		}
		fmt.Fprintf(&b, "kaudit_verdict{verdict=\"%s\"} %d\n", name, n)
	}

	family("kaudit_pending_records", "Input records at or above the committed offset: not processed yet (lag, not loss).")
	fmt.Fprintf(&b, "kaudit_pending_records %d\n", r.Summary.Pending)

	family("kaudit_open_transactions", "Open transactions the evidence shows, a lower bound: hanging-transaction findings plus one for each partition of the cut whose LSO is below its high watermark without one.")
	fmt.Fprintf(&b, "kaudit_open_transactions %d\n", openTransactions(r))

	family("kaudit_findings", "Findings by severity.")
	sev := severityCounts(r.Findings)
	for _, s := range []audit.Severity{audit.SeverityLoss, audit.SeverityAnomaly, audit.SeverityRisk, audit.SeverityInfo} {
		fmt.Fprintf(&b, "kaudit_findings{severity=\"%s\"} %d\n", s, sev[s])
	}

	family("kaudit_missing_evidence", "Pieces of evidence the audit could not read; the verdict is at best incomplete when above 0.")
	fmt.Fprintf(&b, "kaudit_missing_evidence %d\n", len(r.Summary.Missing))

	if _, err := io.WriteString(w, b.String()); err != nil {
		return fmt.Errorf("write metrics: %w", err)
	}
	return nil
}

// openTransactions counts hanging-transaction findings (one transaction
// each), plus one for each
// partition of the cut whose LSO is below its high watermark (an open
// transaction holds it) and that no hanging-transaction finding names.
func openTransactions(r *audit.Report) int64 {
	var n int64
	named := map[audit.TopicPartition]bool{}
	for _, f := range r.Findings {
		if f.Cause == audit.CauseHangingTransaction {
			n++
			named[audit.TopicPartition{Topic: f.Topic, Partition: f.Partition}] = true
		}
	}
	seen := map[audit.TopicPartition]bool{}
	for _, c := range r.Cut {
		tp := audit.TopicPartition{Topic: c.Topic, Partition: c.Partition}
		if c.LSO >= 0 && c.LSO < c.HW && !named[tp] && !seen[tp] {
			seen[tp] = true
			n++
		}
	}
	return n
}

// labelValue escapes a label value for the text format.
func labelValue(s string) string {
	return strings.NewReplacer(`\`, `\\`, `"`, `\"`, "\n", `\n`).Replace(strings.ToValidUTF8(s, "\uFFFD"))
}

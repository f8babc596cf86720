package report

import (
	"encoding/json"
	"fmt"
	"io"
	"strings"
	"text/tabwriter"
	"time"

	"github.com/kaudit/kaudit/audit/txns"
)

// TxnsJSON writes kaudit txns' census as indented JSON.
func TxnsJSON(w io.Writer, doc *txns.Census) error {
	enc := json.NewEncoder(w)
	enc.SetIndent("", "  ")
	return enc.Encode(doc)
}

// fmtMillis is a time in ms since the epoch as RFC 3339, or "-".
func fmtMillis(ms int64) string {
	if ms <= 0 {
		return "-"
	}
	return time.UnixMilli(ms).UTC().Format(time.RFC3339)
}

// TxnsTable writes kaudit txns' table: the app's transactional ids, the
// producers on its partitions, the open transactions (hanging ones said
// why), the findings, notes, missing evidence and the verdict.
func TxnsTable(w io.Writer, doc *txns.Census) error {
	tw := tabwriter.NewWriter(w, 0, 4, 2, ' ', 0)
	fmt.Fprintf(tw, "app %s, %s, at %s\n\n", doc.AppID, doc.Source, doc.GeneratedAt.Format(time.RFC3339))

	fmt.Fprintf(tw, "transactional ids %s-* (%d)\n", doc.AppID, len(doc.Transactions))
	if len(doc.Transactions) > 0 {
		fmt.Fprintln(tw, "ID\tSTATE\tPRODUCER\tEPOCH\tTIMEOUT\tSTARTED\tPARTITIONS")
		for _, t := range doc.Transactions {
			var parts []string
			for _, tp := range t.Partitions {
				parts = append(parts, tp.String())
			}
			ps := strings.Join(parts, ",")
			if ps == "" {
				ps = "-"
			}
			fmt.Fprintf(tw, "%s\t%s\t%d\t%d\t%s\t%s\t%s\n", t.TransactionalID, t.State, t.ProducerID, t.ProducerEpoch,
				time.Duration(t.TimeoutMillis)*time.Millisecond, fmtMillis(t.StartTimestamp), ps)
		}
	}

	fmt.Fprintf(tw, "\nproducers on the app's partitions (%d)\n", len(doc.Producers))
	if len(doc.Producers) > 0 {
		fmt.Fprintln(tw, "PARTITION\tPRODUCER\tEPOCH\tLAST SEQUENCE\tLAST WRITE\tCOORDINATOR EPOCH\tOPEN TXN FROM")
		for _, p := range doc.Producers {
			from := "-"
			if p.CurrentTxnStartOffset >= 0 {
				from = fmt.Sprint(p.CurrentTxnStartOffset)
			}
			fmt.Fprintf(tw, "%s/%d\t%d\t%d\t%d\t%s\t%d\t%s\n", p.Topic, p.Partition, p.ProducerID, p.ProducerEpoch,
				p.LastSequence, fmtMillis(p.LastTimestamp), p.CoordinatorEpoch, from)
		}
	}

	hanging := 0
	for _, ot := range doc.Open {
		if ot.Hanging {
			hanging++
		}
	}
	fmt.Fprintf(tw, "\nopen transactions (%d, %d hanging; max transaction timeout %s)\n", len(doc.Open), hanging,
		time.Duration(doc.MaxTxnTimeout)*time.Millisecond)
	if len(doc.Open) > 0 {
		fmt.Fprintln(tw, "PARTITION\tFROM OFFSET\tID\tPRODUCER\tEPOCH\tCOORDINATOR\tOPEN FOR\tHANGING")
		for _, ot := range doc.Open {
			id, state, dur, h := ot.TransactionalID, ot.State, "-", "no"
			if id == "" {
				id = "-"
			}
			if state == "" {
				state = "none"
			}
			if ot.OpenMillis >= 0 {
				dur = txns.RoundMillis(ot.OpenMillis).String()
			}
			if ot.Hanging {
				h = "yes: " + ot.Reason
			}
			fmt.Fprintf(tw, "%s/%d\t%d\t%s\t%d\t%d\t%s\t%s\t%s\n", ot.Topic, ot.Partition, ot.FirstOffset, id, ot.ProducerID,
				ot.ProducerEpoch, state, dur, h)
		}
	}

	fmt.Fprintf(tw, "\nfindings (%d)\n", len(doc.Findings))
	for _, f := range doc.Findings {
		where := fmt.Sprintf("%s/%d@%d", f.Topic, f.Partition, f.Offset)
		if f.Topic == "" {
			where = "-"
		}
		id := f.TransactionalID
		if id == "" {
			id = "-"
		}
		fmt.Fprintf(tw, "%s\t%s\t%s\t%s\tproducer %d epoch %d\t%s\n", f.Severity, f.Cause, where, id, f.ProducerID, f.ProducerEpoch, f.Detail)
	}
	for _, n := range doc.Notes {
		fmt.Fprintf(tw, "\nnote: %s\n", n)
	}
	for _, m := range doc.Missing {
		fmt.Fprintf(tw, "\nmissing evidence: %s\n", m)
	}
	fmt.Fprintf(tw, "\nverdict: %s\n", doc.Verdict)
	return tw.Flush()
}

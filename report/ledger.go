package report

import (
	"encoding/csv"
	"fmt"
	"io"
	"strconv"

	"github.com/olekukonko/tablewriter"
	"github.com/olekukonko/tablewriter/tw"

	"github.com/kaudit/kaudit/audit"
)

// LedgerJSON writes `kaudit ledger --format json`, shaped
// {"topic", "partitions": [{"partition", "log_start", "lso", "hw", "fates",
// "transactions", "findings", "offsets"?}]}. Findings print as [] when
// there are none; offsets (and txns, values) only when the ledger holds
// them.
func LedgerJSON(w io.Writer, l *audit.TopicLedger) error {
	type record struct {
		Offset    int64 `json:"offset"`
		Key       value `json:"key"`
		Value     value `json:"value"`
		Timestamp int64 `json:"timestamp"`
	}
	type txn struct {
		ProducerID      opt[int64]    `json:"producer_id"`
		ProducerEpoch   opt[int16]    `json:"producer_epoch"`
		TransactionalID string        `json:"transactional_id,omitempty"`
		FirstOffset     opt[int64]    `json:"first_offset"`
		LastOffset      opt[int64]    `json:"last_offset"`
		MarkerOffset    opt[int64]    `json:"marker_offset"`
		Outcome         audit.Outcome `json:"outcome"`
		Records         int64         `json:"records"`
		FirstTimestamp  opt[int64]    `json:"first_timestamp"`
		MarkerTimestamp opt[int64]    `json:"marker_timestamp"`
	}
	type offset struct {
		Offset        int64      `json:"offset"`
		Fate          audit.Fate `json:"fate"`
		ProducerID    opt[int64] `json:"producer_id"`
		ProducerEpoch opt[int16] `json:"producer_epoch"`
		Transactional bool       `json:"transactional"`
		Control       bool       `json:"control"`
	}
	type partition struct {
		Partition    int32            `json:"partition"`
		LogStart     int64            `json:"log_start"`
		LSO          int64            `json:"lso"`
		HW           int64            `json:"hw"`
		Fates        audit.FateCounts `json:"fates"`
		Transactions audit.TxnCounts  `json:"transactions"`
		Findings     []wireFinding    `json:"findings"`
		Txns         []txn            `json:"txns,omitempty"`
		Offsets      []offset         `json:"offsets,omitempty"`
		Values       []record         `json:"values,omitempty"`
	}
	doc := struct {
		Schema     int         `json:"schema"`
		Topic      string      `json:"topic"`
		Partitions []partition `json:"partitions"`
	}{Schema: jsonSchema, Topic: l.Topic, Partitions: make([]partition, len(l.Partitions))}
	for i, p := range l.Partitions {
		doc.Partitions[i] = partition{Partition: p.Partition, LogStart: p.LogStart, LSO: p.LSO, HW: p.HW,
			Fates: p.Fates, Transactions: p.Transactions, Findings: wireFindings(p.Findings)}
		for _, x := range p.Txns {
			doc.Partitions[i].Txns = append(doc.Partitions[i].Txns, txn{opt[int64]{x.ProducerID}, opt[int16]{x.ProducerEpoch},
				x.TransactionalID, opt[int64]{x.FirstOffset}, opt[int64]{x.LastOffset}, opt[int64]{x.MarkerOffset},
				x.Outcome, x.Records, opt[int64]{x.FirstTimestamp}, opt[int64]{x.MarkerTimestamp}})
		}
		for _, o := range p.Offsets {
			doc.Partitions[i].Offsets = append(doc.Partitions[i].Offsets, offset{o.Offset, o.Fate,
				opt[int64]{o.ProducerID}, opt[int16]{o.ProducerEpoch}, o.Transactional, o.Control})
		}
		for _, v := range p.Values {
			doc.Partitions[i].Values = append(doc.Partitions[i].Values, record{v.Offset, value(v.Key), value(v.Value), v.Timestamp})
		}
	}
	b, err := encodeIndented(&doc)
	if err != nil {
		return fmt.Errorf("encode ledger %s: %w", l.Topic, err)
	}
	return write(w, b, "write ledger "+l.Topic)
}

// ledgerColumns is LedgerCSV's header for per-partition rows.
var ledgerColumns = []string{"topic", "partition", "log_start", "lso", "hw",
	"committed", "aborted", "marker", "open", "purged", "compacted", "gap",
	"txns_committed", "txns_aborted", "txns_open", "findings"}

// ledgerHeader is the ledger table's header: the offsets of each fate
// are counted ("committed offsets", never a bare "committed", which in
// the cut is the group's committed offset).
var ledgerHeader = []string{"partition", "log start", "lso", "hw",
	"committed offsets", "aborted offsets", "markers", "open offsets", "purged offsets", "compacted offsets", "gaps",
	"txns committed", "txns aborted", "txns open", "findings"}

// ledgerOffsetColumns is LedgerCSV's header when the ledger lists offsets.
var ledgerOffsetColumns = []string{"topic", "partition", "offset", "fate", "producer_id", "producer_epoch", "transactional", "control"}

// LedgerCSV writes one row per partition with its offsets counted by fate
// and its transactions by outcome. When any partition lists offsets
// (`--offsets A-B`) it writes one row per listed offset instead.
func LedgerCSV(w io.Writer, l *audit.TopicLedger) error {
	cw := csv.NewWriter(w)
	withOffsets := false
	for _, p := range l.Partitions {
		withOffsets = withOffsets || len(p.Offsets) > 0
	}
	if withOffsets {
		if err := cw.Write(ledgerOffsetColumns); err != nil {
			return fmt.Errorf("write ledger csv: %w", err)
		}
		for _, p := range l.Partitions {
			for _, o := range p.Offsets {
				if err := cw.Write(csvCells(l.Topic, strconv.Itoa(int(p.Partition)), num(o.Offset), o.Fate.String(),
					num(o.ProducerID), strconv.Itoa(int(o.ProducerEpoch)), strconv.FormatBool(o.Transactional),
					strconv.FormatBool(o.Control))); err != nil {
					return fmt.Errorf("write ledger csv: %w", err)
				}
			}
		}
	} else {
		if err := cw.Write(ledgerColumns); err != nil {
			return fmt.Errorf("write ledger csv: %w", err)
		}
		for _, p := range l.Partitions {
			if err := cw.Write(csvCells(append([]string{l.Topic}, ledgerCells(p)...)...)); err != nil {
				return fmt.Errorf("write ledger csv: %w", err)
			}
		}
	}
	cw.Flush()
	if err := cw.Error(); err != nil {
		return fmt.Errorf("write ledger csv: %w", err)
	}
	return nil
}

// ledgerCells are a partition's ledgerColumns after the topic.
func ledgerCells(p audit.PartitionLedger) []string {
	f, t := p.Fates, p.Transactions
	return []string{strconv.Itoa(int(p.Partition)), num(p.LogStart), num(p.LSO), num(p.HW),
		num(f.Committed), num(f.Aborted), num(f.Marker), num(f.Open), num(f.Purged), num(f.Compacted), num(f.Gap),
		num(t.Committed), num(t.Aborted), num(t.Open), strconv.Itoa(len(p.Findings))}
}

// LedgerTable writes the ledger for a terminal: one row per partition,
// then the listed offsets and the findings, when there are any.
func LedgerTable(w io.Writer, l *audit.TopicLedger) error { return LedgerTableWith(w, l, false) }

// ledgerTable is a table of the ledger: a box on a terminal, aligned
// lines (every cell whole, as Kafka's tools print) elsewhere.
type ledgerTable struct {
	w      io.Writer
	plain  bool
	header []string
	rows   [][]string
}

func (t *ledgerTable) Header(h ...any) {
	for _, x := range h {
		switch v := x.(type) {
		case []string:
			t.header = append(t.header, v...)
		case string:
			t.header = append(t.header, v)
		}
	}
}

func (t *ledgerTable) Append(row []string) error { t.rows = append(t.rows, row); return nil }

func (t *ledgerTable) Render() error {
	if t.plain {
		rows := make([][]string, len(t.rows))
		for i, r := range t.rows {
			rows[i] = make([]string, len(r))
			for j, c := range r {
				rows[i][j] = flat(c)
			}
		}
		return plainTable(t.w, t.header, rows)
	}
	bt := tablewriter.NewTable(t.w, tablewriter.WithRowAutoWrap(tw.WrapNone))
	bt.Header(t.header)
	for _, r := range t.rows {
		if err := bt.Append(r); err != nil {
			return err
		}
	}
	return bt.Render()
}

// LedgerTableWith is LedgerTable, plain (aligned lines, no box) where the
// output is no terminal. "committed" counts records of that fate here;
// the cut's committed is an offset, the group's.
func LedgerTableWith(w io.Writer, l *audit.TopicLedger, plain bool) error {
	if _, err := fmt.Fprintf(w, "ledger of %s: %d partitions (offsets counted by fate)\n", l.Topic, len(l.Partitions)); err != nil {
		return fmt.Errorf("write ledger: %w", err)
	}
	newTable := func() *ledgerTable { return &ledgerTable{w: w, plain: plain} }
	t := newTable()
	t.Header(ledgerHeader)
	var findings []audit.Finding
	offsets := false
	for _, p := range l.Partitions {
		if err := t.Append(ledgerCells(p)); err != nil {
			return fmt.Errorf("build ledger table: %w", err)
		}
		findings = append(findings, p.Findings...)
		offsets = offsets || len(p.Offsets) > 0
	}
	if err := t.Render(); err != nil {
		return fmt.Errorf("write ledger: %w", err)
	}
	if offsets {
		t := newTable()
		t.Header(ledgerOffsetColumns[1:])
		for _, p := range l.Partitions {
			for _, o := range p.Offsets {
				if err := t.Append([]string{strconv.Itoa(int(p.Partition)), num(o.Offset), o.Fate.String(),
					num(o.ProducerID), strconv.Itoa(int(o.ProducerEpoch)), strconv.FormatBool(o.Transactional),
					strconv.FormatBool(o.Control)}); err != nil {
					return fmt.Errorf("build ledger table: %w", err)
				}
			}
		}
		if err := t.Render(); err != nil {
			return fmt.Errorf("write ledger: %w", err)
		}
	}
	var values [][]string
	for _, p := range l.Partitions {
		for _, v := range p.Values {
			values = append(values, []string{strconv.Itoa(int(p.Partition)), num(v.Offset), msStamp(v.Timestamp),
				wrapText(flat(v.Key), 40), wrapText(flat(v.Value), DefaultWidth-70)})
		}
	}
	if len(values) > 0 {
		// the decoded records of the offsets listed (--key-serde, --value-serde)
		t := newTable()
		t.Header("partition", "offset", "timestamp", "key", "value")
		for _, row := range values {
			if err := t.Append(row); err != nil {
				return fmt.Errorf("build ledger table: %w", err)
			}
		}
		if err := t.Render(); err != nil {
			return fmt.Errorf("write ledger: %w", err)
		}
	}
	if len(findings) > 0 {
		audit.SortFindings(findings)
		t := newTable()
		t.Header("cause", "severity", "partition", "offset", "count", "detail")
		for _, f := range findings[:min(len(findings), tableRows)] {
			if err := t.Append([]string{string(f.Cause), string(f.Severity), strconv.Itoa(int(f.Partition)),
				num(f.Offset), num(f.Count), wrapText(flat(f.Detail), DefaultWidth-60)}); err != nil {
				return fmt.Errorf("build ledger table: %w", err)
			}
		}
		if err := t.Render(); err != nil {
			return fmt.Errorf("write ledger: %w", err)
		}
		if n := len(findings) - tableRows; n > 0 {
			if _, err := fmt.Fprintf(w, "… %d more findings not shown (use --format json)\n", n); err != nil {
				return fmt.Errorf("write ledger: %w", err)
			}
		}
	}
	return nil
}

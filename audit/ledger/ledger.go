package ledger

import (
	"context"
	"fmt"
	"iter"
	"sort"
	"time"

	"github.com/kaudit/kaudit/audit"
)

// Options tune one partition's ledger.
type Options struct {
	// Compacted says the topic's cleanup.policy includes compact: missing
	// offsets are then compacted, not gaps.
	Compacted bool
	// MaxTxnTimeout: an open transaction older than this is hanging.
	MaxTxnTimeout time.Duration
	// Now is the time the evidence describes (the capture time offline).
	Now time.Time
	// TxnIDs maps producer ids to transactional ids, where known.
	TxnIDs map[int64]string
	// TxnStarts maps producer ids to when their coordinator says the
	// transaction now open began (ms), where known: an open transaction's
	// age is taken from it, never from its records' timestamps, which are
	// the app's event times (a Streams app writes its inputs' timestamps).
	// An open transaction whose start is not known is not judged hanging.
	TxnStarts map[int64]int64
	// CrossCheck compares the derived committed view with the broker's
	// read_committed view when the source can give it: from the reads
	// themselves (audit.IndexedReader), else by reading the partition a
	// second time (audit.CommittedReader).
	CrossCheck bool
	// KeepOffsets keeps per-offset detail for offsets in [From, To).
	KeepFrom, KeepTo int64
	// Buffer bounds how many records may wait for their transaction's
	// marker before Walk switches to a second read (0: 200,000).
	Buffer int
}

// Run is a range of consecutive offsets with one fate and one batch origin.
type Run struct {
	Start, End    int64 // [Start, End)
	Fate          audit.Fate
	ProducerID    int64
	ProducerEpoch int16
	Transactional bool
	Control       bool
}

// Ledger is one partition's fate ledger.
type Ledger struct {
	TP       audit.TopicPartition
	Offsets  audit.PartitionOffsets
	Runs     []Run
	Txns     []audit.Txn
	Findings []audit.Finding
	Counts   audit.FateCounts
}

// Fate returns the fate of one offset.
func (l *Ledger) Fate(off int64) audit.Fate {
	i := sort.Search(len(l.Runs), func(i int) bool { return l.Runs[i].End > off })
	if i < len(l.Runs) && l.Runs[i].Start <= off {
		return l.Runs[i].Fate
	}
	if off < l.Offsets.LogStart {
		return audit.FatePurged
	}
	return audit.FateGap
}

// Summary returns the ledger in `kaudit ledger`'s JSON shape.
func (l *Ledger) Summary(opts Options) audit.PartitionLedger {
	pl := audit.PartitionLedger{
		Partition: l.TP.Partition, LogStart: l.Offsets.LogStart, LSO: l.Offsets.LSO, HW: l.Offsets.HW,
		Fates: l.Counts, Findings: l.Findings, Txns: l.Txns,
	}
	if pl.Findings == nil {
		pl.Findings = []audit.Finding{}
	}
	for _, t := range l.Txns {
		switch t.Outcome {
		case audit.OutcomeCommitted:
			pl.Transactions.Committed++
		case audit.OutcomeAborted:
			pl.Transactions.Aborted++
		case audit.OutcomeOpen:
			pl.Transactions.Open++
		}
	}
	if opts.KeepTo > opts.KeepFrom {
		for _, r := range l.Runs {
			for o := max(r.Start, opts.KeepFrom); o < min(r.End, opts.KeepTo); o++ {
				pl.Offsets = append(pl.Offsets, audit.OffsetFate{Offset: o, Fate: r.Fate, ProducerID: r.ProducerID,
					ProducerEpoch: r.ProducerEpoch, Transactional: r.Transactional, Control: r.Control})
			}
		}
	}
	return pl
}

// Entry is one data record with its fate, as Walk yields it.
type Entry struct {
	Record audit.Record
	Fate   audit.Fate
	Txn    *audit.Txn // the transaction that held it; nil for non-transactional data
}

// Build reads the whole partition and returns its ledger.
func Build(ctx context.Context, src audit.RecordSource, tp audit.TopicPartition, opts Options) (*Ledger, error) {
	var l *Ledger
	for _, err := range Walk(ctx, src, tp, opts, &l) {
		if err != nil {
			return l, err
		}
	}
	return l, nil
}

// Walk yields tp's data records (not markers) in offset order with their
// fates, reading the partition once where transactions are short (the
// cross-check included, when the source is an audit.IndexedReader). When it
// ends without error, *out holds the partition's ledger. Errors are final.
func Walk(ctx context.Context, src audit.RecordSource, tp audit.TopicPartition, opts Options, out **Ledger) iter.Seq2[Entry, error] {
	return func(yield func(Entry, error) bool) {
		offs, err := src.Offsets(ctx, tp)
		if err != nil {
			yield(Entry{}, fmt.Errorf("list offsets of %s: %w", tp, err))
			return
		}
		if offs.LogStart < 0 || offs.LogStart > offs.HW {
			yield(Entry{}, fmt.Errorf("list offsets of %s: log start %d and high watermark %d contradict each other: %w", tp, offs.LogStart, offs.HW, audit.ErrCorrupt))
			return
		}
		// offsets listed one request at a time may straddle a write
		offs.LSO = min(max(offs.LSO, offs.LogStart), offs.HW)
		w := newWalker(tp, offs, opts)
		if out != nil {
			*out = w.l
		}
		var (
			idx  *audit.CommittedIndex // the broker's view, learnt from the same reads
			recs iter.Seq2[audit.Record, error]
		)
		if ir, ok := src.(audit.IndexedReader); ok && opts.CrossCheck {
			idx = &audit.CommittedIndex{}
			recs = ir.RecordsIndexed(ctx, tp, offs.LogStart, offs.HW, idx)
		} else {
			recs = src.Records(ctx, tp, offs.LogStart, offs.HW)
		}
		if !w.read(recs, yield) {
			return
		}
		w.finish()
		if !w.drain(ctx, src, yield) {
			return
		}
		if opts.CrossCheck {
			if idx != nil {
				w.checkIndex(*idx)
			} else if cr, ok := src.(audit.CommittedReader); ok {
				if err := w.crossCheck(ctx, cr); err != nil {
					yield(Entry{}, err)
					return
				}
			}
		}
		w.l.Findings = append(w.l.Findings, w.findings...)
		audit.SortFindings(w.l.Findings)
	}
}

// TxnStarts asks the source's transaction coordinators when the
// transactions now open of the transactional ids with prefix began
// (Options.TxnStarts); nil where the source cannot say.
func TxnStarts(ctx context.Context, src audit.Source, prefix string) map[int64]int64 {
	txns, err := src.Transactions(ctx, prefix)
	if err != nil {
		return nil
	}
	return StartsOf(txns)
}

// StartsOf maps the producer ids of txns whose transaction is open to
// when it began, by their coordinator (Options.TxnStarts).
func StartsOf(txns []audit.Transaction) map[int64]int64 {
	var out map[int64]int64
	for _, t := range txns {
		if t.StartTimestamp > 0 { // -1 when none is open
			if out == nil {
				out = map[int64]int64{}
			}
			out[t.ProducerID] = t.StartTimestamp
		}
	}
	return out
}

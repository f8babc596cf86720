// Package ledger classifies every offset of a partition: the fate ledger.
//
// Walk reads one partition raw (read_uncommitted, control records kept) and
// yields its data records in offset order with their fate: committed,
// aborted or open. Build runs Walk to the end and returns a Ledger: every
// offset in [0, high watermark) in run-length form (committed, aborted,
// marker, open, purged, compacted, gap), the transactions rebuilt from the
// markers, and the findings the evidence supports (offset gaps, hanging
// transactions, data with no marker below the LSO, markers with no data,
// and disagreements with the broker's own read_committed view).
package ledger

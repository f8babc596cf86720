package audit

import "fmt"

// Fate is what became of one offset of a partition; every offset in
// [0, high watermark) has exactly one.
type Fate uint8

const (
	FateCommitted Fate = iota // data in a committed transaction, or non-transactional data below the LSO
	FateAborted               // data in an aborted transaction
	FateMarker                // a COMMIT/ABORT control record
	FateOpen                  // transactional data at or after the LSO with no marker yet
	FatePurged                // below the log-start offset
	FateCompacted             // missing inside a compacted topic
	FateGap                   // missing inside a non-compacted topic above log start
)

// Fates lists every fate in the order reports print them.
var Fates = []Fate{FateCommitted, FateAborted, FateMarker, FateOpen, FatePurged, FateCompacted, FateGap}

var fateNames = [...]string{"committed", "aborted", "marker", "open", "purged", "compacted", "gap"}

func (f Fate) String() string {
	if int(f) < len(fateNames) {
		return fateNames[f]
	}
	return "unknown"
}

// MarshalText makes a Fate print as its name in JSON.
func (f Fate) MarshalText() ([]byte, error) { return []byte(f.String()), nil }

// Outcome is how a transaction ended on one partition.
type Outcome string

const (
	OutcomeCommitted Outcome = "committed"
	OutcomeAborted   Outcome = "aborted"
	OutcomeOpen      Outcome = "open"
)

// UnmarshalText reads a fate's name back.
func (f *Fate) UnmarshalText(b []byte) error {
	for i, n := range fateNames {
		if n == string(b) {
			*f = Fate(i)
			return nil
		}
	}
	return fmt.Errorf("parse fate %q: unknown", b)
}

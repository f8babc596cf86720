package diff

import (
	"context"
	"fmt"
	"strings"

	"github.com/kaudit/kaudit/audit"
	"github.com/kaudit/kaudit/audit/segment"
	"github.com/kaudit/kaudit/audit/snapshot"
)

// OpenSnapshot opens a capture with what opening it found wrong (a file
// whose hash does not match). A capture that cannot be opened is an
// audit.NotRunError.
func OpenSnapshot(ctx context.Context, dir string) (Evidence, error) {
	s, err := snapshot.OpenContext(ctx, dir)
	if err != nil {
		return Evidence{}, audit.NotRunError{Err: err} // it says "open snapshot"
	}
	return Evidence{Source: s, Problems: s.Problems()}, nil
}

// OpenLogDirs opens broker log dirs, one per broker or data dir, with what
// opening them found wrong: unreadable partitions, torn tails of active
// segments, and with several dirs the ranges where replicas of one
// partition diverge; and what log dirs cannot know. Dirs that cannot be
// opened are an audit.NotRunError.
func OpenLogDirs(ctx context.Context, dirs ...string) (Evidence, error) {
	d, err := segment.OpenDirs(dirs...)
	if err != nil {
		return Evidence{}, audit.NotRunError{Err: wrapOnce("open log dirs", err)}
	}
	problems := d.Problems()
	for _, tt := range d.TornTails() {
		// the bytes of a torn batch are evidence that cannot be read: a
		// broker's recovery would truncate them, an audit cannot vouch
		problems = append(problems, audit.UnreadablePartition(tt.TP, fmt.Sprintf("%s: %d bytes from byte %d are a torn or corrupt batch at the end of the log (a broker crash mid-write); what they held cannot be read", tt.File, tt.Bytes, tt.Pos)))
	}
	if len(dirs) > 1 {
		// replicas of one partition in several brokers' dirs: compare them
		div, err := d.Divergence(ctx)
		if err != nil {
			return Evidence{}, audit.NotRunError{Err: wrapOnce("compare replicas", err)}
		}
		problems = append(problems, div...)
	}
	notes := d.Unknowns(ctx)
	if n := d.SchemasNote(); n != "" {
		notes = append(notes, n)
	}
	return Evidence{Source: d, Problems: problems, Notes: notes}, nil
}

// wrapOnce wraps err with prefix unless its message already starts so.
func wrapOnce(prefix string, err error) error {
	if strings.HasPrefix(err.Error(), prefix+":") {
		return err
	}
	return fmt.Errorf("%s: %w", prefix, err)
}

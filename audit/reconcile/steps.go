package reconcile

// What a table's stateless steps did with its inputs (filtered, failed).

import (
	"fmt"
	"strings"

	"github.com/kaudit/kaudit/audit"
)

// stepTally is what a table's steps (Table.Steps) did with its inputs:
// the inputs they filtered out on the partition being read (reported as
// one filtered finding per source partition), and the inputs they could
// not be evaluated on (the table is then not judged: an input whose
// elements are unknown may be what any key's state holds).
type stepTally struct {
	filtered      int64
	firstFiltered []int64
	failures      int64
	firstFailure  string
	failedAt      []string
}

// filter counts an input the steps emit nothing for.
func (s *stepTally) filter(offset int64) {
	s.filtered++
	if len(s.firstFiltered) < 10 {
		s.firstFiltered = append(s.firstFiltered, offset)
	}
}

// failed counts an input the steps (or select_key) failed on.
func (s *stepTally) failed(tp audit.TopicPartition, offset int64, err error) {
	s.failures++
	if s.firstFailure == "" {
		s.firstFailure = err.Error()
	}
	if len(s.failedAt) < 5 {
		s.failedAt = append(s.failedAt, fmt.Sprintf("%s@%d", tp, offset))
	}
}

// unjudged says why the steps leave the table unjudged, "" when they
// were evaluated on every input.
func (s *stepTally) unjudged(t *Table) string {
	if s.failures == 0 {
		return ""
	}
	what := "its select_key"
	if t.Steps != nil {
		what = "its steps"
	}
	more := ""
	if s.failures > int64(len(s.failedAt)) {
		more = fmt.Sprintf(" and %d more", s.failures-int64(len(s.failedAt)))
	}
	return fmt.Sprintf("%s failed on %d consumed inputs (%s%s; the first: %s), so what they emit is not known and the table is not judged",
		what, s.failures, strings.Join(s.failedAt, ", "), more, s.firstFailure)
}

// srcShift is where sourcePart puts a source topic's index: an input
// keeps its source partition in 32 bits with the topic it comes from,
// for a table whose source merges several (KStream#merge).
const srcShift = 20

// sourcePart encodes partition p of the table's source topic i
// (Table.Sources) as inputs keep it; for the first (or only) source it
// is p itself.
func sourcePart(i int, p int32) int32 { return int32(i)<<srcShift | p }

// tpOf decodes an input's source partition (sourcePart).
func (ts *tableState) tpOf(part int32) audit.TopicPartition {
	i := int(part >> srcShift)
	topic := ts.t.Source
	if i > 0 && i <= len(ts.t.Merged) {
		topic = ts.t.Merged[i-1]
	}
	return audit.TopicPartition{Topic: topic, Partition: part & (1<<srcShift - 1)}
}

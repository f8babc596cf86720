package sourcetest_test

import (
	"testing"
	"time"

	"github.com/kaudit/kaudit/audit"
	"github.com/kaudit/kaudit/audit/sourcetest"
	"github.com/kaudit/kaudit/internal/fakeapp"
)

// TestMemory runs the suite on the in-memory source the other packages'
// tests use, so that what they learn from it holds of the real sources.
func TestMemory(t *testing.T) {
	sourcetest.RunSourceTests(t, func(t *testing.T, recs []audit.Record) audit.RecordSource {
		m := fakeapp.NewMemory(time.Unix(1_700_000_100, 0))
		m.AddTopic(audit.TopicInfo{Name: sourcetest.Topic, Partitions: 2})
		m.Append(recs...)
		m.SetOffsets(audit.TopicPartition{Topic: sourcetest.Topic, Partition: 0}, sourcetest.Offsets0)
		m.SetOffsets(audit.TopicPartition{Topic: sourcetest.Topic, Partition: 1}, sourcetest.Offsets1)
		return m
	})
}

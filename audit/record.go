package audit

import (
	"cmp"
	"fmt"
	"strconv"
	"strings"
)

// TopicPartition names one partition of a topic.
type TopicPartition struct {
	Topic     string `json:"topic"`
	Partition int32  `json:"partition"`
}

func (tp TopicPartition) String() string { return tp.Topic + "/" + strconv.Itoa(int(tp.Partition)) }

// CompareTopicPartitions orders partitions by topic, then partition number.
func CompareTopicPartitions(a, b TopicPartition) int {
	if c := strings.Compare(a.Topic, b.Topic); c != 0 {
		return c
	}
	return cmp.Compare(a.Partition, b.Partition)
}

// ParseTopicPartition parses "topic/partition" as printed by String.
func ParseTopicPartition(s string) (TopicPartition, error) {
	i := strings.LastIndexByte(s, '/')
	if i <= 0 {
		return TopicPartition{}, fmt.Errorf("parse topic partition %q: want topic/partition", s)
	}
	p, err := strconv.ParseInt(s[i+1:], 10, 32)
	if err != nil || p < 0 {
		return TopicPartition{}, fmt.Errorf("parse topic partition %q: bad partition", s)
	}
	return TopicPartition{Topic: s[:i], Partition: int32(p)}, nil
}

// Header is one record header.
type Header struct {
	Key   string `json:"key"`
	Value []byte `json:"value"`
}

// Batch is the v2 record-batch header a record was written in.
type Batch struct {
	BaseOffset           int64
	LastOffsetDelta      int32
	PartitionLeaderEpoch int32
	ProducerID           int64 // -1 when the producer is not idempotent
	ProducerEpoch        int16
	BaseSequence         int32
	Transactional        bool
	Control              bool
	LogAppendTime        bool  // timestamp type: true for LogAppendTime, false for CreateTime
	MaxTimestamp         int64 // milliseconds since the epoch
	Compression          string
}

// LastOffset is the offset of the batch's last record as written (compaction
// may have removed it since).
func (b Batch) LastOffset() int64 { return b.BaseOffset + int64(b.LastOffsetDelta) }

// MarkerType is the type of a transaction control record.
type MarkerType int8

const (
	MarkerAbort  MarkerType = 0
	MarkerCommit MarkerType = 1
)

func (m MarkerType) String() string {
	switch m {
	case MarkerAbort:
		return "ABORT"
	case MarkerCommit:
		return "COMMIT"
	}
	return "UNKNOWN(" + strconv.Itoa(int(m)) + ")"
}

// Marker is a decoded control record (COMMIT or ABORT).
type Marker struct {
	Type             MarkerType
	CoordinatorEpoch int32
}

// Record is one record of a partition as written, read with
// read_uncommitted: data of every transaction and control records alike.
// Key and Value are nil for a null key or value.
type Record struct {
	Topic     string
	Partition int32
	Offset    int64
	Key       []byte
	Value     []byte
	Headers   []Header
	Timestamp int64 // milliseconds since the epoch
	Batch     Batch
	Marker    *Marker // set for control records
}

// TP returns the record's topic partition.
func (r *Record) TP() TopicPartition { return TopicPartition{r.Topic, r.Partition} }

// IsControl reports whether the record is a transaction marker.
func (r *Record) IsControl() bool { return r.Batch.Control }

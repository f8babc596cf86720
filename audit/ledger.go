package audit

// Txn is one transaction of one producer on one partition, rebuilt from the
// data batches and the control record that ended it.
type Txn struct {
	ProducerID      int64   `json:"producer_id"`
	ProducerEpoch   int16   `json:"producer_epoch"`
	TransactionalID string  `json:"transactional_id,omitempty"`
	FirstOffset     int64   `json:"first_offset"`
	LastOffset      int64   `json:"last_offset"`   // last data offset
	MarkerOffset    int64   `json:"marker_offset"` // -1 while open
	Outcome         Outcome `json:"outcome"`
	Records         int64   `json:"records"`
	FirstTimestamp  int64   `json:"first_timestamp"`
	MarkerTimestamp int64   `json:"marker_timestamp"`
}

// OffsetFate is one offset's fate with the batch evidence behind it.
type OffsetFate struct {
	Offset        int64 `json:"offset"`
	Fate          Fate  `json:"fate"`
	ProducerID    int64 `json:"producer_id"`
	ProducerEpoch int16 `json:"producer_epoch"`
	Transactional bool  `json:"transactional"`
	Control       bool  `json:"control"`
}

// FateCounts counts offsets by fate.
type FateCounts struct {
	Committed int64 `json:"committed"`
	Aborted   int64 `json:"aborted"`
	Marker    int64 `json:"marker"`
	Open      int64 `json:"open"`
	Purged    int64 `json:"purged"`
	Compacted int64 `json:"compacted"`
	Gap       int64 `json:"gap"`
}

// Add counts n offsets of fate f.
func (c *FateCounts) Add(f Fate, n int64) {
	switch f {
	case FateCommitted:
		c.Committed += n
	case FateAborted:
		c.Aborted += n
	case FateMarker:
		c.Marker += n
	case FateOpen:
		c.Open += n
	case FatePurged:
		c.Purged += n
	case FateCompacted:
		c.Compacted += n
	case FateGap:
		c.Gap += n
	}
}

// Total is the number of offsets counted.
func (c FateCounts) Total() int64 {
	return c.Committed + c.Aborted + c.Marker + c.Open + c.Purged + c.Compacted + c.Gap
}

// TxnCounts counts transactions by outcome.
type TxnCounts struct {
	Committed int64 `json:"committed"`
	Aborted   int64 `json:"aborted"`
	Open      int64 `json:"open"`
}

// PartitionLedger is the fate ledger of one partition: `kaudit ledger`'s
// JSON per partition.
type PartitionLedger struct {
	Partition    int32        `json:"partition"`
	LogStart     int64        `json:"log_start"`
	LSO          int64        `json:"lso"`
	HW           int64        `json:"hw"`
	Fates        FateCounts   `json:"fates"`
	Transactions TxnCounts    `json:"transactions"`
	Findings     []Finding    `json:"findings"`
	Txns         []Txn        `json:"txns,omitempty"`
	Offsets      []OffsetFate `json:"offsets,omitempty"`
	// Values holds decoded keys and values for the offsets listed, when a
	// serde was given.
	Values []DecodedRecord `json:"values,omitempty"`
}

// DecodedRecord is a record's key and value as canonical JSON text, or
// "b64:" and base64 when they could not be decoded.
type DecodedRecord struct {
	Offset    int64  `json:"offset"`
	Key       string `json:"key"`
	Value     string `json:"value"`
	Timestamp int64  `json:"timestamp"`
}

// TopicLedger is `kaudit ledger --format json`'s document.
type TopicLedger struct {
	Topic      string            `json:"topic"`
	Partitions []PartitionLedger `json:"partitions"`
}

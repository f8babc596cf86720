package applog

import (
	"math"
	"regexp"
	"slices"
	"strconv"
	"strings"

	"github.com/kaudit/kaudit/audit"
)

// Kind says what an event is.
type Kind string

// The kinds of events, by the line that makes each (Kafka 3.6; the same
// texts up to 4.0 unless said).
const (
	// OutOfRange: the consumer's fetch position (Offset) was below the log
	// start or above the end: "Fetch position FetchPosition{offset=N, …}
	// is out of range for partition TP, resetting offset"
	// (AbstractFetch.handleOffsetOutOfRange; 3.7+ FetchCollector). Reason
	// is "no reset policy" for the variant that raises it to the app.
	OutOfRange Kind = "offset-out-of-range"
	// OffsetReset: the consumer reset its position to To by its reset
	// policy: "Resetting offset for partition TP to position
	// FetchPosition{offset=N, …}." (SubscriptionState).
	OffsetReset Kind = "offset-reset"
	// SeekReset: the consumer will reset TP by a strategy (Reason:
	// EARLIEST, LATEST): "Seeking to EARLIEST offset of partition TP"
	// (SubscriptionState.requestOffsetReset), or Streams' own reset of a
	// topic: "Setting topic 'T' to consume from earliest offset".
	SeekReset Kind = "seek-reset"
	// SeekCommitted: the consumer resumed TP from its committed offset
	// (Offset): "Setting offset for partition TP to the committed offset
	// FetchPosition{offset=N, …}" (ConsumerCoordinator); "Found no
	// committed offset for partition TP" is NoCommitted.
	SeekCommitted Kind = "seek-committed"
	NoCommitted   Kind = "no-committed-offset"
	// TruncationDetected: the consumer found its position past the
	// leader's log after an unclean election: "Truncation detected for
	// partition TP at offset N".
	TruncationDetected Kind = "truncation-detected"

	// TaskCorrupted: "Detected the states of tasks [0_1] are corrupted…"
	// (StreamThread), "TaskCorruptedException: Tasks [1_3] are corrupted
	// and hence need to be re-initialized", "Some tasks were corrupted when
	// trying to commit offsets", or a restore consumer's position out of
	// range ("…marking the corresponding tasks as corrupted").
	TaskCorrupted Kind = "task-corrupted"
	// FlushFailed: "Failed to flush cache of store S" or "Failed to flush
	// state store S" (ProcessorStateManager).
	FlushFailed Kind = "flush-failed"
	// SendError: "Error encountered sending record to topic T for task
	// 1_3 due to:" (RecordCollectorImpl); what followed is an event of its
	// own (BufferExhausted, Fenced…) on the entry's next lines.
	SendError Kind = "send-error"
	// BufferExhausted: org.apache.kafka.clients.producer.
	// BufferExhaustedException ("Failed to allocate N bytes within the
	// configured max blocking time …").
	BufferExhausted Kind = "buffer-exhausted"
	// Fenced: the producer or thread was fenced: "Detected that the thread
	// is being fenced", "Producer got fenced", ProducerFencedException,
	// InvalidProducerEpochException.
	Fenced Kind = "fenced"
	// TaskMigrated: TaskMigratedException, "got migrated to another thread
	// already", "Consumer committing offsets failed, indicating the
	// corresponding thread is no longer part of the group".
	TaskMigrated Kind = "task-migrated"
	// Restored: "Finished restoring changelog TP to store S with a total
	// number of N records" (StoreChangelogReader): Count records.
	Restored Kind = "restored"
	// StateTransition: "State transition from A to B" (KafkaStreams,
	// StreamThread): Reason "A -> B".
	StateTransition Kind = "state-transition"

	// LogStartIncremented: a broker moved TP's log start to Offset:
	// "[UnifiedLog partition=TP, dir=D] Incremented log start offset to N
	// due to REASON" (UnifiedLog.maybeIncrementLogStartOffset); Reason is
	// "segment deletion" (retention), "client delete records request"
	// (DeleteRecords: Streams' repartition purge, or by hand), "leader
	// offset increment" (a follower), "snapshot generated".
	LogStartIncremented Kind = "log-start-incremented"
	// SegmentDeleted: "Deleting segment LogSegment(baseOffset=N, …) due to
	// log retention time …ms breach …" or "… retention size … breach",
	// "Deleting segments due to log start offset N breach": Offset is the
	// segment's base offset (or the log start), Reason the breach.
	SegmentDeleted Kind = "segment-deleted"
	// Truncated: a replica truncated TP to Offset: "Truncating partition
	// TP with TruncationState(offset=N, …) due to …" (AbstractFetcherThread)
	// or "[UnifiedLog partition=TP, …] Truncating to offset N".
	Truncated Kind = "truncated"
	// Cleaned: the log cleaner cleaned TP: "Cleaner 0: Cleaning log TP
	// (cleaning prior to …)" or "cleaned log TP (dirty section = [A, B])"
	// (Offset A, To B).
	Cleaned Kind = "cleaned"
	// TxnRolledBack: "Completed rollback of ongoing transaction for
	// transactionalId ID due to timeout" (TransactionCoordinator): Reason
	// is the id.
	TxnRolledBack Kind = "txn-rolled-back"
	// UncleanElection: "… using an unclean election" (KRaft controller).
	UncleanElection Kind = "unclean-election"
	// ExpiredWindow: a windowed aggregation skipped a record for a window
	// that had closed: "Skipping record for expired window. topic=[T]
	// partition=[P] offset=[O] timestamp=[TS] window=[S,E)
	// expiration=[X] streamTime=[ST]"
	// (AbstractKStreamTimeWindowAggregateProcessor, WARN). TP and Offset
	// are the record's, Reason the window, To the stream time and Count
	// the grace it implies (expiration = stream time − grace).
	ExpiredWindow Kind = "expired-window"
)

// Kinds lists every kind, in the order of the constants.
var Kinds = []Kind{OutOfRange, OffsetReset, SeekReset, SeekCommitted, NoCommitted, TruncationDetected,
	TaskCorrupted, FlushFailed, SendError, BufferExhausted, Fenced, TaskMigrated, Restored, StateTransition,
	LogStartIncremented, SegmentDeleted, Truncated, Cleaned, TxnRolledBack, UncleanElection, ExpiredWindow}

// tpRe matches a topic-partition as Kafka prints a TopicPartition:
// topic, a dash, the partition number.
const tpRe = `([A-Za-z0-9._-]+-[0-9]+)`

// pattern is one line pattern: a cheap substring that must be there, then
// a regular expression whose groups fill the event.
type pattern struct {
	kind   Kind
	needle string
	re     *regexp.Regexp
	fill   func(e *Event, m []string)
}

func mustRe(s string) *regexp.Regexp { return regexp.MustCompile(s) }

// patterns are tried in order on each line; a line makes at most one
// event of each kind.
var patterns = []pattern{
	{OutOfRange, "is out of range for partition", mustRe(`Fetch position FetchPosition\{offset=(-?\d+)[^}]*\}\S* is out of range for partition ` + tpRe + `(, raising error)?`),
		func(e *Event, m []string) {
			e.Offset = num(m[1])
			e.TP = parseTP(m[2])
			if m[3] != "" {
				e.Reason = "no reset policy"
			}
		}},
	{OffsetReset, "Resetting offset for partition", mustRe(`Resetting offset for partition ` + tpRe + ` to position FetchPosition\{offset=(-?\d+)`),
		func(e *Event, m []string) { e.TP, e.To = parseTP(m[1]), num(m[2]) }},
	{SeekReset, "offset of partition", mustRe(`Seeking to (\w+) offset of partition ` + tpRe),
		func(e *Event, m []string) { e.Reason, e.TP = m[1], parseTP(m[2]) }},
	{SeekReset, "to consume from", mustRe(`Setting topic '([^']+)' to consume from (\w+) offset`),
		func(e *Event, m []string) {
			e.TP, e.Reason = audit.TopicPartition{Topic: m[1], Partition: -1}, strings.ToUpper(m[2])
		}},
	{SeekCommitted, "to the committed offset", mustRe(`Setting offset for partition ` + tpRe + ` to the committed offset FetchPosition\{offset=(-?\d+)`),
		func(e *Event, m []string) { e.TP, e.Offset = parseTP(m[1]), num(m[2]) }},
	{NoCommitted, "Found no committed offset", mustRe(`Found no committed offset for partition ` + tpRe),
		func(e *Event, m []string) { e.TP = parseTP(m[1]) }},
	{TruncationDetected, "Truncation detected for partition", mustRe(`Truncation detected for partition ` + tpRe + ` at offset (?:FetchPosition\{offset=)?(-?\d+)`),
		func(e *Event, m []string) { e.TP, e.Offset = parseTP(m[1]), num(m[2]) }},

	{TaskCorrupted, "corrupted", mustRe(`(?:Detected the states of tasks \{?\[?([0-9_, ]*)|Tasks \[([0-9_, ]*)\] are corrupted|Some tasks were corrupted when trying to commit offsets|marking the corresponding tasks as corrupted)`),
		func(e *Event, m []string) {
			if t := strings.TrimSpace(m[1] + m[2]); t != "" && e.Task == "" {
				e.Task = t
			}
		}},
	{FlushFailed, "Failed to flush", mustRe(`Failed to flush (?:cache of store|state store) ([^\s:]+)`),
		func(e *Event, m []string) { e.Store = m[1] }},
	{SendError, "Error encountered sending record to topic", mustRe(`Error encountered sending record to topic (\S+) for task (\S+) due to`),
		func(e *Event, m []string) { e.TP, e.Task = audit.TopicPartition{Topic: m[1], Partition: -1}, m[2] }},
	{BufferExhausted, "BufferExhaustedException", mustRe(`BufferExhaustedException(?:: Failed to allocate (\d+) bytes)?`),
		func(e *Event, m []string) {
			if m[1] != "" {
				e.Count = num(m[1])
			}
		}},
	{Fenced, "enced", mustRe(`(Detected that the thread is being fenced|Producer got fenced[^.;]*|ProducerFencedException|since the producer is fenced)`),
		func(e *Event, m []string) { e.Reason = m[1] }},
	{Fenced, "InvalidProducerEpoch", mustRe(`(InvalidProducerEpochException)`), func(e *Event, m []string) { e.Reason = m[1] }},
	{TaskMigrated, "igrat", mustRe(`(TaskMigratedException|got migrated to another thread already|thread is no longer part of the group)`),
		func(e *Event, m []string) { e.Reason = m[1] }},
	{Restored, "Finished restoring changelog", mustRe(`Finished restoring changelog ` + tpRe + ` to store (\S+) with a total number of (\d+) records`),
		func(e *Event, m []string) { e.TP, e.Store, e.Count = parseTP(m[1]), m[2], num(m[3]) }},
	{StateTransition, "State transition from", mustRe(`State transition from (\w+) to (\w+)`),
		func(e *Event, m []string) { e.Reason = m[1] + " -> " + m[2] }},

	{LogStartIncremented, "Incremented log start offset", mustRe(`partition=` + tpRe + `[,\]].*Incremented log start offset to (\d+) due to (.+?)\s*$`),
		func(e *Event, m []string) { e.TP, e.Offset, e.Reason = parseTP(m[1]), num(m[2]), trimLogger(m[3]) }},
	{SegmentDeleted, "Deleting segment", mustRe(`partition=` + tpRe + `[,\]].*Deleting segment LogSegment\(baseOffset=(\d+),.*?\) due to (.+?)\s*$`),
		func(e *Event, m []string) { e.TP, e.Offset, e.Reason = parseTP(m[1]), num(m[2]), trimLogger(m[3]) }},
	{SegmentDeleted, "Deleting segments due to", mustRe(`partition=` + tpRe + `[,\]].*Deleting segments due to ((?:local )?log start offset (\d+) breach)`),
		func(e *Event, m []string) { e.TP, e.Reason, e.Offset = parseTP(m[1]), m[2], num(m[3]) }},
	{Truncated, "Truncating partition", mustRe(`Truncating partition ` + tpRe + ` with TruncationState\(offset=(\d+)`),
		func(e *Event, m []string) { e.TP, e.Offset = parseTP(m[1]), num(m[2]) }},
	{Truncated, "Truncating to offset", mustRe(`partition=` + tpRe + `[,\]].*Truncating to offset (\d+)`),
		func(e *Event, m []string) { e.TP, e.Offset = parseTP(m[1]), num(m[2]) }},
	{Cleaned, "Cleaning log", mustRe(`Cleaning log ` + tpRe + ` \(cleaning prior to`),
		func(e *Event, m []string) { e.TP = parseTP(m[1]) }},
	{Cleaned, "cleaned log", mustRe(`cleaned log ` + tpRe + ` \(dirty section = \[(\d+), (\d+)\]\)`),
		func(e *Event, m []string) { e.TP, e.Offset, e.To = parseTP(m[1]), num(m[2]), num(m[3]) }},
	{TxnRolledBack, "Completed rollback of ongoing transaction", mustRe(`Completed rollback of ongoing transaction for transactionalId (\S+) due to timeout`),
		func(e *Event, m []string) { e.Reason = m[1] }},
	{ExpiredWindow, "Skipping record for expired window", mustRe(`Skipping record for expired window\. topic=\[([^\]]*)\] partition=\[(\d+)\] offset=\[(\d+)\] timestamp=\[(-?\d+)\] window=(\[-?\d+,-?\d+\)) expiration=\[(-?\d+)\] streamTime=\[(-?\d+)\]`),
		func(e *Event, m []string) {
			part := num(m[2])
			if part > math.MaxInt32 {
				part = -1 // not a partition: the topic alone
			}
			e.TP = audit.TopicPartition{Topic: m[1], Partition: int32(part)}
			e.Offset, e.Reason, e.To = num(m[3]), m[5], num(m[7])
			e.Count = e.To - num(m[6])
		}},
	{UncleanElection, "unclean election", mustRe(`partition (\d+) to (\S+) using an unclean election`),
		func(e *Event, m []string) { e.Reason = "partition " + m[1] + " to " + m[2] }},
}

// needles[i] is patterns[i].needle's bytes, bits[i] its kind's bit (its
// index in Kinds), minNeedle the length of the shortest needle: a shorter
// line holds no event.
var (
	needles   [][]byte
	bits      []uint
	minNeedle = math.MaxInt
)

func init() {
	for _, pt := range patterns {
		needles = append(needles, []byte(pt.needle))
		bits = append(bits, uint(slices.Index(Kinds, pt.kind)))
		minNeedle = min(minNeedle, len(pt.needle))
	}
}

// loggerRe is the " (kafka.log.UnifiedLog)" Kafka's broker layout
// ("[%d] %p %m (%c)%n") puts after the message.
var loggerRe = regexp.MustCompile(`\s+\([A-Za-z_][A-Za-z0-9_.$]*\)$`)

func trimLogger(s string) string { return strings.TrimSpace(loggerRe.ReplaceAllString(s, "")) }

// taskRe finds a task id in an entry's head ("stream-task [1_3]",
// "task [0_1]").
var taskRe = regexp.MustCompile(`task \[(\d+_\d+)\]`)

// parseTP reads "topic-3" as Kafka prints a TopicPartition.
func parseTP(s string) audit.TopicPartition {
	i := strings.LastIndexByte(s, '-')
	if i <= 0 {
		return audit.TopicPartition{Topic: s, Partition: -1}
	}
	p, err := strconv.ParseInt(s[i+1:], 10, 32)
	if err != nil {
		return audit.TopicPartition{Topic: s, Partition: -1}
	}
	return audit.TopicPartition{Topic: s[:i], Partition: int32(p)}
}

func num(s string) int64 {
	n, err := strconv.ParseInt(s, 10, 64)
	if err != nil {
		return -1
	}
	return n
}

// Package offsetslog decodes the group coordinator's log, __consumer_offsets,
// for every source of evidence alike: its records (Parse: offset commits,
// group metadata, the member keys of KIP-848 groups), the partition that
// holds a group (Partition, Kafka's hash of the group id), and a group's
// replay (Replay): its committed offsets as the coordinator loads them and,
// when asked, its whole commit history (audit.CommitHistory) with the
// commit time of each commit, the group's generations, the holes
// compaction left and the offsets that could not be read (Unread: a batch
// failing its CRC and what follows it, a record no decoder reads), which
// are damage, never taken for compaction's holes.
//
// Read replays a group's partition from any audit.RecordSource: the live
// cluster (audit/kafka, a plain read_uncommitted fetch), a snapshot
// (audit/snapshot, which captures that partition raw) and broker log dirs
// (audit/segment, whose GroupLog is this replay too). There is no other
// decoder of __consumer_offsets in kaudit.
package offsetslog

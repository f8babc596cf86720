// Package segment reads Kafka broker log dirs offline: the .log segment files
// (v2 record batches, any compression), their .index, .timeindex and
// .txnindex files, producer .snapshot files, leader-epoch-checkpoint,
// partition.metadata and the log dir's offset checkpoints, and the internal
// topics that hold what a live cluster answers from its coordinators and
// controller: __consumer_offsets (groups.go: committed offsets and the
// commit history, replayed as the group coordinator loads them by
// audit/offsetslog), __transaction_state (txnlog.go) and
// the KRaft metadata log __cluster_metadata (metadata.go: topics, layout and
// configs, from its latest snapshot then the log).
//
// The main types are Dir (one or several brokers' log dirs, served as an
// audit.Source and an audit.Clock, with Divergence comparing the replicas of
// a partition) and FileError (a decoding error naming the file and the byte
// offset). DecodeBatch and AppendBatch are the batch codec the snapshot
// writer shares. Nothing here writes to, locks or modifies a log dir.
package segment

// Package segment reads Kafka broker log dirs offline: the .log segment files
// (v2 record batches, any compression), their .index, .timeindex and
// .txnindex files, producer .snapshot files, leader-epoch-checkpoint,
// partition.metadata and the log dir's offset checkpoints.
//
// The main types are Dir (one or several brokers' log dirs, served as an
// audit.Source, with Divergence comparing the replicas of a partition) and
// FileError (a decoding error naming the file and the byte offset). DecodeBatch
// and AppendBatch are the batch codec the snapshot writer shares.
package segment

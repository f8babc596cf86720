// Package statedir reads a Kafka Streams state directory as evidence:
// <state.dir>/<application.id>/ with its kafka-streams-process-metadata and
// one directory per task (<subtopology>_<partition>) holding a .checkpoint
// file and the stores under rocksdb/.
//
// The main types are State (what Read found) and Task (one task directory).
// Check compares the checkpoints with the changelogs' offsets and returns
// findings: checkpoint-ahead when a checkpoint claims offsets the changelog
// does not hold, unclean-shutdown when a task has stores but no checkpoint.
package statedir

// Package snapshot writes and reads offline evidence bundles (kaudit
// capture): a directory in Kafka's own log-dir layout, <topic>-<partition>/
// <base>.log with the batches as fetched (control batches included), plus
// manifest.json holding everything else an audit reads (offsets, group
// offsets, topic configs, transactions, producers, topology, schemas) and
// the sha256 of every file. Since format 2 it also holds the group's
// partition of __consumer_offsets, raw (Manifest.CommitLog), from which
// Snapshot.CommitHistory replays the group's commit history.
//
// The main types are Manifest (the bundle's description, also its resume
// state), Snapshot (a bundle opened as an audit.Source and audit.Clock,
// reading records through audit/segment) and CaptureOptions. Capture writes
// a bundle, Open reads one, Baseline compares an earlier capture with a
// later source.
package snapshot

// Package audit holds kaudit's domain types and the seams every source of
// evidence implements.
//
// The main types are Record (one offset of a partition, with its batch
// header), Finding (one vanished record or one anomaly, with its stage, cause
// and evidence) and Report (the verdict of a run). Source is the seam served
// alike by a live cluster (audit/kafka), a captured snapshot
// (audit/snapshot), broker log dirs (audit/segment) and memory in tests
// (internal/fakeapp), so everything above it runs the same on all of them.
// Each asserts `var _ audit.Source = …`, and each passes the conformance
// suite in audit/sourcetest.
//
// # Capabilities
//
// Source is what every source serves; a source that cannot provide one
// piece of it returns an error wrapping ErrNotSupported, and the checks
// that need it are then incomplete. Optional evidence is one more
// interface, declared here and nowhere else; callers ask for it through
// a type assertion on the interface, or the helper beside it:
//
//	interface        evidence                                   kafka  snapshot  segment  memory
//	Source           records, offsets, topics and configs,       yes    yes       yes      yes
//	                 group offsets, transactions, producers
//	Clock            the time the evidence describes              -      capture   last     yes
//	                 (SourceClock: else now)                            time      write
//	CommittedReader  the broker's read_committed view             yes    -         yes      -
//	IndexedReader    that view from the same read (LSO and        yes    -         yes      -
//	                 aborted-transaction index)
//	SampleReader     a partition's first records, fetched in      yes    -         -        -
//	                 small reads that grow (a sample's read)
//	Bounded          partitions held only from a later offset     -      yes       -        -
//	CommitHistoryReader
//	                 the group's commits, each as it took         yes    format 2  yes      -
//	                 effect (CommitHistoryOf)                            bundles
//	TopologyHolder   the app's describe() text (TopologyOf)       -      yes       -        -
//	SchemaHolder     the schemas the records were written with    -      yes       _schemas -
//	                 (SchemasOf)                                                   topic
//	Fingerprinter    the evidence named, alike for every reader   yes    yes       -        -
//	                 (Fingerprint: else the topics' offsets)
//
// What opening a source finds wrong with the evidence (a file whose hash
// does not match, a torn tail, replicas that diverge) is findings the
// opener hands on with the source (audit/diff.Evidence), not a method of
// the seam. Evidence of a partition that cannot be read is always the one
// finding UnreadablePartition builds.
//
// The contract of findings (the vocabulary of stages and causes, the cut,
// where a finding points) is docs/how-it-decides.md and the findings table
// of README.md; Causes and Stages here are that vocabulary, closed, and
// CauseDoc (causes.go) the one text of each cause, which that table must
// match.
//
// This package imports nothing else of kaudit.
package audit

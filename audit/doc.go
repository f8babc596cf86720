// Package audit holds kaudit's domain types and the seams every source of
// evidence implements.
//
// The main types are Record (one offset of a partition, with its batch
// header), Finding (one vanished record or one anomaly, with its stage, cause
// and evidence) and Report (the verdict of a run). Source is the seam served
// alike by a live cluster (audit/kafka), a captured snapshot
// (audit/snapshot) and broker log dirs (audit/segment), so everything above
// it runs the same on all three.
//
// This package imports nothing else of kaudit.
package audit

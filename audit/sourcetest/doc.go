// Package sourcetest is the conformance suite every audit.RecordSource
// must pass: RunSourceTests, run over the fixture Fixture returns. The
// segment reader (broker log dirs), the snapshot reader, the live source
// and the in-memory source of internal/fakeapp all run it; see audit's
// package doc for the seam and its optional evidence.
package sourcetest
